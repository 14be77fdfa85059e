//! One bounded HTTP GET: the agent, its TLS roots, its limits and its redirect rules.
//!
//! Every byte from the network is treated as hostile: the whole exchange, DNS to last body byte
//! and every redirect hop, runs under one time budget; bodies stop at [`BODY_LIMIT`]; redirects
//! are followed by hand so that they stay on the origin the user configured (a bearer token is
//! never carried elsewhere) and never downgrade to plain http.

use crate::connect_to::ConnectTo;
use crate::proxy::ProxySettings;
use crate::tls::{TlsConnector, client_config};
use crate::url;
use rustls::pki_types::CertificateDer;
use std::fmt;
use std::io;
use std::time::{Duration, Instant};
use ureq::Agent;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{ConnectProxyConnector, Connector, NextTimeout, TcpConnector};

/// Largest body accepted. Real discovery documents are 1-10 KiB; anything near this is a
/// misbehaving server, and reading on would only delay the verdict.
pub const BODY_LIMIT: u64 = 1024 * 1024;
/// Same-origin redirect hops followed before giving up.
pub const MAX_REDIRECTS: usize = 5;

/// A complete response: the body was read to its end, within the limit.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    pub content_type: Option<String>,
    /// The Location header, used to follow redirects.
    pub location: Option<String>,
    pub body: Vec<u8>,
    /// The URL that answered, after redirects.
    pub url: String,
}

/// Why no complete response was had.
#[derive(Debug, Clone)]
pub enum FetchError {
    Dns(String),
    /// The peer actively refused: nothing listens yet. Costs the provider nothing.
    Refused(String),
    Connect(String),
    Timeout(String),
    Tls {
        host: String,
        error: rustls::Error,
    },
    TlsOther(String),
    Redirect(String),
    Body(String),
    Protocol(String),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::Dns(d) => write!(f, "name resolution failed: {d}"),
            FetchError::Refused(d) => write!(f, "connection refused ({d})"),
            FetchError::Connect(d) => write!(f, "{d}"),
            FetchError::Timeout(d) => write!(f, "{d}"),
            FetchError::Tls { error, .. } => write!(f, "{error}"),
            FetchError::TlsOther(d) => write!(f, "{d}"),
            FetchError::Redirect(d) => write!(f, "{d}"),
            FetchError::Body(d) => write!(f, "{d}"),
            FetchError::Protocol(d) => write!(f, "{d}"),
        }
    }
}

/// Marks a resolver failure so it can be told from other I/O errors.
#[derive(Debug)]
struct DnsFailure(String);

impl fmt::Display for DnsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DnsFailure {}

/// The system resolver, applying `--connect-to` rules first, with failures tagged as DNS
/// failures. Only the address changes: the URL, and so SNI, the certificate check and the Host
/// header, keep the original name.
#[derive(Debug, Default)]
struct GateResolver {
    inner: DefaultResolver,
    connect_to: Vec<ConnectTo>,
}

impl Resolver for GateResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().unwrap_or("?");
        let port = uri.port_u16().unwrap_or_else(|| url::default_port(uri.scheme_str().unwrap_or("https")));
        let rewritten = self.connect_to.iter().find_map(|rule| rule.redirect(host, port));
        let (target, via) = match &rewritten {
            Some((to_host, to_port)) => {
                let scheme = uri.scheme_str().unwrap_or("https");
                let target: ureq::http::Uri = format!("{scheme}://{to_host}:{to_port}/")
                    .parse()
                    .map_err(|_| dns_error(format!("--connect-to target {to_host}:{to_port} is not usable")))?;
                (target, format!(" (via --connect-to {to_host}:{to_port})"))
            }
            None => (uri.clone(), String::new()),
        };
        self.inner.resolve(&target, config, timeout).map_err(|e| match e {
            ureq::Error::Timeout(_) => e,
            ureq::Error::HostNotFound => dns_error(format!("{} has no address{via}", target.host().unwrap_or("?"))),
            other => dns_error(format!("{}: {}{via}", target.host().unwrap_or("?"), io_detail(&other))),
        })
    }
}

fn dns_error(detail: String) -> ureq::Error {
    ureq::Error::Io(io::Error::other(DnsFailure(detail)))
}

fn io_detail(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}

/// Fetches documents. One agent serves every attempt; connections are not pooled, so each
/// attempt proves the provider answers a new client.
pub struct HttpClient {
    agent: Agent,
    proxies: ProxySettings,
}

impl HttpClient {
    pub fn new(
        extra_roots: &[CertificateDer<'static>],
        proxies: ProxySettings,
        connect_to: Vec<ConnectTo>,
    ) -> HttpClient {
        let config = Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(None)
            .max_idle_connections(0)
            .max_idle_connections_per_host(0)
            .user_agent(concat!("wait-for-idp/", env!("CARGO_PKG_VERSION")))
            .accept("application/json")
            .build();
        let connector =
            ().chain(ConnectProxyConnector::default())
                .chain(TcpConnector::default())
                .chain(TlsConnector::new(client_config(extra_roots)));
        let resolver = GateResolver { inner: DefaultResolver::default(), connect_to };
        HttpClient { agent: Agent::with_parts(config, connector, resolver), proxies }
    }

    /// GETs `url` within `budget`, following same-origin redirects. `headers` go to every hop
    /// (all hops share the origin).
    pub fn get(&self, url: &str, budget: Duration, headers: &[(&str, String)]) -> Result<Fetched, FetchError> {
        let started = Instant::now();
        let origin = url::split(url).map_err(|p| FetchError::Protocol(format!("bad URL: {p}")))?.origin();
        let mut current = url.to_string();
        let mut visited = vec![current.clone()];
        loop {
            let left = budget.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(FetchError::Timeout(format!("no answer within {}", crate::report::secs(budget))));
            }
            let fetched = self.get_once(&current, left, headers)?;
            if !matches!(fetched.status, 301 | 302 | 303 | 307 | 308) {
                return Ok(fetched);
            }
            let location = fetched.location.clone().ok_or_else(|| {
                FetchError::Redirect(format!("HTTP {} redirect without a Location header", fetched.status))
            })?;
            let next = resolve_location(&current, &location)
                .map_err(|why| FetchError::Redirect(format!("redirect to {:?}: {why}", url::redact(&location))))?;
            let next_parts = url::split(&next)
                .map_err(|p| FetchError::Redirect(format!("redirect to {:?}: {p}", url::redact(&next))))?;
            if current.starts_with("https://") && next_parts.scheme == "http" {
                return Err(FetchError::Redirect(format!(
                    "refused redirect from https to plain http ({})",
                    url::redact(&next)
                )));
            }
            if next_parts.origin() != origin {
                return Err(FetchError::Redirect(format!(
                    "refused redirect to another origin ({}); point --discovery-url at the final location",
                    url::redact(&next)
                )));
            }
            if visited.contains(&next) {
                return Err(FetchError::Redirect(format!("redirect loop at {}", url::redact(&next))));
            }
            if visited.len() > MAX_REDIRECTS {
                return Err(FetchError::Redirect(format!("more than {MAX_REDIRECTS} redirects")));
            }
            visited.push(next.clone());
            current = next;
        }
    }

    fn get_once(&self, url: &str, budget: Duration, headers: &[(&str, String)]) -> Result<Fetched, FetchError> {
        let parts = url::split(url).map_err(|p| FetchError::Protocol(format!("bad URL: {p}")))?;
        let proxy = self.proxies.for_url(&parts).map(|c| c.proxy.clone());
        let host = parts.bare_host().to_string();
        let mut request = self.agent.get(url).config().timeout_global(Some(budget)).proxy(proxy).build();
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request.call().map_err(|e| classify(e, &host, Phase::Headers, budget))?;
        let status = response.status().as_u16();
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let content_type = header("content-type");
        let location = header("location");
        let body = response
            .body_mut()
            .with_config()
            .limit(BODY_LIMIT)
            .read_to_vec()
            .map_err(|e| classify(e, &host, Phase::Body, budget))?;
        Ok(Fetched { status, content_type, location, body, url: url.to_string() })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Headers,
    Body,
}

/// Maps ureq's errors onto the failure kinds a user can act on.
fn classify(e: ureq::Error, host: &str, phase: Phase, budget: Duration) -> FetchError {
    let in_body = phase == Phase::Body;
    match e {
        ureq::Error::Timeout(which) => FetchError::Timeout(if in_body {
            format!("body not complete within {} (server too slow)", crate::report::secs(budget))
        } else {
            format!("no answer within {} ({which})", crate::report::secs(budget))
        }),
        ureq::Error::Rustls(error) => FetchError::Tls { host: host.to_string(), error },
        ureq::Error::Tls(msg) => FetchError::TlsOther(msg.to_string()),
        ureq::Error::BodyExceedsLimit(_) => {
            FetchError::Body(format!("body larger than {} KiB: not a discovery document", BODY_LIMIT / 1024))
        }
        ureq::Error::HostNotFound => FetchError::Dns(format!("{host} has no address")),
        ureq::Error::Io(io) => {
            if let Some(dns) = io.get_ref().and_then(|i| i.downcast_ref::<DnsFailure>()) {
                return FetchError::Dns(dns.0.clone());
            }
            if let Some(tls) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                return FetchError::Tls { host: host.to_string(), error: tls.clone() };
            }
            match io.kind() {
                io::ErrorKind::ConnectionRefused if !in_body => FetchError::Refused(host.to_string()),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => FetchError::Timeout(format!("timed out: {io}")),
                _ if in_body => FetchError::Body(format!("body cut short: {io}")),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => {
                    FetchError::Connect(format!("connection closed before a response: {io}"))
                }
                _ => FetchError::Connect(format!("cannot connect: {io}")),
            }
        }
        other if in_body => FetchError::Body(format!("body cut short: {}", url::redact(&other.to_string()))),
        ureq::Error::ConnectionFailed => FetchError::Connect("connection failed".into()),
        ureq::Error::Protocol(p) => FetchError::Protocol(format!("malformed HTTP response: {p}")),
        other => FetchError::Connect(url::redact(&other.to_string())),
    }
}

/// Resolves a Location header against the URL that sent it (RFC 3986 §5.2, the common forms).
pub fn resolve_location(base: &str, location: &str) -> Result<String, &'static str> {
    let location = location.trim();
    if location.is_empty() {
        return Err("empty Location");
    }
    if location.contains("://") {
        return Ok(location.to_string());
    }
    let parts = url::split(base).map_err(|_| "base URL unusable")?;
    let origin = format!("{}://{}", parts.scheme, parts.authority);
    if let Some(rest) = location.strip_prefix("//") {
        return Ok(format!("{}://{rest}", parts.scheme));
    }
    if location.starts_with('/') {
        return Ok(format!("{origin}{location}"));
    }
    if location.starts_with('?') {
        return Ok(format!("{origin}{}{location}", parts.path));
    }
    let dir = parts.path.rfind('/').map_or("/", |i| &parts.path[..=i]);
    Ok(format!("{origin}{dir}{location}"))
}

#[cfg(test)]
mod tests {
    use super::resolve_location;

    #[test]
    fn locations_resolve_against_the_base() {
        let base = "https://h:8443/realms/x/.well-known/openid-configuration";
        assert_eq!(resolve_location(base, "https://o/p").unwrap(), "https://o/p");
        assert_eq!(resolve_location(base, "//o/p").unwrap(), "https://o/p");
        assert_eq!(resolve_location(base, "/a").unwrap(), "https://h:8443/a");
        assert_eq!(resolve_location(base, "b").unwrap(), "https://h:8443/realms/x/.well-known/b");
        assert_eq!(resolve_location("https://h", "b").unwrap(), "https://h/b");
        assert!(resolve_location(base, " ").is_err());
    }
}
