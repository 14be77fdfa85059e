//! A real local provider on loopback whose behaviour each test scripts: TLS or plain, answering
//! documents, statuses and redirects, or misbehaving (hanging, dripping, resetting).
//!
//! Every listener binds port 0 and reports the port it got, so parallel tests never race for a
//! port. A port that must refuse connections first (a provider that is not up yet) is a
//! [`Reserved`] socket: bound, so no one else takes it, but not listening until told to.

use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where the OIDC document lives under an issuer.
pub const WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// What the provider saw.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// Read to its Content-Length, so that closing never resets a client still sending.
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// How the provider answers one request.
pub enum Reply {
    /// A complete response.
    Response { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// These bytes, then close.
    Raw(Vec<u8>),
    /// Keep the connection open and say nothing.
    Hang,
    /// Headers, then one body byte every `every`, forever.
    Drip { every: Duration },
    /// A chunked body that never ends.
    Endless,
    /// `text/event-stream`: an MCP server's SSE stream, a comment every 100 ms, forever.
    EventStream,
    /// Part of a body, then a TCP reset.
    ResetMidBody,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply::with_headers(status, &[("Content-Type", "application/json")], body)
    }

    pub fn text(status: u16, body: &str) -> Reply {
        Reply::with_headers(status, &[("Content-Type", "text/html")], body)
    }

    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::with_headers(status, &[("Location", location)], "")
    }

    pub fn with_headers(status: u16, headers: &[(&str, &str)], body: impl Into<String>) -> Reply {
        let headers = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        Reply::Response { status, headers, body: body.into().into_bytes() }
    }
}

pub type Handler = Arc<dyn Fn(&Request, usize) -> Reply + Send + Sync>;

/// A handler from a closure.
pub fn reply(f: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Handler {
    Arc::new(f)
}

/// Serves `body` (status 200) at `path` and 404 elsewhere, as a provider does.
pub fn serve_at(path: &str, body: String) -> Handler {
    let path = path.to_string();
    reply(move |req, _| {
        if req.path == path {
            Reply::json(200, body.clone())
        } else {
            Reply::json(404, r#"{"error":"Realm does not exist"}"#)
        }
    })
}

/// How the listener treats a new connection before HTTP.
#[derive(Clone)]
pub enum Mode {
    Tls(Arc<rustls::ServerConfig>),
    /// Plain HTTP, no TLS (an in-cluster service).
    Plain,
    /// Accept TCP, then never speak (a stuck TLS terminator).
    Silent,
    /// Write these bytes as soon as a connection arrives, whatever it sends, then close (a
    /// plain-HTTP server answering a TLS hello with 400).
    Greeting(Vec<u8>),
}

/// A loopback port that is bound but not listening: connections are refused until
/// [`Reserved::listen`], and no other test can take the port meanwhile.
pub struct Reserved {
    socket: Socket,
    pub port: u16,
}

impl Reserved {
    pub fn new() -> Reserved {
        Reserved::on(SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    pub fn v6() -> Reserved {
        Reserved::on("[::1]:0".parse().unwrap())
    }

    fn on(addr: SocketAddr) -> Reserved {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None).unwrap();
        socket.bind(&SockAddr::from(addr)).unwrap();
        let port = socket.local_addr().unwrap().as_socket().unwrap().port();
        Reserved { socket, port }
    }

    /// `https://localhost:PORT{path}`.
    pub fn issuer(&self, path: &str) -> String {
        issuer_at("localhost", self.port, path)
    }

    /// Starts serving on the reserved port.
    pub fn listen(self, mode: Mode, handler: Handler) -> Provider {
        self.socket.listen(128).unwrap();
        Provider::serve(self.socket.into(), mode, handler)
    }

    /// The socket, for a peer process to listen on (see `tests/peer`): inherited as this fd.
    pub fn into_inheritable_fd(self) -> Socket {
        self.socket.set_cloexec(false).unwrap();
        self.socket
    }
}

/// `https://HOST:PORT{path}`.
pub fn issuer_at(host: &str, port: u16, path: &str) -> String {
    format!("https://{host}:{port}{path}")
}

/// A local provider on loopback. Stops when dropped.
pub struct Provider {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicUsize>,
    pub seen: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl Provider {
    /// A provider on a port of its own.
    pub fn start(mode: Mode, handler: Handler) -> Provider {
        Reserved::new().listen(mode, handler)
    }

    /// A provider whose handler is made from its issuer `https://localhost:PORT{path}`.
    pub fn for_issuer(mode: Mode, path: &str, handler: impl FnOnce(&str) -> Handler) -> (Provider, String) {
        let slot = Reserved::new();
        let issuer = slot.issuer(path);
        (slot.listen(mode, handler(&issuer)), issuer)
    }

    fn serve(listener: TcpListener, mode: Mode, handler: Handler) -> Provider {
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s, st) = (requests.clone(), seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(tcp) = conn else { continue };
                let (mode, handler, r, s, st) = (mode.clone(), handler.clone(), r.clone(), s.clone(), st.clone());
                std::thread::spawn(move || serve_connection(tcp, mode, handler, r, s, st));
            }
        });
        Provider { addr, requests, seen, stop }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `https://localhost:PORT{path}`.
    pub fn issuer(&self, path: &str) -> String {
        issuer_at("localhost", self.port(), path)
    }

    pub fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// The paths requested so far, in order.
    pub fn paths(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|r| r.path.clone()).collect()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

fn serve_connection(
    tcp: TcpStream,
    mode: Mode,
    handler: Handler,
    requests: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
) {
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(30)));
    let raw = tcp.try_clone().unwrap();
    let stream: Box<dyn Stream> = match mode {
        Mode::Silent => return hang(&stop),
        Mode::Greeting(bytes) => {
            let mut tcp = tcp;
            let mut hello = [0u8; 512];
            let _ = tcp.read(&mut hello);
            let _ = tcp.write_all(&bytes);
            return;
        }
        Mode::Tls(config) => Box::new(rustls::StreamOwned::new(rustls::ServerConnection::new(config).unwrap(), tcp)),
        Mode::Plain => Box::new(tcp),
    };
    let mut reader = BufReader::new(stream);
    let Some(req) = read_request(&mut reader) else { return };
    let n = requests.fetch_add(1, Ordering::SeqCst);
    seen.lock().unwrap().push(req.clone());
    let reply = handler(&req, n);
    write_reply(reader.into_inner(), reply, &raw, &stop);
}

fn hang(stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let method = line.split_whitespace().next().unwrap_or("").to_string();
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers: Vec<(String, String)> = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            let mut request = Request { method, path, headers, body: Vec::new() };
            let length = request.header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
            request.body = vec![0; length];
            return reader.read_exact(&mut request.body).ok().map(|_| request);
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
}

fn write_reply(mut out: Box<dyn Stream>, reply: Reply, raw: &TcpStream, stop: &AtomicBool) {
    let _ = match reply {
        Reply::Response { status, headers, body } => {
            let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            out.write_all(head.as_bytes()).and_then(|_| out.write_all(&body)).and_then(|_| out.flush())
        }
        Reply::Raw(bytes) => out.write_all(&bytes).and_then(|_| out.flush()),
        Reply::Hang => {
            hang(stop);
            Ok(())
        }
        Reply::Drip { every } => {
            let _ =
                out.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n");
            let _ = out.flush();
            while !stop.load(Ordering::SeqCst) && out.write_all(b" ").and_then(|_| out.flush()).is_ok() {
                std::thread::sleep(every);
            }
            Ok(())
        }
        Reply::Endless => {
            let _ = out
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
            let chunk = format!("{:x}\r\n{}\r\n", 4096, " ".repeat(4096));
            while !stop.load(Ordering::SeqCst) && out.write_all(chunk.as_bytes()).is_ok() {}
            Ok(())
        }
        Reply::EventStream => {
            let _ = out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n",
            );
            while !stop.load(Ordering::SeqCst)
                && out.write_all(b"8\r\n: ping\n\n\r\n").and_then(|_| out.flush()).is_ok()
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(())
        }
        Reply::ResetMidBody => {
            let _ = out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"issuer\":",
            );
            let _ = out.flush();
            std::thread::sleep(Duration::from_millis(50));
            // SO_LINGER 0 makes close() send a reset.
            let _ = socket2::SockRef::from(raw).set_linger(Some(Duration::ZERO));
            drop(out);
            let _ = raw.shutdown(Shutdown::Both);
            Ok(())
        }
    };
}
