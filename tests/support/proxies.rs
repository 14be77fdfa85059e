//! Local proxies of each kind Go uses, on loopback: an http proxy (CONNECT for https URLs, the
//! absolute form for http ones), the same inside TLS (an `https://` proxy), and a SOCKS5 server,
//! each optionally asking for credentials. Each is the only one that knows the provider's name:
//! it maps `idp.test` to 127.0.0.1, so a test whose provider is `idp.test` passes only through
//! the proxy (loopback hosts are never proxied, so a provider on `localhost` proves nothing).

use super::pki::Chain;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The name only the proxies resolve.
pub const PROXIED_NAME: &str = "idp.test";

#[derive(Clone)]
enum Kind {
    Http,
    Https(Arc<rustls::ServerConfig>),
    Socks5,
}

/// A proxy that records what it was asked for: `CONNECT idp.test:PORT`, `GET http://…`, or
/// `SOCKS5 name idp.test:PORT` (`address` when the client sent an address), each followed by
/// ` auth=VALUE` when credentials came with it (the Basic header's value, or `user:password`).
pub struct TestProxy {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone)]
struct Behaviour {
    kind: Kind,
    /// Credentials it demands (`user`, `password`).
    credentials: Option<(String, String)>,
    /// The status it answers CONNECT with instead of 200.
    connect_status: Option<&'static str>,
    /// Its answer to a CONNECT it opens.
    established: &'static str,
}

const ESTABLISHED: &str = "HTTP/1.1 200 Connection established\r\n\r\n";

impl TestProxy {
    pub fn http() -> TestProxy {
        TestProxy::start(Behaviour {
            kind: Kind::Http,
            credentials: None,
            connect_status: None,
            established: ESTABLISHED,
        })
    }

    /// An http proxy that answers CONNECT with `status` (e.g. `403 Forbidden`).
    pub fn http_refusing(status: &'static str) -> TestProxy {
        TestProxy::start(Behaviour {
            kind: Kind::Http,
            credentials: None,
            connect_status: Some(status),
            established: ESTABLISHED,
        })
    }

    /// An http proxy that opens tunnels with this answer (e.g. `HTTP/1.1 200 OK\n\n`, LF only).
    pub fn http_established_with(answer: &'static str) -> TestProxy {
        TestProxy::start(Behaviour { kind: Kind::Http, credentials: None, connect_status: None, established: answer })
    }

    /// An `https://` proxy with this certificate chain.
    pub fn https(chain: Chain) -> TestProxy {
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain.0, chain.1)
            .unwrap();
        TestProxy::start(Behaviour {
            kind: Kind::Https(Arc::new(config)),
            credentials: None,
            connect_status: None,
            established: ESTABLISHED,
        })
    }

    /// A SOCKS5 server, demanding these credentials if any.
    pub fn socks5(credentials: Option<(&str, &str)>) -> TestProxy {
        let credentials = credentials.map(|(u, p)| (u.to_string(), p.to_string()));
        TestProxy::start(Behaviour { kind: Kind::Socks5, credentials, connect_status: None, established: ESTABLISHED })
    }

    fn start(behaviour: Behaviour) -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(client) = conn else { continue };
                let (behaviour, log) = (behaviour.clone(), log.clone());
                std::thread::spawn(move || serve(client, &behaviour, &log));
            }
        });
        TestProxy { addr, seen }
    }

    /// `scheme://[userinfo@]127.0.0.1:PORT`.
    pub fn url(&self, scheme: &str, userinfo: &str) -> String {
        format!("{scheme}://{userinfo}{}", self.addr)
    }

    /// What it was asked for so far.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Either side of a proxied connection.
trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

fn serve(client: TcpStream, behaviour: &Behaviour, log: &Mutex<Vec<String>>) {
    let raw = client.try_clone().unwrap();
    let _ = raw.set_read_timeout(Some(Duration::from_secs(30)));
    let mut stream: Box<dyn Stream> = match &behaviour.kind {
        Kind::Https(config) => {
            Box::new(rustls::StreamOwned::new(rustls::ServerConnection::new(config.clone()).unwrap(), client))
        }
        Kind::Http | Kind::Socks5 => Box::new(client),
    };
    let upstream = match behaviour.kind {
        Kind::Socks5 => socks5(&mut stream, behaviour, log),
        _ => http(&mut stream, behaviour, log),
    };
    if let Some(upstream) = upstream {
        pump(stream, &raw, upstream);
    }
}

/// The address a proxy connects to for `host:port`: the provider's name is loopback here.
fn upstream(host: &str, port: u16) -> Option<TcpStream> {
    let host = if host == PROXIED_NAME { "127.0.0.1" } else { host };
    TcpStream::connect((host, port)).ok()
}

fn http(client: &mut Box<dyn Stream>, behaviour: &Behaviour, log: &Mutex<Vec<String>>) -> Option<TcpStream> {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let line = head.lines().next().unwrap_or_default().to_string();
    let auth = head.lines().find_map(|l| l.strip_prefix("Proxy-Authorization: ")).map(str::to_string);
    log.lock().unwrap().push(match &auth {
        Some(a) => format!("{} auth={a}", line.trim_end_matches(" HTTP/1.1")),
        None => line.trim_end_matches(" HTTP/1.1").to_string(),
    });
    let target = line.split(' ').nth(1)?.to_string();
    if let Some(status) = behaviour.connect_status {
        let _ = client.write_all(format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").as_bytes());
        return None;
    }
    if let Some(authority) = line.strip_prefix("CONNECT ").and_then(|l| l.split(' ').next()) {
        let (host, port) = authority.rsplit_once(':')?;
        let Some(up) = upstream(host.trim_matches(['[', ']']), port.parse().ok()?) else {
            let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
            return None;
        };
        client.write_all(behaviour.established.as_bytes()).ok()?;
        client.flush().ok()?;
        return Some(up);
    }
    // The absolute form: forward the request in origin form, as a proxy does.
    let rest = target.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = authority.rsplit_once(':').unwrap_or((authority, "80"));
    let mut up = upstream(host, port.parse().ok()?)?;
    let method = line.split(' ').next().unwrap_or("GET");
    let headers: String = head.split_once("\r\n").map(|x| x.1).unwrap_or_default().to_string();
    let headers: String = headers.split_inclusive("\r\n").filter(|l| !l.starts_with("Proxy-Authorization:")).collect();
    up.write_all(format!("{method} {path} HTTP/1.1\r\n{headers}").as_bytes()).ok()?;
    Some(up)
}

fn socks5(client: &mut Box<dyn Stream>, behaviour: &Behaviour, log: &Mutex<Vec<String>>) -> Option<TcpStream> {
    let mut b = [0u8; 2];
    client.read_exact(&mut b).ok()?;
    let mut methods = vec![0u8; usize::from(b[1])];
    client.read_exact(&mut methods).ok()?;
    let mut auth = None;
    if let Some((user, password)) = &behaviour.credentials {
        if !methods.contains(&2) {
            let _ = client.write_all(&[5, 0xff]);
            return None;
        }
        client.write_all(&[5, 2]).ok()?;
        let given = (read_string(client, 1)?, read_string(client, 0)?);
        let ok = (&given.0, &given.1) == (user, password);
        auth = Some(format!("{}:{}", given.0, given.1));
        client.write_all(&[1, if ok { 0 } else { 1 }]).ok()?;
        if !ok {
            log.lock().unwrap().push(format!("SOCKS5 auth refused auth={}", auth.unwrap_or_default()));
            return None;
        }
    } else {
        client.write_all(&[5, 0]).ok()?;
    }
    let mut req = [0u8; 4];
    client.read_exact(&mut req).ok()?;
    let (kind, host) = match req[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).ok()?;
            ("address", std::net::Ipv4Addr::from(ip).to_string())
        }
        4 => {
            let mut ip = [0u8; 16];
            client.read_exact(&mut ip).ok()?;
            ("address", std::net::Ipv6Addr::from(ip).to_string())
        }
        _ => ("name", read_string(client, 0)?),
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).ok()?;
    let port = u16::from_be_bytes(port);
    let auth = auth.map(|a| format!(" auth={a}")).unwrap_or_default();
    log.lock().unwrap().push(format!("SOCKS5 {kind} {host}:{port}{auth}"));
    let Some(up) = upstream(&host, port) else {
        let _ = client.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]);
        return None;
    };
    client.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0]).ok()?;
    Some(up)
}

/// A length-prefixed string, after skipping `skip` bytes (RFC 1929's version).
fn read_string(client: &mut Box<dyn Stream>, skip: usize) -> Option<String> {
    let mut buf = vec![0u8; skip + 1];
    client.read_exact(&mut buf).ok()?;
    let mut s = vec![0u8; usize::from(buf[skip])];
    client.read_exact(&mut s).ok()?;
    String::from_utf8(s).ok()
}

/// Copies both ways until either side closes. One thread, polling both sides, since a TLS
/// session cannot be split between two threads.
fn pump(mut client: Box<dyn Stream>, raw: &TcpStream, mut up: TcpStream) {
    let poll = Some(Duration::from_millis(5));
    let _ = raw.set_read_timeout(poll);
    let _ = up.set_read_timeout(poll);
    let mut buf = [0u8; 16 * 1024];
    let waiting =
        |e: &std::io::Error| matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
    loop {
        match client.read(&mut buf) {
            Ok(0) => return,
            Ok(n) if up.write_all(&buf[..n]).is_err() => return,
            Ok(_) => {}
            Err(e) if waiting(&e) => {}
            Err(_) => return,
        }
        match up.read(&mut buf) {
            Ok(0) => return,
            Ok(n) if client.write_all(&buf[..n]).and_then(|()| client.flush()).is_err() => return,
            Ok(_) => {}
            Err(e) if waiting(&e) => {}
            Err(_) => return,
        }
    }
}
