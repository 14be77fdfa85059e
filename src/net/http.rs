//! One bounded HTTP GET: the agent, its TLS roots, its limits and its redirect rules.
//!
//! Every byte from the network is treated as hostile: the whole exchange, DNS to last body byte
//! and every redirect hop, runs under one time budget; response headers stop at [`HEADER_LIMIT`]
//! and bodies at [`BODY_LIMIT`], decoded; redirects are followed by hand ([`super::redirect`]:
//! the token never leaves the origin, and never downgrades to plain http). The request is the one
//! Go's transport writes: `Accept-Encoding: gzip` (the body decoded), and the Host header as the
//! URL gives it. Each fetch records its stage in a [`Progress`], so that whoever gives up waiting
//! on it can say where it hung.

use super::fetch_error::{BODY_LIMIT, FetchError, HEADER_LIMIT, body_failure, classify, dns_error, exhausted};
use super::plain::PlainWatch;
use super::proxy::{self, ProxyConnector};
use super::redirect::{Chain, Request};
use super::response::{Fetched, read};
use super::tls::{TlsConnector, TlsSettings};
use crate::config::{ConnectTo, Network};
use crate::go_proxy::{ProxySettings, Route};
use crate::progress::{Progress, Stage};
use crate::url;
use std::sync::Arc;
use std::time::{Duration, Instant};
use ureq::Agent;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{Connector, NextTimeout, TcpConnector};

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
        let mut chain = Chain::new(url, request.redirects).map_err(bad_url)?;
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
            current = chain.follow(&current, &fetched).map_err(FetchError::Redirect)?;
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
        let parts = url::split(target).map_err(bad_url)?;
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
        read(response, target, &host, progress, asks_gzip, BODY_LIMIT)
            .map_err(|unread| body_failure(unread, &host, progress, budget))
    }
}

/// A URL the exchange cannot request, said as a fetch failure.
fn bad_url(problem: url::Problem) -> FetchError {
    FetchError::Protocol(format!("bad URL: {problem}"))
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
