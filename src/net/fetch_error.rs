//! Why a fetch got no complete response ([`FetchError`]), in the words users read, and the one
//! place ureq's errors become one ([`classify`]); with the bounds those words name (the body's,
//! the response head's) and the marks a failure carries through ureq to be told apart (the
//! resolver's, the proxy's). Below the exchange ([`super::http`]) and the proxy connectors
//! ([`super::proxy`], [`super::socks`]), which all say their failures here; the response and the
//! redirects return their own problems ([`Unread`], [`RefusedRedirect`]) for the exchange to say
//! as one.

use super::gzip::GzipProblem;
use super::plain::{Http2Only, http2_only};
use super::redirect::RefusedRedirect;
use super::response::Unread;
use super::tls;
use crate::human::secs;
use crate::progress::{Progress, Stage};
use crate::url;
use std::fmt;
use std::io;
use std::time::Duration;

/// Largest body accepted, after decoding. Real discovery documents are 1-10 KiB, but
/// oauth2-proxy reads a body without a bound: this one only stops a server that never ends
/// (a listed difference). The body grows as it comes; nothing near this is allocated ahead.
pub(crate) const BODY_LIMIT: usize = 16 * 1024 * 1024;
/// Largest response head (status line and headers). Go allows 10 MiB (`MaxResponseHeaderBytes`'s
/// default, a listed difference); no provider comes near either.
pub(crate) const HEADER_LIMIT: usize = 1024 * 1024;

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
    /// A local file (the token or a header file, `stage` says which) not read in time: a FIFO
    /// with no writer, a hung mount.
    FileTimedOut {
        stage: Stage,
        path: String,
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

/// The token or header file (`stage` says which) at `path` not read within `after`.
fn file_not_read(f: &mut fmt::Formatter<'_>, stage: Stage, path: &str, after: Duration) -> fmt::Result {
    let which = if stage == Stage::ReadingTokenFile { "token" } else { "header" };
    write!(f, "{which} file {path} not read within {} (a FIFO with no writer, a hung mount)", secs(after))
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::Dns { host, detail } => write!(f, "name resolution of {host} failed: {detail}"),
            FetchError::FileTimedOut { stage, path, after } => file_not_read(f, *stage, path, *after),
            FetchError::TimedOut { stage, host, after } => {
                let budget = *after;
                let after = secs(*after);
                match stage {
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
                    // Made as FileTimedOut; said the same way should one be made here.
                    Stage::ReadingTokenFile | Stage::ReadingHeaderFile => file_not_read(f, *stage, host, budget),
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

/// A body not read whole, said as a fetch failure: ureq's error by [`classify`], gzip's here.
pub(super) fn body_failure(unread: Unread, host: &str, progress: &Progress, budget: Duration) -> FetchError {
    match unread {
        Unread::Read(e) => classify(e, progress, budget),
        Unread::Gzip(GzipProblem::TooLarge { limit }) => FetchError::Body(too_large(limit, " once gzip-decoded")),
        Unread::Gzip(GzipProblem::Invalid(why)) => {
            FetchError::Body(format!("gzip body from {host} not decoded: {why}"))
        }
        // As `read_to_vec` turns a read's error back into ureq's.
        Unread::Gzip(GzipProblem::Read(e)) => classify(ureq::Error::from(e), progress, budget),
    }
}

/// The failure of a body over `limit` bytes, naming the bound.
pub(super) fn too_large(limit: usize, how: &str) -> String {
    format!(
        "body larger than {} MiB{how}: the gate reads no more (oauth2-proxy would read on; no discovery document \
         comes near this)",
        limit / (1024 * 1024)
    )
}

/// What this process ran out of, when `io` says it did: a descriptor limit (EMFILE: the
/// process's `RLIMIT_NOFILE`; ENFILE: the system's), or kernel memory. No provider causes these,
/// and calling them a lookup or a connection that failed sends the operator to the wrong place.
pub(super) fn exhausted(io: &io::Error) -> Option<&'static str> {
    Some(match io.raw_os_error()? {
        libc::EMFILE => "out of file descriptors (RLIMIT_NOFILE)",
        libc::ENFILE => "out of file descriptors (system-wide)",
        libc::ENOMEM | libc::ENOBUFS => "out of kernel memory",
        _ => return None,
    })
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

/// A resolver's failure, as ureq carries it to [`classify`].
pub(super) fn dns_error(host: &str, detail: String) -> ureq::Error {
    ureq::Error::Io(io::Error::other(DnsFailure { host: host.to_string(), detail }))
}

/// A proxy that failed: refused, unreachable, a TLS handshake with it that failed, a CONNECT it
/// answered with anything but 200, a SOCKS server that refused. Travels inside an `io::Error`
/// through ureq to the failure's classification.
#[derive(Debug)]
pub(crate) struct ProxyFailure(pub(crate) String);

impl fmt::Display for ProxyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProxyFailure {}

/// A refusal in a proxy's own protocol, with its words.
pub(super) fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, ProxyFailure(message))
}
