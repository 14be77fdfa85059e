//! `--serve`: the gate as a native sidecar. The listener answers at once (503 until ready),
//! `/readyz` follows the start and then the watch (503 after `--watch-failures` failed checks in
//! a row, 200 after one pass) with one log line per change, `/metrics` counts it all (checked by
//! `promtool check metrics`), failing open answers 200 with `wait_for_idp_failed_open 1`, and
//! SIGTERM ends it. Nothing the provider sent is ever served. Every step waits for an event (a
//! log line, a request seen by the provider), never for a time.

use crate::support::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// What the provider says when it is down; it must never reach the gate's port.
const PAGE: &str = "<html>upstream connect error SECRET-PAGE-TEXT</html>";

/// The gate running with `--serve`, its log lines arriving on a channel.
struct Sidecar {
    child: Child,
    lines: Receiver<String>,
    log: Vec<String>,
    addr: SocketAddr,
}

impl Sidecar {
    fn start(mut cmd: Command) -> Sidecar {
        cmd.args(["--serve", "127.0.0.1:0"]);
        let mut child = cmd.spawn().expect("spawn wait-for-idp");
        let (tx, lines) = channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut sidecar = Sidecar { child, lines, log: Vec::new(), addr: "127.0.0.1:1".parse().unwrap() };
        let line = sidecar.wait_for("serving /readyz, /livez and /metrics on ");
        sidecar.addr = line.rsplit(' ').next().unwrap().parse().unwrap();
        sidecar
    }

    /// The next log line containing `phrase` (a generous cap only stops a broken build hanging).
    fn wait_for(&mut self, phrase: &str) -> String {
        let cap = Instant::now() + Duration::from_secs(60);
        loop {
            let left = cap.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if line.contains(phrase) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {phrase:?}; the log so far:\n{}", self.log.join("\n")),
            }
        }
    }

    /// Status and body of `GET path`.
    fn get(&self, path: &str) -> (u16, String) {
        request(self.addr, &format!("GET {path} HTTP/1.1\r\nHost: sidecar\r\n\r\n"))
    }

    fn terminate(mut self) -> (Option<i32>, Duration, Vec<String>) {
        let sent = Instant::now();
        assert!(Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap().success());
        let status = self.child.wait().unwrap();
        let took = sent.elapsed();
        self.log.extend(self.lines.try_iter());
        (status.code(), took, self.log)
    }
}

fn request(addr: SocketAddr, text: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(text.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    (status, out.split_once("\r\n\r\n").unwrap().1.to_string())
}

/// The value of the sample `name{labels}` (or `name`), if present.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// A provider whose readiness the test switches.
fn switchable(ca: &TestCa, up: &Arc<AtomicBool>) -> (Provider, String) {
    let up = up.clone();
    Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", move |iss| {
        let doc = discovery_doc(iss);
        reply(
            move |_, _| if up.load(Ordering::SeqCst) { Reply::json(200, doc.clone()) } else { Reply::text(503, PAGE) },
        )
    })
}

/// Down, up, down, up: `/readyz` and `/metrics` read at each step; returns the four
/// `/metrics` bodies.
fn down_up_down_up() -> Vec<String> {
    let ca = TestCa::new();
    let up = Arc::new(AtomicBool::new(false));
    let (p, iss) = switchable(&ca, &up);
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--timeout", "10m", "--interval", "100ms", "--watch-interval", "100ms", "--watch-failures", "2"]);
    let mut sidecar = Sidecar::start(cmd);
    let target = format!("target=\"{iss}\"");
    let mut snapshots = Vec::new();

    // Down: the listener answers before the first pass.
    sidecar.wait_for("attempt 1: ");
    let (status, body) = sidecar.get("/readyz");
    assert_eq!((status, body.as_str()), (503, format!("not ready: {iss} (http-status)\n").as_str()));
    assert_eq!(sidecar.get("/livez"), (200, "ok\n".into()));
    let m = sidecar.get("/metrics").1;
    assert_eq!(sample(&m, &format!("wait_for_idp_up{{{target}}}")), Some(0.0), "{m}");
    assert!(
        sample(&m, &format!("wait_for_idp_checks_total{{{target},result=\"fail\",class=\"http-status\"}}"))
            >= Some(1.0)
    );
    assert_eq!(sample(&m, "wait_for_idp_first_ready_seconds"), None, "{m}");
    snapshots.push(m);

    // Up: the start-up wait ends ready, and the gate stays.
    up.store(true, Ordering::SeqCst);
    sidecar.wait_for("ready: ");
    assert_eq!(sidecar.get("/readyz"), (200, "ready\n".into()));
    let m = sidecar.get("/metrics").1;
    assert_eq!(sample(&m, &format!("wait_for_idp_up{{{target}}}")), Some(1.0), "{m}");
    assert!(sample(&m, "wait_for_idp_first_ready_seconds").is_some(), "{m}");
    assert!(sample(&m, &format!("wait_for_idp_last_pass_timestamp_seconds{{{target}}}")).is_some(), "{m}");
    assert_eq!(sample(&m, "wait_for_idp_failed_open"), Some(0.0), "{m}");
    snapshots.push(m);

    // Down: two failed checks in a row, one line.
    up.store(false, Ordering::SeqCst);
    let line = sidecar.wait_for("checks failed in a row");
    assert!(line.contains("not ready: 2 checks failed in a row, the last http-status"), "{line}");
    let (status, body) = sidecar.get("/readyz");
    assert_eq!((status, body.as_str()), (503, format!("not ready: {iss} (http-status)\n").as_str()));
    let m = sidecar.get("/metrics").1;
    assert_eq!(sample(&m, &format!("wait_for_idp_up{{{target}}}")), Some(0.0), "{m}");
    snapshots.push(m);

    // Up again after one pass.
    up.store(true, Ordering::SeqCst);
    sidecar.wait_for("ready again");
    assert_eq!(sidecar.get("/readyz"), (200, "ready\n".into()));
    let m = sidecar.get("/metrics").1;
    assert_eq!(sample(&m, &format!("wait_for_idp_up{{{target}}}")), Some(1.0), "{m}");
    let passes = sample(&m, &format!("wait_for_idp_checks_total{{{target},result=\"pass\",class=\"none\"}}"));
    let count = sample(&m, &format!("wait_for_idp_check_duration_seconds_count{{{target}}}"));
    assert!(passes >= Some(2.0) && count >= Some(p.count() as f64 - 1.0), "{m}");
    snapshots.push(m);

    let (code, took, log) = sidecar.terminate();
    assert_eq!(code, Some(0), "SIGTERM after the start ends the sidecar with 0:\n{}", log.join("\n"));
    assert!(took < Duration::from_millis(500), "SIGTERM took {took:?}");
    eprintln!("SIGTERM to exit: {took:?}");
    // Quiet while nothing changes: the watch's passes and failures log nothing but the changes.
    let after_ready = log.iter().skip_while(|l| !l.contains("ready: ")).skip(1).collect::<Vec<_>>();
    assert_eq!(after_ready.len(), 2, "one line per change:\n{}", log.join("\n"));
    for m in &snapshots {
        assert!(!m.contains("SECRET-PAGE-TEXT"), "{m}");
    }
    snapshots
}

#[test]
fn readyz_and_metrics_follow_a_provider_down_up_down_up() {
    down_up_down_up();
}

#[test]
#[ignore = "needs promtool, built from the Go module proxy by the test command into .ci/cache/bin"]
fn the_metrics_pass_promtool_check_metrics() {
    let promtool = repo_root().join(".ci/cache/bin/promtool");
    assert!(promtool.exists(), "{} is missing: run the install step of .ci/test", promtool.display());
    for m in down_up_down_up() {
        let mut child = Command::new(&promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(m.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said.trim().is_empty(), "promtool: {said}\n{m}");
    }
}

#[test]
fn failing_open_answers_200_with_a_warning_and_the_gauge() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let mut cmd = gate_for(&ca, &p.issuer(""));
    cmd.args(["--timeout", "1s", "--interval", "100ms", "--watch-interval", "1h"]);
    let mut sidecar = Sidecar::start(cmd);
    sidecar.wait_for("failed open: /readyz answers 200");
    let (status, body) = sidecar.get("/readyz");
    assert_eq!(status, 200);
    assert!(
        body.starts_with("failed open: not ready: https://localhost:") && body.ends_with("(http-status)\n"),
        "{body}"
    );
    assert_eq!(sample(&sidecar.get("/metrics").1, "wait_for_idp_failed_open"), Some(1.0));
    assert_eq!(sidecar.terminate().0, Some(0));
}

#[test]
fn failing_closed_exits_1_as_without_serve() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let mut cmd = gate_for(&ca, &p.issuer(""));
    cmd.args(["--timeout", "1s", "--fail-closed", "--serve", "127.0.0.1:0"]);
    let r = run(cmd);
    assert_exit(&r, 1);
}

#[test]
fn serve_is_refused_with_once_or_a_command_and_a_bad_address_is_named() {
    let ca = TestCa::new();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case<'_>; 4] = [
        (&["--serve", ":0", "--once"], &[], "--serve keeps the gate running beside the workload"),
        (&["--", "true"], &[("WAIT_FOR_IDP_SERVE", ":0")], "WAIT_FOR_IDP_SERVE keeps the gate running"),
        (&["--serve", "localhost:80"], &[], "--serve: 'localhost:80' is not valid; expected an address to listen on"),
        (&["--watch-failures", "0"], &[], "--watch-failures: '0' is not valid"),
    ];
    for (args, env, message) in cases {
        let mut cmd = gate_for(&ca, "https://idp.example");
        cmd.args(args).envs(env.iter().copied());
        let r = run(cmd);
        assert_exit(&r, 2);
        assert!(r.log().contains(message), "{args:?} {env:?}: {}", r.log());
    }
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let r = run_args(gate_for(&ca, "https://idp.example"), &["--serve", &addr]);
    assert_exit(&r, 2);
    assert!(r.log().contains(&format!("--serve: cannot listen on {addr}")), "{}", r.log());
}
