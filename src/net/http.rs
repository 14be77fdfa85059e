//! One bounded HTTP GET: the agent, its TLS roots, its limits and its redirect rules.
//!
//! Every byte from the network is treated as hostile: the whole exchange, DNS to last body byte
//! and every redirect hop, runs under one time budget; response headers stop at [`HEADER_LIMIT`]
//! and bodies at [`BODY_LIMIT`], decoded; redirects are followed by hand ([`super::redirect`]:
//! the token never leaves the origin, and never downgrades to plain http). The request is the one
//! Go's transport writes: `Accept-Encoding: gzip` (the body decoded), and the Host header as the
//! URL gives it. Each fetch records its stage in a [`Progress`], so that whoever gives up waiting
//! on it can say where it hung.

use super::plain::{Http2Only, PlainWatch, http2_only};
use super::proxy::{self, ProxyConnector, ProxyFailure};
use super::redirect::{Chain, RefusedRedirect, Request};
use super::response::{Fetched, read, too_large};
use super::tls::{self, TlsConnector, TlsSettings};
use crate::config::{ConnectTo, Network, ProxySettings, Route};
use crate::human::secs;
use crate::progress::{Progress, Stage};
use crate::url;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};
use ureq::Agent;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{Connector, NextTimeout, TcpConnector};

/// Largest body accepted, after decoding. Real discovery documents are 1-10 KiB, but
/// oauth2-proxy reads a body without a bound: this one only stops a server that never ends
/// (a listed difference). The body grows as it comes; nothing near this is allocated ahead.
pub(crate) const BODY_LIMIT: usize = 16 * 1024 * 1024;
/// Largest response head (status line and headers). Go allows 10 MiB (`MaxResponseHeaderBytes`'s
/// default, a listed difference); no provider comes near either.
pub(crate) const HEADER_LIMIT: usize = 1024 * 1024;
/// Each connection's own read buffer; the response head collects in a buffer that grows
/// ([`PlainWatch`]), so this is only how much one read takes (a TLS record is at most 16 KiB).
const READ_BUFFER: usize = 16 * 1024;
/// The largest write buffer: one request line or header field must fit, and the longest URL the
/// gate accepts is 64 KiB (`url::MAX_LEN`).
const WRITE_BUFFER: usize = url::MAX_LEN + 16 * 1024;
/// Room in a request head for what the gate adds to the URL and the caller's headers (request
/// line, `Host`, `User-Agent`, `Accept`, `Accept-Encoding`, `Content-Length`).
const HEAD_ROOM: usize = 4 * 1024;

/// The write buffer for one request: its head must fit whole, and ureq zero-fills the buffer at
/// a connection's first write, once for HTTP and once more under TLS. Sized for the longest URL,
/// that was 160 KiB of every stalled connection, held until its socket timed out; sized for the
/// request, it is about 10 KiB (the URL twice, as path and `Host`, and the headers with room).
fn write_buffer(target: &str, headers: &[(&str, &str)]) -> usize {
    let head: usize = headers.iter().map(|(name, value)| name.len() + value.len() + 4).sum();
    (2 * target.len() + head + HEAD_ROOM).next_multiple_of(1024).min(WRITE_BUFFER)
}

/// Why no complete response was had. `Display` is the message users read.
#[derive(Debug, Clone)]
pub(crate) enum FetchError {
    /// The resolver answered, and not with an address.
    Dns {
        host: String,
        detail: String,
    },
    /// No answer in time; `stage` says where the exchange hung.
    TimedOut {
        stage: Stage,
        host: String,
        after: Duration,
    },
    /// The peer actively refused: nothing listens yet. Costs the provider nothing.
    Refused {
        host: String,
    },
    Connect(String),
    Tls {
        host: String,
        error: rustls::Error,
    },
    /// The TLS server asked for a client certificate and then broke off.
    ClientCertificateRequired {
        host: String,
    },
    TlsOther(String),
    /// A redirect not followed, and why.
    Redirect(RefusedRedirect),
    Body(String),
    Protocol(String),
    /// The proxy the URL goes through failed, or cannot be used: said naming the proxy
    /// (credentials hidden) and its variable.
    Proxy(String),
    /// This process, not the network, ran out of something (descriptors, memory) at `stage`.
    LocalResource {
        stage: Stage,
        host: String,
        error: String,
    },
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::Dns { host, detail } => write!(f, "name resolution of {host} failed: {detail}"),
            FetchError::TimedOut { stage, host, after } => {
                let after = secs(*after);
                match stage {
                    Stage::ReadingTokenFile | Stage::ReadingHeaderFile => {
                        let which = if *stage == Stage::ReadingTokenFile { "token" } else { "header" };
                        write!(f, "{which} file {host} not read within {after} (a FIFO with no writer, a hung mount)")
                    }
                    Stage::Resolving => write!(f, "no answer from the resolver within {after} (looking up {host})"),
                    Stage::Connecting => write!(
                        f,
                        "no TCP connection to {host} within {after} (packets dropped: a firewall or NetworkPolicy, \
                         or the host is down)"
                    ),
                    Stage::TlsHandshake => write!(
                        f,
                        "TLS handshake with {host} not complete within {after} (the connection was accepted but \
                         nothing answers: a stuck or overloaded TLS terminator)"
                    ),
                    Stage::AwaitingResponse => write!(
                        f,
                        "no response from {host} within {after} after the request was sent (the server is hung \
                         or overloaded)"
                    ),
                    Stage::ReadingBody => write!(f, "body from {host} not complete within {after} (server too slow)"),
                }
            }
            FetchError::Refused { host } => write!(f, "connection refused by {host} (nothing listening yet)"),
            FetchError::LocalResource { stage, host, error } => {
                write!(f, "{error} at {stage} ({host}): the gate's own limit, not the provider's; raise it (ulimit -n)")
            }
            FetchError::Tls { host, error } => f.write_str(&tls::explain(host, error)),
            FetchError::ClientCertificateRequired { host } => f.write_str(&tls::client_certificate_required(host)),
            FetchError::Redirect(refused) => refused.fmt(f),
            FetchError::Connect(d)
            | FetchError::TlsOther(d)
            | FetchError::Body(d)
            | FetchError::Protocol(d)
            | FetchError::Proxy(d) => f.write_str(d),
        }
    }
}

/// Marks a resolver failure so it can be told from other I/O errors.
#[derive(Debug)]
struct DnsFailure {
    host: String,
    detail: String,
}

impl fmt::Display for DnsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.host, self.detail)
    }
}

impl std::error::Error for DnsFailure {}

/// The system resolver, applying `--connect-to` rules first, with failures tagged as DNS
/// failures. Only the address changes: the URL, and so SNI, the certificate check and the Host
/// header, keep the original name.
#[derive(Debug)]
struct GateResolver {
    inner: DefaultResolver,
    connect_to: Arc<Vec<ConnectTo>>,
    progress: Arc<Progress>,
    proxies: Arc<ProxySettings>,
}

impl Resolver for GateResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        // Through a proxy the proxy resolves the name (Go never looks it up), and a proxy that
        // cannot be used is the connector's to report.
        let (scheme, bare, port) = proxy::target(uri);
        if !matches!(self.proxies.route(scheme, bare, port), Ok(Route::Direct(_))) {
            return Ok(self.inner.empty());
        }
        let host = uri.host().unwrap_or("?");
        let port = uri.port_u16().unwrap_or_else(|| url::default_port(uri.scheme_str().unwrap_or("https")));
        let rewritten = self.connect_to.iter().find_map(|rule| rule.redirect(host, port));
        let (target, via) = match &rewritten {
            Some((to_host, to_port)) => {
                let scheme = uri.scheme_str().unwrap_or("https");
                let target: ureq::http::Uri = format!("{scheme}://{to_host}:{to_port}/")
                    .parse()
                    .map_err(|_| dns_error(to_host, "is not a usable --connect-to target".into()))?;
                (target, format!(" (via --connect-to {to_host}:{to_port})"))
            }
            None => (uri.clone(), String::new()),
        };
        let name = url::bare_host(target.host().unwrap_or("?")).to_string();
        self.progress.enter(Stage::Resolving, &name);
        let addrs = self.inner.resolve(&target, config, timeout).map_err(|e| match e {
            ureq::Error::Timeout(_) => e,
            ureq::Error::HostNotFound => dns_error(&name, format!("no address{via}")),
            ureq::Error::Io(io) if exhausted(&io).is_some() => ureq::Error::Io(io),
            ureq::Error::Io(io) => dns_error(&name, format!("{io}{via}")),
            other => dns_error(&name, format!("{other}{via}")),
        })?;
        self.progress.note_resolved(&name, addrs.iter().map(|a| a.ip()).collect());
        // The connectors come next; the TLS connector, last in the chain, records the stages
        // after the TCP connection.
        self.progress.enter(Stage::Connecting, &name);
        Ok(addrs)
    }
}

/// What this process ran out of, when `io` says it did: a descriptor limit (EMFILE: the
/// process's `RLIMIT_NOFILE`; ENFILE: the system's), or kernel memory. No provider causes these,
/// and calling them a lookup or a connection that failed sends the operator to the wrong place.
fn exhausted(io: &io::Error) -> Option<&'static str> {
    Some(match io.raw_os_error()? {
        libc::EMFILE => "out of file descriptors (RLIMIT_NOFILE)",
        libc::ENFILE => "out of file descriptors (system-wide)",
        libc::ENOMEM | libc::ENOBUFS => "out of kernel memory",
        _ => return None,
    })
}

fn dns_error(host: &str, detail: String) -> ureq::Error {
    ureq::Error::Io(io::Error::other(DnsFailure { host: host.to_string(), detail }))
}

/// Each agent's configuration: built once per request (its write buffer is the request's), in one
/// place, not inlined where agents are made (the builder moves a large struct at every step).
#[inline(never)]
fn agent_config(write_buffer: usize) -> ureq::config::Config {
    Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .max_idle_connections(0)
        .max_idle_connections_per_host(0)
        .max_response_header_size(HEADER_LIMIT)
        .input_buffer_size(READ_BUFFER)
        .output_buffer_size(write_buffer)
        .user_agent(concat!("wait-for-idp/", env!("CARGO_PKG_VERSION")))
        // No Accept header, as Go's net/http sends none: the Kubernetes API server serves its
        // JWKS as application/jwk-set+json only and answers `Accept: application/json` with 406.
        .accept(ureq::config::AutoHeaderValue::None)
        .build()
}

/// Fetches documents. Each fetch gets an agent of its own, wired to its [`Progress`];
/// connections are not pooled, so each attempt proves the provider answers a new client.
pub(crate) struct HttpClient {
    tls: TlsSettings,
    proxies: Arc<ProxySettings>,
    connect_to: Arc<Vec<ConnectTo>>,
}

impl HttpClient {
    /// The client for these network settings; fails only when the trusted certificates cannot
    /// make a verifier.
    pub(crate) fn new(network: &Network) -> Result<HttpClient, rustls::client::VerifierBuilderError> {
        let tls = TlsSettings::new(&network.trust)?;
        Ok(HttpClient {
            tls,
            proxies: Arc::new(network.proxies.clone()),
            connect_to: Arc::new(network.connect_to.clone()),
        })
    }

    /// The proxy a request to `to` goes through, as shown (credentials hidden), or `None` when it
    /// goes direct: what a failure names as the proxy it used.
    pub(crate) fn proxy_for(&self, to: &str) -> Option<String> {
        let p = url::split(to).ok()?;
        match self.proxies.route(p.scheme, p.bare_host(), p.port_or_default()) {
            Ok(Route::Proxy(choice)) => Some(choice.display.clone()),
            Ok(Route::Direct(_)) => None,
            Err(broken) => Some(broken.shown),
        }
    }

    /// An agent for one request to `target` carrying `headers`, its write buffer sized for them.
    pub(super) fn agent(&self, progress: &Arc<Progress>, target: &str, headers: &[(&str, &str)]) -> Agent {
        let config = agent_config(write_buffer(target, headers));
        let connector =
            ().chain(ProxyConnector::new(self.proxies.clone(), self.tls.clone(), progress.clone()))
                .chain(TcpConnector::default())
                .chain(TlsConnector::new(self.tls.clone(), progress.clone()))
                .chain(PlainWatch::new(progress.clone()));
        let resolver = GateResolver {
            inner: DefaultResolver::default(),
            connect_to: self.connect_to.clone(),
            progress: progress.clone(),
            proxies: self.proxies.clone(),
        };
        Agent::with_parts(config, connector, resolver)
    }

    /// GETs `url` within `budget`, following redirects by `request`'s rules; its secrets go
    /// only to hops on `url`'s origin.
    pub(crate) fn get(
        &self,
        url: &str,
        budget: Duration,
        request: &Request<'_>,
        progress: &Arc<Progress>,
    ) -> Result<Fetched, FetchError> {
        let started = Instant::now();
        let mut chain = Chain::new(url, request.redirects)?;
        let mut current = url.to_string();
        loop {
            let left = budget.saturating_sub(started.elapsed());
            if left.is_zero() {
                let (stage, host) = progress.at();
                return Err(FetchError::TimedOut { stage, host, after: budget });
            }
            let secrets = if chain.on_origin { request.secrets.as_slice() } else { &[] };
            let headers: Vec<_> = request.headers.iter().chain(secrets).collect();
            let fetched = self.get_once(&current, left, &headers, progress)?;
            if !matches!(fetched.status, 301 | 302 | 303 | 307 | 308) {
                return Ok(fetched);
            }
            current = chain.follow(&current, &fetched)?;
        }
    }

    fn get_once(
        &self,
        target: &str,
        budget: Duration,
        headers: &[&(&str, String)],
        progress: &Arc<Progress>,
    ) -> Result<Fetched, FetchError> {
        let sent: Vec<(&str, &str)> = headers.iter().map(|(name, value)| (*name, value.as_str())).collect();
        self.exchange(target, None, budget, &sent, progress)
    }

    /// One request, a GET or (with a body) a POST, written as Go's transport writes it, and its
    /// response read as far as the gate reads it. Redirects are the caller's.
    pub(super) fn exchange(
        &self,
        target: &str,
        body: Option<&[u8]>,
        budget: Duration,
        headers: &[(&str, &str)],
        progress: &Arc<Progress>,
    ) -> Result<Fetched, FetchError> {
        let parts = url::split(target).map_err(|p| FetchError::Protocol(format!("bad URL: {p}")))?;
        let host = parts.bare_host().to_string();
        progress.enter(Stage::Resolving, &host);
        let agent = self.agent(progress, target, headers);
        // Go's transport asks for gzip and decodes it itself, unless the caller asked for an
        // encoding (a --header-file may): then the body is the caller's to decode, as here.
        let asks_gzip = !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("accept-encoding"));
        // Go writes the URL's host as given, a default port too (`https://h:443/` sends
        // `Host: h:443`); ureq would drop it, and a provider that builds its issuer from Host
        // then publishes another one than the client compares. The proxy is the connector's.
        fn written<B>(
            request: ureq::RequestBuilder<B>,
            budget: Duration,
            authority: &str,
            asks_gzip: bool,
            headers: &[(&str, &str)],
        ) -> ureq::RequestBuilder<B> {
            let mut request =
                request.config().timeout_global(Some(budget)).proxy(None).build().header("host", authority);
            if asks_gzip {
                request = request.header("accept-encoding", "gzip");
            }
            headers.iter().fold(request, |request, (name, value)| request.header(*name, *value))
        }
        let response = match body {
            None => written(agent.get(target), budget, parts.authority, asks_gzip, headers).call(),
            Some(body) => written(agent.post(target), budget, parts.authority, asks_gzip, headers).send(body),
        };
        let response = response.map_err(|e| classify(e, progress, budget))?;
        read(response, target, &host, progress, budget, asks_gzip)
    }
}

/// Maps ureq's errors onto the failure kinds a user can act on, using the stage the exchange
/// had reached.
pub(super) fn classify(e: ureq::Error, progress: &Progress, budget: Duration) -> FetchError {
    let (stage, host) = progress.at();
    if progress.tls_reply() {
        return FetchError::TlsOther(format!(
            "{host} answered the plain-HTTP request in TLS: this port serves HTTPS, so use an https:// URL"
        ));
    }
    let in_body = stage == Stage::ReadingBody;
    let tls_failure = |error: rustls::Error| {
        if error == rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol) {
            FetchError::Protocol(http2_only(&host, "refused ALPN http/1.1 in the TLS handshake"))
        } else if progress.client_cert_requested() {
            FetchError::ClientCertificateRequired { host: host.clone() }
        } else {
            FetchError::Tls { host: host.clone(), error }
        }
    };
    match e {
        ureq::Error::Timeout(_) => FetchError::TimedOut { stage, host, after: budget },
        ureq::Error::Rustls(error) => tls_failure(error),
        ureq::Error::Tls(msg) => FetchError::TlsOther(msg.to_string()),
        ureq::Error::BodyExceedsLimit(_) => FetchError::Body(too_large(BODY_LIMIT, "")),
        ureq::Error::LargeResponseHeader(..) => FetchError::Protocol(format!(
            "response headers from {host} larger than {} MiB: the gate reads no more (Go reads up to 10 MiB)",
            HEADER_LIMIT / (1024 * 1024)
        )),
        ureq::Error::HostNotFound => FetchError::Dns { host, detail: "no address".into() },
        ureq::Error::Io(io) => {
            if let Some(what) = exhausted(&io) {
                return FetchError::LocalResource { stage, host, error: format!("{what}: {io}") };
            }
            if let Some(proxy) = io.get_ref().and_then(|i| i.downcast_ref::<ProxyFailure>()) {
                return FetchError::Proxy(url::redact(&proxy.to_string()));
            }
            if let Some(dns) = io.get_ref().and_then(|i| i.downcast_ref::<DnsFailure>()) {
                return FetchError::Dns { host: dns.host.clone(), detail: dns.detail.clone() };
            }
            if let Some(tls) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                return tls_failure(tls.clone());
            }
            if io.get_ref().is_some_and(|i| i.is::<Http2Only>()) {
                return FetchError::Protocol(http2_only(&host, "answered with an HTTP/2 frame"));
            }
            match io.kind() {
                io::ErrorKind::ConnectionRefused if stage <= Stage::Connecting => FetchError::Refused { host },
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                    FetchError::TimedOut { stage, host, after: budget }
                }
                _ if in_body => FetchError::Body(format!("body cut short: {io}")),
                _ if progress.client_cert_requested() => FetchError::ClientCertificateRequired { host },
                io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe => {
                    FetchError::Connect(format!("{host} closed the connection before a response: {io}"))
                }
                _ => FetchError::Connect(format!("cannot connect to {host}: {io}")),
            }
        }
        other if in_body => FetchError::Body(format!("body cut short: {}", url::redact(&other.to_string()))),
        ureq::Error::ConnectionFailed => FetchError::Connect(format!("connection to {host} failed")),
        ureq::Error::Protocol(ureq_proto::Error::HttpParseTooManyHeaders) => FetchError::Protocol(format!(
            "more than {} response header fields from {host}: this build reads no more (Go has no such limit)",
            ureq_proto::client::MAX_RESPONSE_HEADERS
        )),
        ureq::Error::Protocol(p) => FetchError::Protocol(format!("malformed HTTP response: {p}")),
        other => FetchError::Connect(url::redact(&other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_buffer_holds_the_request_head_and_no_more_than_it_needs() {
        let short = write_buffer("https://sso.example.com/realms/main/.well-known/openid-configuration", &[]);
        assert_eq!(short, 5 * 1024, "a usual request needs a few KiB, not 80");
        let token = "t".repeat(2000);
        let with_token = write_buffer("https://kubernetes.default.svc/x", &[("authorization", &token)]);
        assert!(with_token >= 2 * 1024 + HEAD_ROOM, "{with_token}");
        let longest = format!("https://h/{}", "a".repeat(url::MAX_LEN - 10));
        assert_eq!(write_buffer(&longest, &[]), WRITE_BUFFER, "the longest URL still fits, as before");
    }
}
