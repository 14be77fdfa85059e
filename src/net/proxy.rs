//! The connection through a proxy, as Go's `net/http` Transport makes it (`dialConn`): TCP to
//! the proxy, TLS to it first for an `https://` proxy (verified with the gate's own trust, as
//! Go verifies it with the client's), then
//!
//! - to an http proxy, for an https URL: `CONNECT host:port`, Basic `Proxy-Authorization` when
//!   the proxy URL has credentials, and only a `200` opens the tunnel (Go's rule);
//! - to an http proxy, for an http URL: the request itself in absolute form
//!   (`GET http://host:port/path`), with the same header;
//! - to a SOCKS5 proxy (`socks5` or `socks5h`, the same in Go): the host name, not an address
//!   ([`socks`]).
//!
//! Over the tunnel the TLS session to the provider is checked against the provider's name, as
//! without a proxy. Which URL takes which route is the configuration's rule
//! (`go_proxy::ProxySettings::route`); a proxy that fails says so, naming the proxy (never its
//! credentials) and the variable that set it.

use super::fetch_error::{ProxyFailure, refused};
use super::socks;
use super::tls::{self, TlsConnector, TlsSettings};
use crate::go_proxy::{ProxyChoice, ProxyKind, ProxySettings, Route};
use crate::progress::{Progress, Stage};
use crate::url;
use std::io::{self, Read, Write};
use std::sync::Arc;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, NextTimeout, TcpConnector, Transport, TransportAdapter,
};

fn failure(kind: io::ErrorKind, message: String) -> ureq::Error {
    ureq::Error::Io(io::Error::new(kind, ProxyFailure(message)))
}

/// The target's scheme, host (without brackets) and port, as the route is decided on them.
pub(crate) fn target(uri: &Uri) -> (&str, &str, u16) {
    let scheme = uri.scheme_str().unwrap_or("https");
    let port = uri.port_u16().unwrap_or_else(|| url::default_port(scheme));
    (scheme, url::bare_host(uri.host().unwrap_or_default()), port)
}

/// First in the chain: for a URL Go would send through a proxy, the connection to the proxy and
/// through it; for any other, nothing (the TCP connector takes over).
#[derive(Debug)]
pub(crate) struct ProxyConnector {
    proxies: Arc<ProxySettings>,
    tls: TlsSettings,
    progress: Arc<Progress>,
}

impl ProxyConnector {
    pub(crate) fn new(proxies: Arc<ProxySettings>, tls: TlsSettings, progress: Arc<Progress>) -> Self {
        ProxyConnector { proxies, tls, progress }
    }
}

impl Connector<()> for ProxyConnector {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, _: Option<()>) -> Result<Option<Self::Out>, ureq::Error> {
        let (scheme, host, port) = target(details.uri);
        let proxy = match self.proxies.route(scheme, host, port) {
            Ok(Route::Direct(_)) => return Ok(None),
            Ok(Route::Proxy(proxy)) => proxy,
            Err(e) => return Err(failure(io::ErrorKind::InvalidInput, e.to_string())),
        };
        let name = format!("proxy {} ({})", proxy.display, proxy.variable);
        let transport = self.reach(proxy, &name, details)?;
        self.progress.enter(Stage::AwaitingResponse, &name);
        let authority = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
        let tunnel: Box<dyn Transport> = match (proxy.kind, scheme) {
            (ProxyKind::Socks5, _) => {
                let mut io = adapter(transport, details);
                socks::connect(&mut io, host, port, proxy.credentials.as_ref())
                    .map_err(|e| proxy_error(e.into(), &name))?;
                Box::new(Tunnel(io.into_inner()))
            }
            (_, "https") => {
                let mut io = adapter(transport, details);
                http_connect(&mut io, &authority, proxy).map_err(|e| proxy_error(e.into(), &name))?;
                Box::new(Tunnel(io.into_inner()))
            }
            _ => Box::new(AbsoluteForm {
                inner: transport,
                prefix: Some(format!("{scheme}://{authority}")),
                authorization: proxy.credentials.as_ref().map(basic),
            }),
        };
        self.progress.enter(Stage::Connecting, host);
        Ok(Some(tunnel))
    }
}

impl ProxyConnector {
    /// TCP to the proxy, and TLS to it for an https proxy. `name` stands for the proxy in the
    /// stages a timeout reports.
    fn reach(
        &self,
        proxy: &ProxyChoice,
        name: &str,
        details: &ConnectionDetails,
    ) -> Result<Box<dyn Transport>, ureq::Error> {
        let scheme = if proxy.kind == ProxyKind::Https { "https" } else { "http" };
        let host = if proxy.host.contains(':') { format!("[{}]", proxy.host) } else { proxy.host.clone() };
        let uri: Uri = format!("{scheme}://{host}:{}/", proxy.port)
            .parse()
            .map_err(|_| failure(io::ErrorKind::InvalidInput, format!("{name}: not a usable host")))?;
        self.progress.enter(Stage::Resolving, name);
        let addrs = DefaultResolver::default().resolve(&uri, details.config, details.timeout).map_err(|e| match e {
            ureq::Error::Timeout(_) => e,
            other => failure(io::ErrorKind::NotFound, format!("{name}: cannot resolve {}: {other}", proxy.host)),
        })?;
        self.progress.enter(Stage::Connecting, name);
        let at = ConnectionDetails { uri: &uri, addrs, ..clone_details(details) };
        // The same types as the chain's own TCP and TLS connectors: one copy of their code.
        let tcp = TcpConnector::default().connect(&at, None::<Box<dyn Transport>>).map_err(|e| proxy_error(e, name))?;
        if proxy.kind != ProxyKind::Https {
            return tcp
                .map(Transport::boxed)
                .ok_or_else(|| failure(io::ErrorKind::NotConnected, format!("{name}: no connection")));
        }
        // The gate's own TLS connector, with the same verifier: the proxy's certificate is checked
        // for the proxy's name. Its own stages go to a progress of its own.
        self.progress.enter(Stage::TlsHandshake, name);
        let tls = TlsConnector::new(self.tls.clone(), Arc::new(Progress::default()));
        match tls.connect(&at, tcp) {
            Ok(Some(t)) => Ok(t.boxed()),
            Ok(None) => Err(failure(io::ErrorKind::NotConnected, format!("{name}: no TLS session"))),
            // Said as for a provider (never rustls's debug names): the gate checks a proxy's
            // certificate as any server's.
            Err(ureq::Error::Rustls(e)) => Err(failure(
                io::ErrorKind::InvalidData,
                format!("TLS to {name} failed: {}", tls::explain(&proxy.host, &e)),
            )),
            Err(e) => Err(proxy_error(e, &format!("TLS to {name}"))),
        }
    }
}

/// ureq's details for the same exchange, to connect to the proxy with.
fn clone_details<'a>(d: &ConnectionDetails<'a>) -> ConnectionDetails<'a> {
    ConnectionDetails {
        uri: d.uri,
        addrs: d.addrs.clone(),
        config: d.config,
        request_level: d.request_level,
        resolver: d.resolver,
        now: d.now,
        timeout: d.timeout,
        current_time: d.current_time.clone(),
        run_connector: d.run_connector.clone(),
        register_shutdown: d.register_shutdown.clone(),
    }
}

fn adapter(transport: Box<dyn Transport>, details: &ConnectionDetails) -> TransportAdapter {
    let mut io = TransportAdapter::new(transport, details.current_time.clone());
    io.set_timeout(details.timeout);
    io
}

/// Whether an error is the time budget running out: left as it is, so that the failure says at
/// which stage (the progress names the proxy).
fn is_timeout(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => {
            matches!(io.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock)
                || io.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()).is_some_and(is_timeout)
        }
        _ => false,
    }
}

/// A failure on the way through the proxy called `name`, said as one sentence about it. A
/// timeout stays a timeout: the progress already names the proxy.
fn proxy_error(e: ureq::Error, name: &str) -> ureq::Error {
    if is_timeout(&e) {
        return e;
    }
    let (kind, detail) = match &e {
        ureq::Error::Io(io) => (
            io.kind(),
            match (io.get_ref(), io.kind()) {
                (Some(inner), _) if inner.is::<ProxyFailure>() => inner.to_string(),
                (_, io::ErrorKind::ConnectionRefused) => "refused the connection (is it running, on that port?)".into(),
                (_, io::ErrorKind::UnexpectedEof) => "closed the connection during its handshake".into(),
                _ => format!("failed: {io}"),
            },
        ),
        other => (io::ErrorKind::Other, format!("failed: {other}")),
    };
    failure(kind, format!("{name} {detail}"))
}

/// `CONNECT host:port`, as Go writes it, and the proxy's answer: `200` opens the tunnel, anything
/// else is the proxy's refusal (Go: the status text becomes the error).
fn http_connect(io: &mut TransportAdapter, authority: &str, proxy: &ProxyChoice) -> io::Result<()> {
    let mut head = format!(
        "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: wait-for-idp/{}\r\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(credentials) = &proxy.credentials {
        head.push_str(&format!("Proxy-Authorization: {}\r\n", basic(credentials)));
    }
    head.push_str("\r\n");
    io.write_all(head.as_bytes())?;
    io.flush()?;
    let mut answer = Vec::new();
    let mut byte = [0u8];
    // The head ends at an empty line, its line ends CRLF or LF alone: Go's textproto takes both,
    // and opens the tunnel on `HTTP/1.1 200 OK\n\n`.
    while !(answer.ends_with(b"\n\n") || answer.ends_with(b"\n\r\n")) {
        if answer.len() > 64 * 1024 {
            return Err(refused("answered CONNECT with a header over 64 KiB".into()));
        }
        if io.read(&mut byte)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
        }
        answer.push(byte[0]);
    }
    let status_line = String::from_utf8_lossy(&answer);
    let status_line = status_line.lines().next().unwrap_or_default();
    let mut words = status_line.splitn(3, ' ');
    let (version, code) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    if !version.starts_with("HTTP/") {
        return Err(refused("did not answer CONNECT in HTTP".into()));
    }
    if code != "200" {
        let status = status_line[version.len()..].trim();
        // Cut on a character boundary: `get(..200)` inside a character gave back all of it.
        let status = crate::screen_text::bound(status, 200);
        return Err(refused(format!("answered CONNECT {authority} with {status}")));
    }
    Ok(())
}

/// `Basic` credentials, as Go's `proxyAuth` makes them. The credentials were remembered as
/// secrets when the settings were read (`go_proxy`), in this form too: a proxy's error
/// page may echo the header, which [`crate::token::scrub`] then finds.
fn basic((user, password): &(String, String)) -> String {
    format!("Basic {}", crate::token::basic_credentials(user, password))
}

/// A tunnel through a proxy: plain to the layers above even when TLS to the proxy carries it,
/// so that the TLS connector starts the provider's own session inside.
#[derive(Debug)]
struct Tunnel(Box<dyn Transport>);

impl Transport for Tunnel {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.0.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.0.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.0.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }

    fn is_tls(&self) -> bool {
        false
    }
}

/// An http URL through an http proxy: the request line gets the absolute form
/// (`GET http://host:port/path HTTP/1.1`) and the `Proxy-Authorization` header, as Go sends
/// them; the rest passes as it is.
#[derive(Debug)]
struct AbsoluteForm {
    inner: Box<dyn Transport>,
    /// `http://host:port`, until the request head has gone out.
    prefix: Option<String>,
    authorization: Option<String>,
}

impl Transport for AbsoluteForm {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let Some(prefix) = self.prefix.take() else { return self.inner.transmit_output(amount, timeout) };
        let head = self.inner.buffers().output()[..amount].to_vec();
        let rewritten = absolute_form(&head, &prefix, self.authorization.as_deref());
        // The output buffer (ureq's 128 KiB) holds a request head and the few bytes added.
        let output = self.inner.buffers().output();
        let Some(room) = output.get_mut(..rewritten.len()) else {
            return Err(ureq::Error::Io(io::Error::other(ProxyFailure("request head too large".into()))));
        };
        room.copy_from_slice(&rewritten);
        self.inner.transmit_output(rewritten.len(), timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        false
    }
}

/// The request head with `prefix` before its origin-form target and the authorization header
/// after its request line.
fn absolute_form(head: &[u8], prefix: &str, authorization: Option<&str>) -> Vec<u8> {
    let Some(space) = head.iter().position(|b| *b == b' ') else { return head.to_vec() };
    let Some(line_end) = head.windows(2).position(|w| w == b"\r\n") else { return head.to_vec() };
    let mut out = Vec::with_capacity(head.len() + prefix.len() + 64);
    out.extend_from_slice(&head[..=space]);
    if head.get(space + 1) == Some(&b'/') {
        out.extend_from_slice(prefix.as_bytes());
    }
    out.extend_from_slice(&head[space + 1..line_end + 2]);
    if let Some(value) = authorization {
        out.extend_from_slice(format!("Proxy-Authorization: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(&head[line_end + 2..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_as_go_encodes_them() {
        assert_eq!(basic(&("Aladdin".into(), "open sesame".into())), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(basic(&("a".into(), String::new())), "Basic YTo=");
        assert_eq!(basic(&(String::new(), String::new())), "Basic Og==");
    }

    #[test]
    fn the_request_line_takes_the_absolute_form() {
        let head = b"GET /.well-known/x?a=1 HTTP/1.1\r\nhost: idp.test:8080\r\n\r\n";
        let out = absolute_form(head, "http://idp.test:8080", Some("Basic eA=="));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET http://idp.test:8080/.well-known/x?a=1 HTTP/1.1\r\nProxy-Authorization: Basic eA==\r\nhost: \
             idp.test:8080\r\n\r\n"
        );
    }
}
