//! The health listener: HTTP/1.1 from std alone, one request per connection, for the kubelet's
//! probes and a Prometheus scraper on the pod's network.
//!
//! Bounded, because whatever can reach the pod can reach it: at most [`MAX_CONNECTIONS`] at
//! once (more are closed unanswered), a request line of at most [`MAX_REQUEST_LINE`] bytes and a
//! head of at most [`MAX_HEAD`], all of it within [`HEAD_TIMEOUT`], and a body never read. The
//! answer is made from [`Health`] alone.

use super::Health;
use super::metrics::CONTENT_TYPE;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Connections served at once: probes come every few seconds, a scrape every 15 s or more.
const MAX_CONNECTIONS: usize = 8;
/// The longest request line: `GET /readyz HTTP/1.1` is 20 bytes.
const MAX_REQUEST_LINE: usize = 1024;
/// The longest request head (line and headers).
const MAX_HEAD: usize = 8192;
/// Time for the whole head to arrive; a client that drips it is dropped.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Time for the answer to be taken.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds `addr` and serves `health` from a thread of its own; returns the bound address (the
/// port chosen when `addr` asked for port 0).
pub(crate) fn listen(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new().name("serve".into()).spawn(move || {
        for stream in listener.incoming().flatten() {
            if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                open.fetch_sub(1, Ordering::AcqRel);
                continue;
            }
            let (health, slots) = (health.clone(), open.clone());
            let spawned = std::thread::Builder::new().name("serve-conn".into()).spawn(move || {
                answer(stream, &health);
                slots.fetch_sub(1, Ordering::AcqRel);
            });
            if spawned.is_err() {
                // The stream went down with the closure; the slot comes back here.
                open.fetch_sub(1, Ordering::AcqRel);
            }
        }
    })?;
    Ok(bound)
}

/// Reads one request head and answers it; every failure just closes the connection.
fn answer(mut stream: TcpStream, health: &Health) {
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let (status, content_type, body, head_only) = match read_head(&mut stream) {
        Ok(head) => route(&head, health),
        Err(Some(status)) => (status, "text/plain", String::new(), false),
        Err(None) => return,
    };
    let allow = if status == 405 { "Allow: GET, HEAD\r\n" } else { "" };
    let mut response = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    if !head_only {
        response.push_str(&body);
    }
    let _ = stream.write_all(response.as_bytes());
    if status >= 400 {
        // What the client sent beyond the head (a body, the rest of an oversized head) would make
        // the close a reset that can destroy the answer before it is read: take it first.
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let _ = std::io::copy(&mut (&stream).take(MAX_HEAD as u64 * 8), &mut std::io::sink());
    }
}

/// The request line, once the whole head has arrived. `Err(Some(status))`: answer that;
/// `Err(None)`: the client went away or was too slow.
fn read_head(stream: &mut TcpStream) -> Result<String, Option<u16>> {
    let deadline = Instant::now() + HEAD_TIMEOUT;
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return Err(None);
        }
        let n = match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(None),
            Ok(n) => n,
        };
        head.extend_from_slice(&chunk[..n]);
        let line_end = head.iter().position(|&b| b == b'\n');
        if line_end.unwrap_or(head.len()) > MAX_REQUEST_LINE {
            return Err(Some(414));
        }
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            let line = &head[..line_end.unwrap_or(0)];
            return String::from_utf8(line.to_vec()).map(|l| l.trim_end().to_string()).map_err(|_| Some(400));
        }
        if head.len() > MAX_HEAD {
            return Err(Some(431));
        }
    }
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
    }
}
