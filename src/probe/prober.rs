//! Attempts for one target, each on a thread of its own that the caller waits for at most its
//! budget, and the target's last word while they run.

use super::attempt::{Attempt, Track, token_origins};
use super::failure::{Cause, Failure, FailureClass, LocalFile};
use super::ready::Ready;
use super::{issuer, resource_chain};
use crate::config::{Checks, Target};
use crate::net::http::HttpClient;
use crate::progress::{Progress, Stage};
use crate::rules::authorization_server::MetadataKind;
use crate::token;
use crate::url;
use std::cell::Cell;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Attempts for one target.
#[derive(Clone)]
pub(crate) struct Prober {
    client: Arc<HttpClient>,
    target: Arc<Target>,
    checks: Arc<Checks>,
    /// The attempt under way, if any, and the last that ended: shared by the clones, so that a
    /// wait ended by another target or a signal can say where this one had got to.
    latest: Arc<Mutex<Latest>>,
}

/// An attempt under way: when it started, and where it is.
type Started = (Instant, Arc<Track>);

/// The attempt under way, or how many have ended and how the last one failed, changed under
/// one lock: an attempt that ends just as the wait does (every attempt of a frozen provider ends
/// at the deadline) is then either still under way or ended with its failure, never neither
/// while its report is on its way to the caller.
#[derive(Default)]
struct Latest {
    running: Option<Started>,
    ended: u32,
    last_failure: Option<Failure>,
}

/// A target's last word, read at once: where the attempt under way had got to or, between
/// attempts, how many attempts ended and how the last one failed (`None`: it passed).
#[derive(Debug, Default)]
pub(crate) struct LastWord {
    pub(crate) in_flight: Option<String>,
    pub(crate) attempts: u32,
    pub(crate) last_failure: Option<Failure>,
}

impl Prober {
    pub(crate) fn new(client: Arc<HttpClient>, target: Target, checks: Arc<Checks>) -> Prober {
        Prober { client, target: Arc::new(target), checks, latest: Arc::default() }
    }

    /// The target's last word: where the attempt under way has got to (the link with the server
    /// it belongs to, the fetch's stage and host, how long it has run), or the last that ended.
    pub(crate) fn last_word(&self) -> LastWord {
        let Ok(latest) = self.latest.lock() else { return LastWord::default() };
        let in_flight = latest.running.as_ref().map(|(started, track)| {
            let (stage, host) = track.progress.at();
            let (link, context, _) = track.at.lock().map(|at| at.clone()).unwrap_or_default();
            let ran = crate::human::secs(started.elapsed());
            format!("{context}{stage} ({host}), {ran} into it, at the {} link", link.as_str())
        });
        LastWord { in_flight, attempts: latest.ended, last_failure: latest.last_failure.clone() }
    }

    /// [`Prober::attempt`], and how long it took, DNS to the last byte: what `--serve`'s
    /// /metrics reports.
    pub(crate) fn timed_attempt(&self, budget: Duration) -> (Result<Ready, Failure>, Duration) {
        let started = Instant::now();
        let outcome = self.attempt(budget);
        (outcome, started.elapsed())
    }

    /// One attempt, over within `budget` whatever the network does.
    pub(crate) fn attempt(&self, budget: Duration) -> Result<Ready, Failure> {
        let track = Arc::new(Track::default());
        if let Ok(mut latest) = self.latest.lock() {
            latest.running = Some((Instant::now(), track.clone()));
        }
        let outcome = self.attempt_tracked(budget, track);
        if let Ok(mut latest) = self.latest.lock() {
            latest.running = None;
            latest.ended += 1;
            latest.last_failure = outcome.as_ref().err().cloned();
        }
        outcome
    }

    fn attempt_tracked(&self, budget: Duration, track: Arc<Track>) -> Result<Ready, Failure> {
        let (tx, rx) = mpsc::sync_channel(1);
        let (prober, shared) = (self.clone(), track.clone());
        let spawned = std::thread::Builder::new()
            .name("attempt".into())
            .spawn(move || {
                let _ = tx.send(prober.run(budget, &shared));
            })
            .is_ok();
        if !spawned {
            // Out of threads: run here; the socket timeouts still bound it, if less tightly.
            return self.run(budget, &track);
        }
        rx.recv_timeout(budget).unwrap_or_else(|_| Err(track.abandoned(&self.client, budget)))
    }

    fn run(&self, budget: Duration, track: &Track) -> Result<Ready, Failure> {
        let token = match &self.checks.token_file {
            None => None,
            Some(path) => {
                track.progress.enter(Stage::ReadingTokenFile, &path.display().to_string());
                let why = |why| {
                    let cause = Cause::LocalFile { file: LocalFile::Token, path: path.display().to_string() };
                    Failure::of(FailureClass::Token, cause, format!("token file {} {why}", path.display()))
                };
                Some(token::read(path).map_err(why)?)
            }
        };
        let headers = self.read_headers(&track.progress)?;
        track.progress.enter(Stage::Resolving, "");
        let user_urls = match &*self.target {
            Target::Issuer { issuer, discovery_url } => vec![issuer.as_str(), discovery_url.as_deref().unwrap_or("")],
            Target::Resource { resource } => vec![resource.as_str()],
        };
        let mut at = Attempt {
            client: &self.client,
            checks: &self.checks,
            transport: url::Transport::for_user_urls(user_urls),
            track,
            token,
            headers,
            token_origins: Vec::new(),
            mcp: matches!(&*self.target, Target::Resource { .. }) || self.checks.rules.kind == MetadataKind::Auto,
            deadline: Instant::now() + budget,
            budget,
            asked: Cell::new(None),
        };
        let outcome = match &*self.target {
            Target::Issuer { issuer, discovery_url } => {
                at.token_origins = token_origins(&self.checks, issuer, discovery_url.as_deref());
                issuer::discover(&at, issuer, self.checks.rules.kind, discovery_url.as_deref(), "").map(|server| {
                    Ready {
                        resource_metadata: None,
                        servers: vec![server],
                        warnings: Vec::new(),
                        addresses: Vec::new(),
                    }
                })
            }
            Target::Resource { resource } => resource_chain::discover(&at, resource),
        };
        outcome.map(|ready| Ready { addresses: track.progress.resolved(), ..ready }).map_err(|f| at.asking(f))
    }
}

impl Prober {
    /// Every `--header-file`'s name and value, read now: mounted secrets rotate.
    fn read_headers(&self, progress: &Progress) -> Result<Vec<(String, String)>, Failure> {
        let read = |h: &crate::config::HeaderFile| {
            progress.enter(Stage::ReadingHeaderFile, &h.path.display().to_string());
            token::read_header_value(&h.path).map(|value| (h.name.clone(), value)).map_err(|why| {
                let message = format!("header file {} (for {}) {why}", h.path.display(), h.name);
                let cause = Cause::LocalFile { file: LocalFile::Header, path: h.path.display().to_string() };
                Failure::of(FailureClass::HeaderFile, cause, message)
            })
        };
        self.checks.header_files.iter().map(read).collect()
    }
}
