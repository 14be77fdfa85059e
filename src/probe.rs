//! One attempt: fetch the metadata (and with `--check-jwks` the keys), judge it, and say in one
//! typed failure class what stood in the way. The classes are what an operator greps for, so
//! their names are part of the interface.
//!
//! The attempt runs on a thread of its own and the caller waits for it at most its budget. Linux
//! fires socket timeouts late (up to about 250 ms past a 2-16 s timeout), which at the deadline
//! meant the last attempt of a frozen provider was never reported at all. So the waiting side
//! decides when an attempt has timed out, abandons the fetch (it ends by itself soon after, on
//! its own socket timeout), and names the stage it hung in from the fetch's [`Progress`].

use crate::config::Target;
use crate::discovery::{self, Document, DocumentProblem, Rules};
use crate::http::{self, FetchError, Fetched, HttpClient};
use crate::jwks;
use crate::progress::{Progress, Stage};
use crate::token;
use crate::url;
use std::fmt;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Why an attempt did not pass. Ordered as a request progresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FailureClass {
    Dns,
    Connect,
    Timeout,
    Tls,
    HttpStatus,
    Body,
    Json,
    IssuerMismatch,
    MissingField,
    Jwks,
    Token,
}

impl FailureClass {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureClass::Dns => "dns",
            FailureClass::Connect => "connect",
            FailureClass::Timeout => "timeout",
            FailureClass::Tls => "tls",
            FailureClass::HttpStatus => "http-status",
            FailureClass::Body => "body",
            FailureClass::Json => "json",
            FailureClass::IssuerMismatch => "issuer-mismatch",
            FailureClass::MissingField => "missing-field",
            FailureClass::Jwks => "jwks",
            FailureClass::Token => "token",
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) class: FailureClass,
    pub(crate) detail: String,
    /// Retrying soon costs the provider nothing (the connection was refused outright), so the
    /// gate may poll fast and notice readiness within a fraction of a second.
    pub(crate) cheap: bool,
    /// How long the provider asked to be left alone (`Retry-After` on a 429 or 503).
    pub(crate) retry_after: Option<Duration>,
}

impl Failure {
    pub(crate) fn new(class: FailureClass, detail: impl Into<String>) -> Failure {
        Failure { class, detail: detail.into(), cheap: false, retry_after: None }
    }
}

/// A passing attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ready {
    pub(crate) document: Document,
    /// Where the document was finally served from.
    pub(crate) url: String,
    /// Keys with a `kty` in the JWK Set, when `--check-jwks` fetched it.
    pub(crate) jwks_keys: Option<usize>,
}

/// What one attempt checks, beyond fetching.
#[derive(Clone, Debug)]
pub(crate) struct Checks {
    pub(crate) rules: Rules,
    pub(crate) check_jwks: bool,
    /// Re-read on every attempt: projected service-account tokens rotate.
    pub(crate) token_file: Option<PathBuf>,
}

/// Which document an attempt is fetching: a failure while fetching the keys is class `jwks`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Link {
    #[default]
    Document,
    Jwks,
}

/// What the thread doing an attempt shares with the caller waiting for it.
#[derive(Debug, Default)]
struct Track {
    progress: Arc<Progress>,
    link: Mutex<Link>,
}

impl Track {
    fn enter(&self, link: Link) {
        if let Ok(mut l) = self.link.lock() {
            *l = link;
        }
    }

    /// The failure of an attempt abandoned after `budget`, in the words a fetch that timed out
    /// by itself would have used.
    fn abandoned(&self, budget: Duration) -> Failure {
        let (stage, host) = self.progress.at();
        let link = self.link.lock().map(|l| *l).unwrap_or_default();
        link_failure(link, FetchError::TimedOut { stage, host, after: budget })
    }
}

/// Attempts for one issuer.
#[derive(Clone)]
pub(crate) struct Prober {
    client: Arc<HttpClient>,
    target: Arc<Target>,
    checks: Arc<Checks>,
}

impl Prober {
    pub(crate) fn new(client: Arc<HttpClient>, target: Target, checks: Arc<Checks>) -> Prober {
        Prober { client, target: Arc::new(target), checks }
    }

    /// One attempt, over within `budget` whatever the network does.
    pub(crate) fn attempt(&self, budget: Duration) -> Result<Ready, Failure> {
        let track = Arc::new(Track::default());
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
        rx.recv_timeout(budget).unwrap_or_else(|_| Err(track.abandoned(budget)))
    }

    fn run(&self, budget: Duration, track: &Track) -> Result<Ready, Failure> {
        let started = Instant::now();
        let token = match &self.checks.token_file {
            None => None,
            Some(path) => Some(
                token::read(path)
                    .map_err(|why| Failure::new(FailureClass::Token, format!("token file {} {why}", path.display())))?,
            ),
        };
        // The bearer token goes to the configured discovery origin only: never to a JWKS host
        // elsewhere (redirects never leave the origin either).
        let discovery_url = discovery::metadata_url(&self.target, self.checks.rules.kind);
        let discovery_origin = url::split(&discovery_url).map(|p| p.origin()).ok();
        let headers_for = |to: &str| -> Vec<(&'static str, String)> {
            match &token {
                Some(t) if url::split(to).map(|p| p.origin()).ok() == discovery_origin => {
                    vec![("authorization", format!("Bearer {t}"))]
                }
                _ => Vec::new(),
            }
        };
        let fetched = self
            .client
            .get(&discovery_url, budget, &headers_for(&discovery_url), &track.progress)
            .map_err(|e| link_failure(Link::Document, e))?;
        let mut ready = judge(&fetched, &self.target.issuer, self.checks.rules)?;
        if self.checks.check_jwks {
            track.enter(Link::Jwks);
            let left = budget.saturating_sub(started.elapsed());
            let keys = check_jwks(&self.client, &ready.document, left, &headers_for, &track.progress);
            ready.jwks_keys = Some(keys.map_err(|f| symmetric_only_hint(f, &ready.document))?);
        }
        Ok(ready)
    }
}

/// Fetches `jwks_uri` under the same TLS rules and requires a usable key. Every failure here is
/// class `jwks`, with the transport's class in the detail.
fn check_jwks(
    client: &HttpClient,
    document: &Document,
    budget: Duration,
    headers_for: &dyn Fn(&str) -> Vec<(&'static str, String)>,
    progress: &Arc<Progress>,
) -> Result<usize, Failure> {
    let jwks = |detail: String| Failure::new(FailureClass::Jwks, detail);
    let Some(uri) = &document.jwks_uri else {
        return Err(jwks("the document has no jwks_uri to check".into()));
    };
    if let Err(p) = url::split(uri) {
        return Err(jwks(format!("jwks_uri {:?} {p}", url::redact(uri))));
    }
    let fetched = client.get(uri, budget, &headers_for(uri), progress).map_err(|e| link_failure(Link::Jwks, e))?;
    if fetched.status != 200 {
        let hint = if fetched.status >= 500 { " (Dex answers 500 until its first signing key exists)" } else { "" };
        return Err(jwks(format!("{}{hint}", status_detail(&fetched))));
    }
    if let Some(encoding) = &fetched.content_encoding {
        return Err(jwks(unasked_encoding(encoding)));
    }
    jwks::validate_jwks(&fetched.body, &document.id_token_signing_alg_values_supported)
        .map_err(|p| jwks(format!("{p} (from {})", url::redact(uri))))
}

/// A provider that signs only with a shared secret (`HS*`) publishes no key: `--check-jwks` can
/// never pass there, and the failure should say so rather than suggest a network problem.
fn symmetric_only_hint(mut failure: Failure, document: &Document) -> Failure {
    let algs = &document.id_token_signing_alg_values_supported;
    if !algs.is_empty() && algs.iter().all(|a| !jwks::needs_public_key(a)) {
        failure.detail = format!(
            "the provider signs ID tokens only with {} (a shared secret), so no public key exists to check: drop \
             --check-jwks ({})",
            algs.join(", "),
            failure.detail
        );
    }
    failure
}

/// Judges a complete response.
pub(crate) fn judge(fetched: &Fetched, issuer: &str, rules: Rules) -> Result<Ready, Failure> {
    if fetched.status != 200 {
        let mut failure = Failure::new(FailureClass::HttpStatus, status_detail(fetched));
        if matches!(fetched.status, 429 | 503) {
            failure.retry_after = fetched.retry_after.as_deref().and_then(|v| http::retry_after(v, SystemTime::now()));
        }
        return Err(failure);
    }
    if let Some(encoding) = &fetched.content_encoding {
        return Err(Failure::new(FailureClass::Body, unasked_encoding(encoding)));
    }
    match discovery::validate_document(&fetched.body, issuer, rules) {
        Ok(document) => Ok(Ready { document, url: fetched.url.clone(), jwks_keys: None }),
        Err(problem) => {
            let class = match &problem {
                DocumentProblem::NotUtf8 { .. } => FailureClass::Body,
                DocumentProblem::Json(_) | DocumentProblem::Duplicate(_) => FailureClass::Json,
                DocumentProblem::IssuerMismatch { .. } => FailureClass::IssuerMismatch,
                DocumentProblem::MissingField(_) | DocumentProblem::NotHttps(_) => FailureClass::MissingField,
            };
            let mut detail = problem.to_string();
            if class == FailureClass::Json {
                detail.push_str(&format!(
                    " (Content-Type {}, starts {:?})",
                    fetched.content_type.as_deref().unwrap_or("absent"),
                    discovery::printable_excerpt(&fetched.body, 60)
                ));
            }
            Err(Failure::new(class, detail))
        }
    }
}

fn unasked_encoding(encoding: &str) -> String {
    format!(
        "the body is {encoding}-encoded although the gate asked for no encoding (it sends no Accept-Encoding); \
         a server or proxy that compresses regardless breaks clients that do the same"
    )
}

fn status_detail(fetched: &Fetched) -> String {
    let reason = ureq::http::StatusCode::from_u16(fetched.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let excerpt = discovery::printable_excerpt(&fetched.body, 100);
    let hint = match fetched.status {
        404 => {
            " (Keycloak answers 404 until the realm is imported; check the realm or application name if it persists)"
        }
        429 => " (rate-limited)",
        502..=504 => " (a gateway in front of a provider that is not serving yet)",
        401 | 403 => {
            " (metadata is normally public: check the path, and that the realm, tenant or application exists and is \
             enabled; the Kubernetes API server's issuer needs --token-file; a gateway or network policy may be in \
             the way)"
        }
        _ => "",
    };
    let mut detail = format!("HTTP {} {reason} from {}{hint}", fetched.status, url::redact(&fetched.url));
    if !excerpt.is_empty() {
        detail.push_str(&format!(": {excerpt:?}"));
    }
    detail
}

/// A failure while fetching one link of the chain: its class comes from the transport, except
/// that anything going wrong with the keys is class `jwks`, with the transport's class inside.
fn link_failure(link: Link, e: FetchError) -> Failure {
    let failure = fetch_failure(e);
    match link {
        Link::Document => failure,
        Link::Jwks => {
            Failure { class: FailureClass::Jwks, detail: format!("{}: {}", failure.class, failure.detail), ..failure }
        }
    }
}

/// A transport failure's class; its detail is the error's own message.
pub(crate) fn fetch_failure(e: FetchError) -> Failure {
    let class = match &e {
        FetchError::Dns { .. } | FetchError::TimedOut { stage: Stage::Resolving, .. } => FailureClass::Dns,
        FetchError::TimedOut { .. } => FailureClass::Timeout,
        FetchError::Refused { .. } | FetchError::Connect(_) => FailureClass::Connect,
        FetchError::Tls { .. } | FetchError::ClientCertificateRequired { .. } | FetchError::TlsOther(_) => {
            FailureClass::Tls
        }
        FetchError::Redirect(_) => FailureClass::HttpStatus,
        FetchError::Body(_) | FetchError::Protocol(_) => FailureClass::Body,
    };
    let cheap = matches!(e, FetchError::Refused { .. });
    Failure { class, detail: e.to_string(), cheap, retry_after: None }
}
