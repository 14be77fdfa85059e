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

mod issuer;
mod resource_chain;

use crate::config::Target;
use crate::net::http::{FetchError, Fetched, HttpClient};
use crate::progress::{Progress, Stage};
use crate::rules::authorization_server::{self, Document};
use crate::rules::authorization_server::{MetadataKind, Rules};
use crate::token;
use crate::url;
use std::cell::Cell;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// The protected resource's metadata is missing or does not name the resource and a server.
    Resource,
    Jwks,
    Token,
    /// A name resolved to an address SSRF-guarded clients refuse (`--refuse-private-addresses`).
    PrivateAddress,
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
            FailureClass::Resource => "resource",
            FailureClass::Jwks => "jwks",
            FailureClass::Token => "token",
            FailureClass::PrivateAddress => "private-address",
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which link of the chain an attempt was at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Link {
    /// An authorization server's metadata (OIDC Discovery or RFC 8414).
    #[default]
    Metadata,
    /// Its JWK Set.
    Jwks,
    /// A protected resource's metadata (RFC 9728), or the resource's own challenge.
    ResourceMetadata,
}

impl Link {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Link::Metadata => "metadata",
            Link::Jwks => "jwks",
            Link::ResourceMetadata => "resource-metadata",
        }
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
    pub(crate) link: Link,
    /// Retrying cannot change what the real client does: the wait ends with this failure.
    pub(crate) conclusive: bool,
}

impl Failure {
    pub(crate) fn new(class: FailureClass, detail: impl Into<String>) -> Failure {
        Failure {
            class,
            detail: detail.into(),
            cheap: false,
            retry_after: None,
            link: Link::Metadata,
            conclusive: false,
        }
    }

    fn at(mut self, link: Link, context: &str) -> Failure {
        self.link = link;
        self.detail.insert_str(0, context);
        self
    }
}

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

/// What one attempt checks, beyond fetching.
#[derive(Clone, Debug)]
pub(crate) struct Checks {
    pub(crate) rules: Rules,
    pub(crate) check_jwks: bool,
    /// Fetched instead of the document's `jwks_uri`.
    pub(crate) jwks_url: Option<String>,
    /// Re-read on every attempt: projected service-account tokens rotate.
    pub(crate) token_file: Option<PathBuf>,
    /// oauth2-proxy skips certificate checks (`OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY`), so a
    /// certificate the gate rejects is a conclusive failure: the proxy would not wait for it.
    pub(crate) proxy_skips_verify: bool,
    /// `--refuse-legacy-auth`: a resource without protected resource metadata fails rather than
    /// having its origin taken for its authorization server.
    pub(crate) refuse_legacy_auth: bool,
    /// The run waits for one `--issuer` and nothing else: `--discovery-url` and `--jwks-url`
    /// can be given.
    pub(crate) one_issuer: bool,
    /// Fail where an SSRF-guarded client refuses a private address.
    pub(crate) refuse_private_addresses: bool,
}

/// What the thread doing an attempt shares with the caller waiting for it: the link it is at
/// (with the words that name it, such as the authorization server) and the fetch's stage.
#[derive(Debug, Default)]
struct Track {
    progress: Arc<Progress>,
    at: Mutex<(Link, String)>,
}

impl Track {
    fn enter(&self, link: Link, context: &str) {
        if let Ok(mut at) = self.at.lock() {
            *at = (link, context.to_string());
        }
    }

    /// The failure of an attempt abandoned after `budget`, in the words a fetch that timed out
    /// by itself would have used.
    fn abandoned(&self, budget: Duration) -> Failure {
        let (stage, host) = self.progress.at();
        let (link, context) = self.at.lock().map(|at| at.clone()).unwrap_or_default();
        link_failure(link, &context, FetchError::TimedOut { stage, host, after: budget })
    }
}

/// Attempts for one target.
#[derive(Clone)]
pub(crate) struct Prober {
    client: Arc<HttpClient>,
    target: Arc<Target>,
    checks: Arc<Checks>,
    /// The attempt under way, if any, and when it started: shared by the clones, so that a wait
    /// ended by another target or a signal can say where this one had got to.
    current: Arc<Mutex<Option<Started>>>,
}

/// An attempt under way: when it started, and where it is.
type Started = (Instant, Arc<Track>);

impl Prober {
    pub(crate) fn new(client: Arc<HttpClient>, target: Target, checks: Arc<Checks>) -> Prober {
        Prober { client, target: Arc::new(target), checks, current: Arc::default() }
    }

    /// Where the attempt under way has got to, or `None` between attempts: the link (with the
    /// server it belongs to), the fetch's stage and host, and how long the attempt has run.
    pub(crate) fn in_flight(&self) -> Option<String> {
        let (started, track) = self.current.lock().ok()?.clone()?;
        let (stage, host) = track.progress.at();
        let (link, context) = track.at.lock().map(|at| at.clone()).unwrap_or_default();
        let ran = crate::human::secs(started.elapsed());
        Some(format!("{context}{stage} ({host}), {ran} into it, at the {} link", link.as_str()))
    }

    /// One attempt, over within `budget` whatever the network does.
    pub(crate) fn attempt(&self, budget: Duration) -> Result<Ready, Failure> {
        let track = Arc::new(Track::default());
        if let Ok(mut current) = self.current.lock() {
            *current = Some((Instant::now(), track.clone()));
        }
        let outcome = self.attempt_tracked(budget, track);
        if let Ok(mut current) = self.current.lock() {
            *current = None;
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
        rx.recv_timeout(budget).unwrap_or_else(|_| Err(track.abandoned(budget)))
    }

    fn run(&self, budget: Duration, track: &Track) -> Result<Ready, Failure> {
        let token = match &self.checks.token_file {
            None => None,
            Some(path) => Some(
                token::read(path)
                    .map_err(|why| Failure::new(FailureClass::Token, format!("token file {} {why}", path.display())))?,
            ),
        };
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
            token_origins: Vec::new(),
            mcp: matches!(&*self.target, Target::Resource { .. }) || self.checks.rules.kind == MetadataKind::Auto,
            deadline: Instant::now() + budget,
            budget,
            asked: Cell::new(None),
        };
        let outcome = match &*self.target {
            Target::Issuer { issuer, discovery_url } => {
                at.token_origins = self.token_origins(issuer, discovery_url.as_deref());
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

    /// The origins the bearer token may go to: where the issuer's metadata is fetched and the
    /// `--jwks-url`, which the user named. Never a `jwks_uri` elsewhere, never a resource.
    fn token_origins(&self, issuer: &str, discovery_url: Option<&str>) -> Vec<String> {
        let candidates = authorization_server::candidates(issuer, self.checks.rules.kind, discovery_url);
        let urls = candidates.iter().map(|c| c.url.as_str()).chain(self.checks.jwks_url.as_deref());
        urls.filter_map(|u| url::split(u).ok().map(|p| p.origin())).collect()
    }
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
    /// Why the URL was passed over.
    Skipped(String),
}

impl Attempt<'_> {
    fn headers_for(&self, link: Link, to: &str) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if self.mcp && link != Link::Jwks {
            headers.push(("mcp-protocol-version", MCP_PROTOCOL_VERSION.to_string()));
        }
        match &self.token {
            Some(t) if url::split(to).is_ok_and(|p| self.token_origins.contains(&p.origin())) => {
                headers.push(("authorization", format!("Bearer {t}")));
            }
            _ => {}
        }
        headers
    }

    fn get(&self, link: Link, context: &str, to: &str) -> Result<Fetched, FetchError> {
        self.track.enter(link, context);
        let left = self.deadline.saturating_duration_since(Instant::now());
        let fetched = self.client.get(to, left, &self.headers_for(link, to), &self.track.progress);
        if let Ok(f) = &fetched {
            self.note_retry_after(f);
        }
        fetched.map(|f| self.hide_token(f))
    }

    /// Fetches one link of the chain within what is left of the budget; a transport failure is
    /// classed by the link, and a timeout names the attempt's budget.
    fn fetch(&self, link: Link, context: &str, to: &str) -> Result<Fetched, Failure> {
        let fetched = self.get(link, context, to);
        self.refuse_private(link, context)?;
        fetched.map_err(|e| self.failure(link, context, e))
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
            Err(FetchError::Redirect(why)) => Ok(Answer::Skipped(why)),
            Err(e) => Err(self.failure(link, context, e)),
        }
    }

    /// With `--refuse-private-addresses`, an address an SSRF-guarded client refuses fails the
    /// link, whatever the fetch gave.
    fn refuse_private(&self, link: Link, context: &str) -> Result<(), Failure> {
        if self.checks.refuse_private_addresses {
            if let Some(refused) = refused_address(&self.track.progress.resolved()) {
                return Err(Failure::new(FailureClass::PrivateAddress, refused).at(link, context));
            }
        }
        Ok(())
    }

    fn failure(&self, link: Link, context: &str, e: FetchError) -> Failure {
        let e = match e {
            FetchError::TimedOut { stage, host, .. } => FetchError::TimedOut { stage, host, after: self.budget },
            other => other,
        };
        let rejected = matches!(e, FetchError::Tls { error: rustls::Error::InvalidCertificate(_), .. });
        let cross_origin = matches!(&e, FetchError::Redirect(d) if d.starts_with(crate::net::http::CROSS_ORIGIN));
        let mut failure = link_failure(link, context, e);
        if cross_origin {
            failure.detail.push_str(redirect_hint(link, context.is_empty() && self.checks.one_issuer));
        }
        if rejected && self.checks.proxy_skips_verify {
            failure.detail.push_str(SKIPPED_BY_PROXY);
            failure.conclusive = true;
        }
        failure
    }
}

impl Attempt<'_> {
    fn note_retry_after(&self, fetched: &Fetched) {
        let asked = Some(fetched.status)
            .filter(|s| matches!(s, 429 | 503))
            .and(fetched.retry_after.as_deref())
            .and_then(|v| crate::net::http::retry_after(v, std::time::SystemTime::now()));
        if asked > self.asked.get() {
            self.asked.set(asked);
        }
    }

    /// The attempt's failure, asking for the longest `Retry-After` any of its fetches was given.
    fn asking(&self, mut failure: Failure) -> Failure {
        failure.retry_after = failure.retry_after.max(self.asked.get());
        failure
    }

    /// The token taken out of a body a server sent back, before any excerpt is cut from it: an
    /// error page's always, a 200's only for a token long enough (16 bytes; every real bearer
    /// token is) not to be part of a valid document by chance. Every output is scrubbed again
    /// ([`token::scrub`]), which covers the headers and whole values.
    fn hide_token(&self, mut fetched: Fetched) -> Fetched {
        if let Some(t) = self.token.as_deref().filter(|t| fetched.status != 200 || t.len() >= 16) {
            token::hide_in_body(&mut fetched.body, t);
        }
        fetched
    }
}

/// What to do about a refused cross-origin redirect, naming the flag that reaches the link:
/// `--discovery-url` for an issuer's metadata and `--jwks-url` for its keys (both only when the
/// run waits for that one issuer, `own` here), `--resource` for the resource's metadata. A
/// link a resource's metadata names is the resource's to fix: no flag reaches it.
fn redirect_hint(link: Link, own: bool) -> &'static str {
    match (link, own) {
        (Link::Metadata, true) => "; point --discovery-url at the final location",
        (Link::Jwks, true) => "; point --jwks-url at the final location",
        (Link::ResourceMetadata, _) => "; if the resource itself lives there, give that URL as --resource",
        (Link::Metadata, false) => {
            "; serve the metadata on the issuer's own origin (--discovery-url takes a single --issuer, no --resource)"
        }
        (Link::Jwks, false) => {
            "; serve the keys where jwks_uri says (--jwks-url takes a single --issuer, no --resource)"
        }
    }
}

/// With `--refuse-private-addresses`: the first name resolved to an address an SSRF-guarded
/// client refuses, named with the address, its range and the client setting that allows it.
fn refused_address(resolved: &[(String, Vec<IpAddr>)]) -> Option<String> {
    let (host, ip, range) = resolved
        .iter()
        .find_map(|(host, ips)| ips.iter().find_map(|ip| url::private_range(*ip).map(|r| (host, ip, r))))?;
    Some(format!(
        "{host} resolves to {ip}, a {range} address: an SSRF-guarded client refuses it (ToolHive: \"the provided \
         URL redirects to a private IP address, which is not allowed\"; its --jwks-allow-private-ip allows it), \
         and --refuse-private-addresses has the gate do the same"
    ))
}

/// Said of a certificate the gate rejects while oauth2-proxy would not check it.
const SKIPPED_BY_PROXY: &str = "; oauth2-proxy skips this check (OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY=true), the \
    gate never does, so waiting cannot help: give the gate the provider's CA with --ca-file PATH or WAIT_FOR_IDP_CA_FILE";

/// A failure while fetching one link of the chain: its class comes from the transport, except
/// that anything going wrong with the keys is class `jwks`, with the transport's class inside.
fn link_failure(link: Link, context: &str, e: FetchError) -> Failure {
    let failure = fetch_failure(e);
    let failure = match link {
        Link::Jwks => {
            Failure { class: FailureClass::Jwks, detail: format!("{}: {}", failure.class, failure.detail), ..failure }
        }
        Link::Metadata | Link::ResourceMetadata => failure,
    };
    failure.at(link, context)
}

/// A transport failure's class; its detail is the error's own message.
fn fetch_failure(e: FetchError) -> Failure {
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
    Failure { cheap, ..Failure::new(class, e.to_string()) }
}

/// Whether MCP clients pass over a URL that answered `status` for the next in their order: a
/// client error or a redirect returned unfollowed (the TypeScript SDK 1.32.2 goes on for any
/// status below 500: `discoverAuthorizationServerMetadata`, `shouldAttemptFallback`), and a 502,
/// which a reverse proxy answers for a path it does not route, unless `last` (typescript-sdk PR
/// #1632, merged for the 2.x line; 1.32.2 still stops there). Every other 5xx ends the attempt,
/// as 1.32.2 throws on it: the server is there but not serving, and the gate waits.
pub(crate) fn moves_on(status: u16, last: bool) -> bool {
    (300..500).contains(&status) || (status == 502 && !last)
}

/// A response that is not `200`: class `http-status`, with the provider's `Retry-After` kept.
fn status_failure(fetched: &Fetched) -> Failure {
    let mut failure = Failure::new(FailureClass::HttpStatus, status_detail(fetched));
    if matches!(fetched.status, 429 | 503) {
        failure.retry_after =
            fetched.retry_after.as_deref().and_then(|v| crate::net::http::retry_after(v, std::time::SystemTime::now()));
    }
    failure
}

fn status_detail(fetched: &Fetched) -> String {
    let reason = ureq::http::StatusCode::from_u16(fetched.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let excerpt = authorization_server::printable_excerpt(&fetched.body, 100);
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

/// The body of a response that counts: a `200` whose body is as sent. Anything else is class
/// `http-status` (keeping the provider's `Retry-After`) or `body`, whichever link it came from.
fn usable_body(fetched: &Fetched) -> Result<&[u8], Failure> {
    if fetched.status != 200 {
        return Err(status_failure(fetched));
    }
    if let Some(encoding) = &fetched.content_encoding {
        return Err(Failure::new(FailureClass::Body, unasked_encoding(encoding)));
    }
    Ok(&fetched.body)
}

fn unasked_encoding(encoding: &str) -> String {
    format!(
        "the body is {encoding}-encoded although the gate asked for no encoding (it sends no Accept-Encoding); \
         a server or proxy that compresses regardless breaks clients that do the same"
    )
}
