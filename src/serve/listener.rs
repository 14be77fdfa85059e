//! The health listener: HTTP/1.1 from std and poll(2) alone, one request per connection, for the
//! kubelet's probes and a Prometheus scraper on the pod's network.
//!
//! Whatever can reach the pod can reach it, so no client may keep a probe waiting (issue 35: eight
//! connections that dripped a byte every 3 s once held every slot for hours). One thread serves
//! every connection without blocking on any of them: a probe's request is answered as soon as it
//! is read, whatever other connections are doing.
//! - Each connection lives at most [`LIFETIME`] in all (head, answer and the drain after a
//!   refusal): the bound is on its whole life, not on each read, so a byte every few seconds
//!   buys nothing.
//! - Up to [`MAX_CONNECTIONS`] are kept, so a thousand idle ones do not crowd a probe out; past
//!   that, a new connection takes the place of the oldest, so a probe is never turned away.
//! - A head is scanned as it comes and only its request line is kept (at most
//!   [`MAX_REQUEST_LINE`] bytes), so a full house holds about a MiB; a head is at most
//!   [`MAX_HEAD`] bytes, its blank line included, and a body is never read.
//!
//! The answer is made from [`Health`] alone.

use super::health::Health;
use super::metrics::CONTENT_TYPE;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections kept at once, if the open-file limit allows (it is raised to its hard limit for
/// them). Probes come every few seconds and a scrape every 15 s or more, each done in a moment:
/// only clients that hold connections open fill this, and the oldest of them is let go first.
const MAX_CONNECTIONS: usize = 1024;
/// Descriptors left for everything else the gate opens (its own fetches, the trust store).
const SPARE_FILES: usize = 64;
/// The longest request line: `GET /readyz HTTP/1.1` is 20 bytes.
const MAX_REQUEST_LINE: usize = 1024;
/// The longest request head: line, headers and the blank line that ends them.
const MAX_HEAD: usize = 8192;
/// A connection's whole life: the head, the answer and, after a refusal, the drain.
const LIFETIME: Duration = Duration::from_secs(5);
/// At most this much of what follows a refused head is read and dropped before the close.
const DRAIN: usize = 64 * 1024;
/// Connections accepted in a row before those already open get their turn.
const ACCEPTS_PER_ROUND: usize = 64;
/// Connections the kernel may hold for the listener before it accepts them (capped by
/// `net.core.somaxconn`): a burst of connections is queued, not refused.
const BACKLOG: libc::c_int = 1024;

/// Binds `addr` and serves `health` from a thread of its own; returns the bound address.
pub(crate) fn listen(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    // SAFETY: listen(2) on a socket this function owns; a second call only changes the backlog.
    if unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let most = MAX_CONNECTIONS.min(open_files().saturating_sub(SPARE_FILES)).max(8);
    std::thread::Builder::new().name("serve".into()).spawn(move || serve(&listener, &health, most))?;
    Ok(bound)
}

/// The open-file limit, raised to the hard limit first (as Go's runtime does at start).
fn open_files() -> usize {
    // SAFETY: getrlimit/setrlimit on this process with a structure they fill and read.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return MAX_CONNECTIONS;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    }
}

/// Where a connection is.
enum Phase {
    /// The head so far.
    Reading(Head),
    /// The answer, how much of it is sent, and whether it refused the request.
    Writing {
        out: Vec<u8>,
        sent: usize,
        refused: bool,
    },
    /// After a refusal: what the client sent beyond the head would make the close a reset that
    /// can destroy the answer before it is read, so up to [`DRAIN`] bytes of it are taken first.
    Draining(usize),
    Done,
}

/// A request head as it arrives: the request line kept, the rest counted and scanned for the
/// blank line that ends the head, never stored.
#[derive(Default)]
struct Head {
    line: Vec<u8>,
    line_ended: bool,
    len: usize,
    /// The two bytes before the current one.
    last: [u8; 2],
}

impl Head {
    /// Takes the bytes read: the request line once the whole head is in, `Err(status)` to refuse
    /// it, `None` while it is still coming.
    fn take(&mut self, bytes: &[u8]) -> Option<Result<String, u16>> {
        for &b in bytes {
            self.len += 1;
            if !self.line_ended {
                if b == b'\n' {
                    self.line_ended = true;
                } else if self.line.len() == MAX_REQUEST_LINE {
                    return Some(Err(414));
                } else {
                    self.line.push(b);
                }
            }
            // A blank line: "\n\n", or "\n\r\n" (which "\r\n\r\n" ends with).
            let blank = b == b'\n' && (self.last[1] == b'\n' || self.last == *b"\n\r");
            self.last = [self.last[1], b];
            if blank {
                let line = std::mem::take(&mut self.line);
                return Some(String::from_utf8(line).map(|l| l.trim_end().to_string()).map_err(|_| 400));
            }
            if self.len == MAX_HEAD {
                return Some(Err(431));
            }
        }
        None
    }
}

struct Connection {
    stream: TcpStream,
    /// The end of its [`LIFETIME`].
    until: Instant,
    phase: Phase,
}

/// Serves every connection from this one thread, forever, keeping at most `most` of them.
fn serve(listener: &TcpListener, health: &Health, most: usize) {
    // In the order accepted, so the first is the oldest and ends first.
    let mut connections: Vec<Connection> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    loop {
        let now = Instant::now();
        connections.retain(|c| c.until > now && !matches!(c.phase, Phase::Done));
        fds.clear();
        fds.push(libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        fds.extend(connections.iter().map(|c| libc::pollfd {
            fd: c.stream.as_raw_fd(),
            events: c.events(),
            revents: 0,
        }));
        let next = connections.first().map_or(LIFETIME, |c| c.until.saturating_duration_since(now));
        let ms = libc::c_int::try_from(next.as_millis() + 1).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fds` is `fds.len()` initialised pollfd structures, which poll(2) only updates.
        if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) } < 0 {
            if std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        for (connection, fd) in connections.iter_mut().zip(&fds[1..]) {
            if fd.revents != 0 {
                connection.step(health);
            }
        }
        if fds[0].revents != 0 {
            accept(listener, &mut connections, health, most);
        }
    }
}

/// Takes the connections waiting (a round's worth), each answered at once if its request is
/// already there; the oldest connection makes room for a new one when `most` are kept.
fn accept(listener: &TcpListener, connections: &mut Vec<Connection>, health: &Health, most: usize) {
    for _ in 0..ACCEPTS_PER_ROUND {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)) => {
                // Out of descriptors or memory: the oldest connection makes room, or the next
                // round tries again.
                if connections.is_empty() {
                    std::thread::sleep(Duration::from_millis(10));
                    return;
                }
                connections.remove(0);
                continue;
            }
            Err(_) => continue,
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        if connections.len() >= most {
            connections.remove(0);
        }
        let phase = Phase::Reading(Head::default());
        let mut connection = Connection { stream, until: Instant::now() + LIFETIME, phase };
        connection.step(health);
        if !matches!(connection.phase, Phase::Done) {
            connections.push(connection);
        }
    }
}

impl Connection {
    /// What poll(2) is to wait for.
    fn events(&self) -> libc::c_short {
        match self.phase {
            Phase::Writing { .. } => libc::POLLOUT,
            _ => libc::POLLIN,
        }
    }

    /// Goes as far as the socket allows without waiting; every failure just closes it.
    fn step(&mut self, health: &Health) {
        let mut chunk = [0u8; 1024];
        loop {
            let io = match &mut self.phase {
                Phase::Reading(head) => (&self.stream).read(&mut chunk).map(|n| match n {
                    0 => Phase::Done,
                    n => match head.take(&chunk[..n]) {
                        None => Phase::Reading(std::mem::take(head)),
                        Some(request) => answer(request, health),
                    },
                }),
                Phase::Writing { out, sent, refused } => (&self.stream).write(&out[*sent..]).map(|n| {
                    *sent += n;
                    match (n, *sent < out.len(), *refused) {
                        (0, _, _) | (_, false, false) => Phase::Done,
                        (_, true, _) => Phase::Writing { out: std::mem::take(out), sent: *sent, refused: *refused },
                        (_, false, true) => {
                            let _ = self.stream.shutdown(std::net::Shutdown::Write);
                            Phase::Draining(0)
                        }
                    }
                }),
                Phase::Draining(taken) => (&self.stream).read(&mut chunk).map(|n| match n {
                    0 => Phase::Done,
                    n if *taken + n >= DRAIN => Phase::Done,
                    n => Phase::Draining(*taken + n),
                }),
                Phase::Done => return,
            };
            self.phase = match io {
                Ok(phase) => phase,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => Phase::Done,
            };
        }
    }
}

/// The answer to a request line (or a refusal), as the phase that sends it.
fn answer(request: Result<String, u16>, health: &Health) -> Phase {
    let (status, content_type, body, head_only) = match request {
        Ok(line) => route(&line, health),
        Err(status) => (status, "text/plain", String::new(), false),
    };
    let allow = if status == 405 { "Allow: GET, HEAD\r\n" } else { "" };
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    if !head_only {
        out.push_str(&body);
    }
    Phase::Writing { out: out.into_bytes(), sent: 0, refused: status >= 400 }
}

/// The status, media type, body, and whether only the head is sent (`HEAD`).
fn route(line: &str, health: &Health) -> (u16, &'static str, String, bool) {
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (words.next(), words.next(), words.next(), words.next())
    else {
        return (400, "text/plain", String::new(), false);
    };
    if !version.starts_with("HTTP/1.") {
        return (400, "text/plain", String::new(), false);
    }
    let path = target.split('?').next().unwrap_or_default();
    if !matches!(path, "/readyz" | "/livez" | "/metrics") {
        return (404, "text/plain", String::new(), false);
    }
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return (405, "text/plain", String::new(), false);
    }
    let (status, content_type, body) = match path {
        "/readyz" => {
            let (status, body) = health.readiness();
            (status, "text/plain; charset=utf-8", body)
        }
        "/livez" => (200, "text/plain; charset=utf-8", "ok\n".to_string()),
        _ => (200, CONTENT_TYPE, health.metrics()),
    };
    (status, content_type, body, head_only)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn three_paths_for_get_and_head_and_nothing_else() {
        let health = Arc::new(Health::new(vec!["https://idp".into()], 3, Instant::now()));
        let addr = listen("127.0.0.1:0".parse().unwrap(), health.clone()).unwrap();
        let get = |path: &str| exchange(addr, format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        assert!(get("/readyz").starts_with("HTTP/1.1 503 "), "{}", get("/readyz"));
        assert!(get("/readyz").ends_with("\r\n\r\nnot ready: https://idp (no check yet)\n"));
        health.started(0, true);
        assert!(get("/readyz?verbose").starts_with("HTTP/1.1 200 "));
        assert!(get("/livez").ends_with("\r\n\r\nok\n"));
        assert!(get("/metrics").contains("Content-Type: text/plain; version=0.0.4"));
        assert!(get("/").starts_with("HTTP/1.1 404 "));
        assert!(get("/readyz/").starts_with("HTTP/1.1 404 "));
        let post = exchange(addr, b"POST /readyz HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
        assert!(post.starts_with("HTTP/1.1 405 ") && post.contains("Allow: GET, HEAD\r\n"), "{post}");
        let head = exchange(addr, b"HEAD /livez HTTP/1.1\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200 ") && head.ends_with("\r\n\r\n"), "{head}");
        assert!(exchange(addr, b"GET /readyz\r\n\r\n").starts_with("HTTP/1.1 400 "));
    }

    #[test]
    fn long_request_lines_and_heads_are_refused() {
        let health = Arc::new(Health::new(vec!["https://idp".into()], 3, Instant::now()));
        let addr = listen("127.0.0.1:0".parse().unwrap(), health).unwrap();
        let line = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_REQUEST_LINE));
        assert!(exchange(addr, line.as_bytes()).starts_with("HTTP/1.1 414 "));
        let head = format!("GET /livez HTTP/1.1\r\n{}", "X-A: b\r\n".repeat(MAX_HEAD / 8 + 1));
        assert!(exchange(addr, head.as_bytes()).starts_with("HTTP/1.1 431 "));
        // 8 KiB exactly, blank line included, and not a byte more, however the bytes arrive.
        let sized = |len: usize| {
            let start = "GET /livez HTTP/1.1\r\nX-Pad: ";
            format!("{start}{}\r\n\r\n", "p".repeat(len - start.len() - 4))
        };
        assert_eq!(sized(MAX_HEAD).len(), MAX_HEAD);
        assert!(exchange(addr, sized(MAX_HEAD).as_bytes()).starts_with("HTTP/1.1 200 "));
        assert!(exchange(addr, sized(MAX_HEAD + 1).as_bytes()).starts_with("HTTP/1.1 431 "));
        assert!(exchange(addr, sized(MAX_HEAD + 900).as_bytes()).starts_with("HTTP/1.1 431 "));
        let parse = |bytes: &[u8]| Head::default().take(bytes);
        assert_eq!(parse(sized(MAX_HEAD).as_bytes()), Some(Ok("GET /livez HTTP/1.1".into())));
        assert_eq!(parse(&sized(MAX_HEAD + 1).as_bytes()[..MAX_HEAD]), Some(Err(431)), "no end within 8 KiB");
        assert_eq!(parse(&sized(MAX_HEAD).as_bytes()[..MAX_HEAD - 1]), None, "still coming");
        // However the bytes arrive: one at a time, the same.
        let mut head = Head::default();
        let bytes = sized(MAX_HEAD);
        let (last, rest) = bytes.as_bytes().split_last().unwrap();
        assert!(rest.iter().all(|b| head.take(&[*b]).is_none()));
        assert_eq!(head.take(&[*last]), Some(Ok("GET /livez HTTP/1.1".into())));
        assert_eq!(parse(b"GET / HTTP/1.1\n\n"), Some(Ok("GET / HTTP/1.1".into())), "LF alone ends a head too");
    }

    #[test]
    fn a_probe_is_answered_when_every_slot_is_held() {
        let health = Arc::new(Health::new(vec!["https://idp".into()], 3, Instant::now()));
        let addr = listen("127.0.0.1:0".parse().unwrap(), health).unwrap();
        // Twice as many idle connections as are kept, and one that was refused and now drips.
        let mut dripping = TcpStream::connect(addr).unwrap();
        dripping.write_all(b"BAD\r\n\r\n").unwrap();
        let held: Vec<TcpStream> = (0..2 * MAX_CONNECTIONS).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let _ = dripping.write_all(b"x");
        for _ in 0..3 {
            assert!(exchange(addr, b"GET /livez HTTP/1.1\r\n\r\n").ends_with("\r\n\r\nok\n"));
        }
        drop(held);
    }
}
