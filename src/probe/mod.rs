//! One attempt: walk the chain of documents a real client walks — an issuer's metadata (and with
//! `--check-jwks` its keys), or a protected resource's metadata and every authorization server it
//! names — judge each, and say in one typed failure class what stood in the way. The classes are
//! what an operator greps for, so their names are part of the interface.
//!
//! The attempt runs on a thread of its own and the caller waits for it at most its budget. Linux
//! fires socket timeouts late (up to about 250 ms past a 2-16 s timeout), which at the deadline
//! meant the last attempt of a frozen provider was never reported at all. So the waiting side
//! decides when an attempt has timed out, abandons the fetch (it ends by itself soon after, on
//! its own socket timeout), and names the link and the stage it hung in.

mod failure;
mod issuer;
mod mcp_endpoint;
mod resource_chain;

pub(crate) use failure::{Cause, Failure, FailureClass, Link, LocalFile};
use failure::{link_failure, moves_on, redirect_hint, refused_address, skipped_by_proxy, usable_body};

use crate::config::{Checks, Target};
use crate::net::fetch_error::FetchError;
use crate::net::http::HttpClient;
use crate::net::redirect::{RedirectKind, Redirects, RefusedRedirect, Request};
use crate::net::response::Fetched;
use crate::progress::{Progress, Stage};
use crate::rules::authorization_server::MetadataKind;
use crate::rules::authorization_server::{self, Document};
use crate::token;
use crate::url;
use std::cell::Cell;

use std::net::IpAddr;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An authorization server that passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServerReady {
    pub(crate) document: Document,
    /// Where the document was finally served from.
    pub(crate) url: String,
    /// Keys with a `kty` in the JWK Set, when `--check-jwks` fetched it.
    pub(crate) jwks_keys: Option<usize>,
}

/// A passing attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ready {
    /// Where a protected resource's metadata was served from (a `--resource` target).
    pub(crate) resource_metadata: Option<String>,
    /// The issuer (an `--issuer` target) or every server the resource lists, in its order.
    pub(crate) servers: Vec<ServerReady>,
    /// Warnings about the resource's own links (plain http accepted: [`url::Transport`]); each
    /// server's are in its document.
    pub(crate) warnings: Vec<String>,
    /// Every name the attempt resolved, with its addresses.
    pub(crate) addresses: Vec<(String, Vec<IpAddr>)>,
}

/// What the thread doing an attempt shares with the caller waiting for it: the link it is at
/// (with the words that name it, such as the authorization server, and its URL) and the fetch's
/// stage.
#[derive(Debug, Default)]
struct Track {
    progress: Arc<Progress>,
    at: Mutex<(Link, String, String)>,
}

impl Track {
    fn enter(&self, link: Link, context: &str, to: &str) {
        if let Ok(mut at) = self.at.lock() {
            *at = (link, context.to_string(), to.to_string());
        }
    }

    /// The failure of an attempt abandoned after `budget`, in the words a fetch that timed out
    /// by itself would have used.
    fn abandoned(&self, client: &HttpClient, budget: Duration) -> Failure {
        let (stage, host) = self.progress.at();
        let (link, context, to) = self.at.lock().map(|at| at.clone()).unwrap_or_default();
        let timed_out = match stage {
            Stage::ReadingTokenFile | Stage::ReadingHeaderFile => {
                FetchError::FileTimedOut { stage, path: host.clone(), after: budget }
            }
            _ => FetchError::TimedOut { stage, host: host.clone(), after: budget },
        };
        link_failure(link, &context, &to, timed_out, (stage, host)).with(|f| f.proxy = client.proxy_for(&to))
    }
}

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

/// The origins the bearer token and every `--header-file` may go to when waiting for `issuer`:
/// where its metadata is fetched (the `--discovery-url` if given, else the issuer's own
/// well-known URLs) and the `--jwks-url`, which the user named. Never a `jwks_uri` the document names elsewhere, never a
/// server a resource lists, never a redirect's target: a token for the API server must not
/// reach whoever else a document points at.
fn token_origins(checks: &Checks, issuer: &str, discovery_url: Option<&str>) -> Vec<String> {
    let candidates = authorization_server::candidates(issuer, checks.rules.kind, discovery_url);
    let urls = candidates.iter().map(|c| c.url.as_str()).chain(checks.jwks_url.as_deref());
    urls.filter_map(|u| url::split(u).ok().map(|p| p.origin())).collect()
}

/// Whether a request to `to` may carry the token: its origin (scheme, host, port) is one of
/// `origins`, exactly.
fn carries_token(origins: &[String], to: &str) -> bool {
    url::split(to).is_ok_and(|p| origins.contains(&p.origin()))
}

/// What the links of one attempt share: the client, the checks, the token and where it may go,
/// and when the attempt's budget runs out.
struct Attempt<'a> {
    client: &'a HttpClient,
    checks: &'a Checks,
    /// Whether a link the gate takes from a server may be plain http.
    transport: url::Transport,
    track: &'a Track,
    token: Option<String>,
    /// The `--header-file` headers, names and values; they go where the token goes.
    headers: Vec<(String, String)>,
    token_origins: Vec<String>,
    /// Discovery as MCP clients do it (`auto`, `--resource`): their header on metadata requests.
    mcp: bool,
    deadline: Instant,
    budget: Duration,
    /// The longest `Retry-After` any fetch of the attempt was answered with (a 429 or 503), also
    /// from a URL the attempt moved past or a link whose failure is reported in other words: a
    /// failed attempt asks for it, whichever fetch it came from.
    asked: Cell<Option<Duration>>,
}

/// The protocol revision MCP clients announce on metadata requests: the TypeScript SDK 1.32.2
/// sends `MCP-Protocol-Version: LATEST_PROTOCOL_VERSION` ('2025-11-25', `types.js`) from
/// `tryMetadataDiscovery` and `discoverAuthorizationServerMetadata` (`client/auth.js`).
pub(crate) const MCP_PROTOCOL_VERSION: &str = "2025-11-25";

/// A candidate URL's answer under `auto` or `--resource`: a response, or a redirect the gate
/// does not follow, which MCP clients pass over (see [`Attempt::fetch_candidate`]).
pub(crate) enum Answer {
    Got(Fetched),
    /// Why the URL was passed over: a [`FetchError::Redirect`].
    Skipped(FetchError),
}

impl Attempt<'_> {
    /// The request for `link` at `to`. An MCP client's discovery (not the keys, which a Go
    /// resource server fetches) announces its protocol revision and follows redirects as the SDK
    /// does, within the origin; everything else as Go's `http.Client`. Every header the user
    /// gave (the token, each `--header-file`) is a secret: it goes only to the token's origins,
    /// and never past a redirect to another origin ([`Request::secrets`]).
    fn request_for(&self, link: Link, to: &str) -> Request<'_> {
        let mcp = self.mcp && link != Link::Jwks;
        let mut request = Request {
            headers: Vec::new(),
            secrets: Vec::new(),
            redirects: if mcp { Redirects::SameOrigin } else { Redirects::Go },
        };
        if mcp {
            request.headers.push(("mcp-protocol-version", MCP_PROTOCOL_VERSION.to_string()));
        }
        if carries_token(&self.token_origins, to) {
            if let Some(t) = &self.token {
                request.secrets.push(("authorization", format!("Bearer {t}")));
            }
            request.secrets.extend(self.headers.iter().map(|(name, value)| (name.as_str(), value.clone())));
        }
        request
    }

    fn get(&self, link: Link, context: &str, to: &str) -> Result<Fetched, FetchError> {
        self.track.enter(link, context, to);
        let left = self.deadline.saturating_duration_since(Instant::now());
        let fetched = self.client.get(to, left, &self.request_for(link, to), &self.track.progress);
        if let Ok(f) = &fetched {
            self.note_retry_after(f);
        }
        fetched.map(|mut f| {
            // Carried there, unless a redirect left the origins (and then the secrets stay behind).
            let carried = carries_token(&self.token_origins, to) && carries_token(&self.token_origins, &f.url);
            f.credentials = match (self.token.is_some(), !self.headers.is_empty()) {
                _ if !carried => None,
                (true, true) => Some("--token-file and --header-file"),
                (true, false) => Some("--token-file"),
                (false, true) => Some("--header-file"),
                (false, false) => None,
            };
            self.hide_token(f)
        })
    }

    /// Fetches one link of the chain within what is left of the budget; a transport failure is
    /// classed by the link, and a timeout names the attempt's budget.
    fn fetch(&self, link: Link, context: &str, to: &str) -> Result<Fetched, Failure> {
        let fetched = self.get(link, context, to);
        self.refuse_private(link, context)?;
        fetched.map_err(|e| self.failure(link, context, to, e))
    }

    /// Like [`Attempt::fetch`], for one of several URLs in the MCP clients' order: a redirect
    /// that is not followed is passed over, as the TypeScript SDK 1.32.2 does (`fetchWithinOrigin`
    /// in `shared/transport.js` returns a cross-origin or downgrading redirect unfollowed, and
    /// `discoverAuthorizationServerMetadata` goes on for any status below 500, "or a redirect that
    /// was not followed"; `shouldAttemptFallback` tries the root after the path form likewise).
    fn fetch_candidate(&self, link: Link, context: &str, to: &str) -> Result<Answer, Failure> {
        let fetched = self.get(link, context, to);
        self.refuse_private(link, context)?;
        match fetched {
            Ok(fetched) => Ok(Answer::Got(fetched)),
            Err(e @ FetchError::Redirect(_)) => Ok(Answer::Skipped(e)),
            Err(e) => Err(self.failure(link, context, to, e)),
        }
    }

    /// With `--refuse-private-addresses`, an address an SSRF-guarded client refuses fails the
    /// link, whatever the fetch gave.
    fn refuse_private(&self, link: Link, context: &str) -> Result<(), Failure> {
        if self.checks.refuse_private_addresses
            && let Some(refused) = refused_address(&self.track.progress.resolved())
        {
            // The guarded client's own refusal (ToolHive's): final.
            let own = self.checks.rules.client == crate::rules::client::Client::ToolHive;
            return Err(refused.at(link, context).with(|f| f.conclusive = own));
        }
        Ok(())
    }

    /// The failure of fetching `to`, the link `link` of the server `context` names: with the
    /// proxy it went through, and what to do about a refused cross-origin redirect or a
    /// certificate oauth2-proxy would not check (conclusive: waiting cannot help).
    fn failure(&self, link: Link, context: &str, to: &str, e: FetchError) -> Failure {
        let e = match e {
            FetchError::TimedOut { stage, host, .. } => FetchError::TimedOut { stage, host, after: self.budget },
            other => other,
        };
        let rejected = matches!(e, FetchError::Tls { error: rustls::Error::InvalidCertificate(_), .. })
            && self.checks.proxy_skips_verify;
        let cross_origin = matches!(&e, FetchError::Redirect(RefusedRedirect { kind: RedirectKind::CrossOrigin, .. }));
        let redirect = redirect_hint(link, context.is_empty() && self.checks.one_issuer).filter(|_| cross_origin);
        let failure = link_failure(link, context, to, e, self.track.progress.at());
        failure
            .with(|f| (f.proxy, f.conclusive) = (self.client.proxy_for(to), rejected))
            .hint(redirect.map(Into::into))
            .hint(rejected.then(|| skipped_by_proxy().into()))
    }
}

impl Attempt<'_> {
    fn note_retry_after(&self, fetched: &Fetched) {
        let asked = Some(fetched.status)
            .filter(|s| matches!(s, 429 | 503))
            .and(fetched.retry_after.as_deref())
            .and_then(|v| crate::net::response::retry_after(v, std::time::SystemTime::now()));
        if asked > self.asked.get() {
            self.asked.set(asked);
        }
    }

    /// The attempt's failure, asking for the longest `Retry-After` any of its fetches was given.
    fn asking(&self, mut failure: Failure) -> Failure {
        failure.retry_after = failure.retry_after.max(self.asked.get());
        failure
    }

    /// The token and the header files' values taken out of a body a server sent back, before any
    /// excerpt is cut from it: an error page's always, a 200's only for a secret long enough (16
    /// bytes; every real bearer token is) not to be part of a valid document by chance. Every
    /// output is scrubbed again ([`token::scrub`]), which covers the headers and whole values.
    fn hide_token(&self, mut fetched: Fetched) -> Fetched {
        let token = self.token.iter().map(|t| (t.as_str(), token::TOKEN_REDACTED));
        let values = self.headers.iter().map(|(_, v)| (v.as_str(), token::HEADER_REDACTED));
        for (secret, replacement) in token.chain(values) {
            if fetched.status != 200 || secret.len() >= 16 {
                token::hide_in_body(&mut fetched.body, secret, replacement);
            }
        }
        fetched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::authorization_server::Rules;

    fn checks(kind: MetadataKind, jwks_url: Option<&str>) -> Checks {
        Checks {
            rules: Rules { kind, strict: false, skip_issuer_check: false, client: Default::default() },
            check_jwks: jwks_url.is_some(),
            jwks_url: jwks_url.map(str::to_string),
            token_file: None,
            header_files: Vec::new(),
            proxy_skips_verify: false,
            refuse_legacy_auth: false,
            one_issuer: true,
            refuse_private_addresses: false,
        }
    }

    #[test]
    fn the_token_goes_to_the_issuers_own_origin_only() {
        let origins = token_origins(&checks(MetadataKind::Oidc, None), "https://kubernetes.default.svc", None);
        assert!(carries_token(&origins, "https://kubernetes.default.svc/.well-known/openid-configuration"));
        assert!(carries_token(&origins, "https://kubernetes.default.svc/openid/v1/jwks"), "the same origin's keys");
        assert!(carries_token(&origins, "https://kubernetes.default.svc:443/x"), "the default port is the same origin");
        for elsewhere in [
            "http://kubernetes.default.svc/openid/v1/jwks",
            "https://kubernetes.default.svc:8443/openid/v1/jwks",
            "https://kubernetes.default.svc.evil.example/openid/v1/jwks",
            "https://evil.example/kubernetes.default.svc",
            "https://user@kubernetes.default.svc.evil.example/",
            "not a url",
        ] {
            assert!(!carries_token(&origins, elsewhere), "{elsewhere}");
        }
    }

    #[test]
    fn a_discovery_url_moves_the_token_there_and_a_jwks_url_adds_its_origin() {
        let at = "https://kc.auth.svc:8443/realms/main/.well-known/openid-configuration";
        let origins = token_origins(&checks(MetadataKind::Oidc, None), "https://sso.example/realms/main", Some(at));
        assert_eq!(origins, ["https://kc.auth.svc:8443"], "origins carry their port");
        assert!(!carries_token(&origins, "https://sso.example/realms/main/protocol/openid-connect/certs"));
        let keys = "https://kubernetes.default.svc/openid/v1/jwks";
        let origins = token_origins(&checks(MetadataKind::Oidc, Some(keys)), "https://issuer.example", None);
        assert_eq!(origins, ["https://issuer.example:443", "https://kubernetes.default.svc:443"]);
    }

    #[test]
    fn auto_discovery_keeps_the_token_on_the_issuers_origin() {
        let origins = token_origins(&checks(MetadataKind::Auto, None), "https://sso.example/tenant", None);
        assert!(origins.iter().all(|o| o == "https://sso.example:443"), "{origins:?}");
    }
}
