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
    /// Started on a loopback port free a moment ago (`--serve` refuses port 0, which no probe
    /// could find); another on a port taken in between is said, and the next port tried.
    fn start(make: impl Fn() -> Command) -> Sidecar {
        let mut tries = 0;
        loop {
            let mut cmd = make();
            cmd.args(["--serve", &format!("127.0.0.1:{}", free_port())]);
            let mut child = cmd.spawn().expect("spawn wait-for-idp");
            let (tx, lines) = channel();
            let stderr = child.stderr.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
            let mut sidecar = Sidecar { child, lines, log: Vec::new(), addr: "127.0.0.1:1".parse().unwrap() };
            let line = sidecar.wait_for_either("serving /readyz, /livez and /metrics on ", "--serve: cannot listen");
            if line.contains("cannot listen") && tries < 5 {
                tries += 1;
                continue;
            }
            sidecar.addr = line.rsplit(' ').next().unwrap().parse().unwrap();
            return sidecar;
        }
    }

    fn wait_for(&mut self, phrase: &str) -> String {
        self.wait_for_either(phrase, phrase)
    }

    /// The next log line containing `phrase` or `other` (a generous cap only stops a broken build
    /// hanging).
    fn wait_for_either(&mut self, phrase: &str, other: &str) -> String {
        let cap = Instant::now() + Duration::from_secs(60);
        loop {
            let left = cap.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if line.contains(phrase) || line.contains(other) {
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

    /// SIGTERM; the exit code, how long the exit took less what the machine's load kept the
    /// sidecar (and this thread) waiting for a CPU meanwhile, and the whole log.
    fn terminate(mut self) -> (Option<i32>, Duration, Vec<String>) {
        let mut before = Starvation::default();
        before.sample(self.child.id());
        let sent = Instant::now();
        // SAFETY: kill(2) on our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
        let seen = watch(&mut self.child, sent, Duration::from_secs(60));
        let took = (seen.noticed - sent).saturating_sub(seen.starved.saturating_sub(before.total()));
        let status = seen.status;
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
    let mut sidecar = Sidecar::start(|| {
        let mut cmd = gate_for(&ca, &iss);
        cmd.args(["--timeout", "10m", "--interval", "100ms", "--watch-interval", "100ms", "--watch-failures", "2"]);
        cmd
    });
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
    assert!(took < Duration::from_millis(500), "SIGTERM took {took:?}, less the time spent waiting for a CPU");
    eprintln!("SIGTERM to exit, less CPU waits: {took:?}");
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
    let mut sidecar = Sidecar::start(|| {
        let mut cmd = gate_for(&ca, &p.issuer(""));
        cmd.args(["--timeout", "1s", "--interval", "100ms", "--watch-interval", "1h"]);
        cmd
    });
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
    cmd.args(["--timeout", "1s", "--fail-closed", "--serve", &format!("127.0.0.1:{}", free_port())]);
    let r = run(cmd);
    assert_exit(&r, 1);
}

#[test]
fn serve_is_refused_with_once_or_a_command_and_a_bad_address_is_named() {
    let ca = TestCa::new();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case<'_>; 7] = [
        (&["--serve", ":9090", "--once"], &[], "--serve keeps the gate running beside the workload"),
        (&["--", "true"], &[("WAIT_FOR_IDP_SERVE", ":9090")], "WAIT_FOR_IDP_SERVE keeps the gate running"),
        (&["--serve", "localhost:80"], &[], "--serve: 'localhost:80' is not valid; expected an address to listen on"),
        (&["--watch-failures", "0"], &[], "--watch-failures: '0' is not valid"),
        // Port 0 is one the kernel picks, which no probe could name.
        (&["--serve", ":0"], &[], "--serve: ':0' is not valid; expected a port other than 0, which the probes name"),
        (&["--serve", "127.0.0.1:0"], &[], "--serve: '127.0.0.1:0' is not valid; expected a port other than 0"),
        (&[], &[("WAIT_FOR_IDP_SERVE", "[::1]:0")], "WAIT_FOR_IDP_SERVE: '[::1]:0' is not valid; expected a port"),
    ];
    for (args, env, message) in cases {
        let mut cmd = gate_for(&ca, "https://idp.example");
        cmd.args(args).envs(env.iter().copied());
        let r = run(cmd);
        assert_exit(&r, 2);
        assert!(r.log().contains(message), "{args:?} {env:?}: {}", r.log());
    }
    // The recipes' `$(POD_IP):9090` on an IPv6 pod arrives without brackets: its last `:PORT`
    // is the port. `:PORT` alone is every IPv4 address.
    for (given, serving) in [("fd00::5:9090", "[fd00::5]:9090"), ("::1:9090", "[::1]:9090"), (":9090", "0.0.0.0:9090")]
    {
        let r = run_args(gate_for(&ca, "https://idp.example"), &["--serve", given, "--dry-run"]);
        assert_exit(&r, 0);
        assert!(r.stdout.contains(&format!("{serving} (from --serve)")), "{given}: {}", r.stdout);
    }
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let r = run_args(gate_for(&ca, "https://idp.example"), &["--serve", &addr]);
    assert_exit(&r, 2);
    assert!(r.log().contains(&format!("--serve: cannot listen on {addr}")), "{}", r.log());
}

/// Connections that hold the gate's port: `count` of them, each opened again as soon as the gate
/// lets it go; with `drip`, each sends a bad request first (answered 400), then a byte every 3 s.
/// Returns how many times they connected.
fn hostile(addr: SocketAddr, count: usize, drip: bool, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut held: Vec<Option<(TcpStream, Instant)>> = (0..count).map(|_| None).collect();
        let (mut connected, mut buf) = (0, [0u8; 512]);
        while !stop.load(Ordering::SeqCst) {
            for slot in &mut held {
                // Dripping goes on after the gate's answer and its half close, until a write fails.
                if let Some((s, _)) = slot {
                    match s.read(&mut buf) {
                        Ok(0) if !drip => *slot = None,
                        Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => *slot = None,
                        _ => {}
                    }
                }
                match slot {
                    None => {
                        let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else { continue };
                        if drip {
                            let _ = s.write_all(b"BAD / HTTP/1.1\r\n\r\n");
                        }
                        s.set_nonblocking(true).unwrap();
                        *slot = Some((s, Instant::now()));
                        connected += 1;
                    }
                    Some((s, last)) if drip && last.elapsed() >= Duration::from_secs(3) => {
                        *last = Instant::now();
                        if s.write(b"x").is_err() {
                            *slot = None;
                        }
                    }
                    Some(_) => {}
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        connected
    })
}

/// What the load kept the process `pid`'s threads and this thread waiting for a CPU, so far.
fn cpu_waits(pid: u32) -> Duration {
    let mut threads = Starvation::default();
    threads.sample(pid);
    threads.total() + run_delay("thread-self")
}

/// Probes `/livez` every 100 ms for `span` beside `count` hostile connections (dripping or
/// idle) while the start-up wait goes on: every probe is answered, each within the kubelet's
/// default probe timeout (1 s) less what the machine's load kept the sidecar and the prober
/// waiting for a CPU meanwhile. (How fast they are answered, on an idle machine, is
/// `bash bench/run --only probes`'s to say.)
fn probes_beside(count: usize, drip: bool, span: Duration) {
    raise_open_files();
    let sidecar = Sidecar::start(|| {
        let mut cmd = gate();
        cmd.args(["--issuer", "https://127.0.0.1:1/", "--timeout", "10m", "--interval", "1s"]);
        cmd
    });
    let stop = Arc::new(AtomicBool::new(false));
    let attack = hostile(sidecar.addr, count, drip, stop.clone());
    let (pid, until, mut slowest) = (sidecar.child.id(), Instant::now() + span, Duration::ZERO);
    let mut probes = 0;
    while Instant::now() < until {
        let (waits, sent) = (cpu_waits(pid), Instant::now());
        let mut s = TcpStream::connect(sidecar.addr).expect("the probe's connection");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(b"GET /livez HTTP/1.1\r\nHost: pod\r\n\r\n").unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        let took = sent.elapsed().saturating_sub(cpu_waits(pid).saturating_sub(waits));
        probes += 1;
        assert!(answer.starts_with("HTTP/1.1 200 ") && answer.ends_with("\r\n\r\nok\n"), "probe {probes}: {answer:?}");
        assert!(took < Duration::from_secs(1), "probe {probes} took {took:?}, less the time spent waiting for a CPU");
        slowest = slowest.max(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    let connected = attack.join().unwrap();
    eprintln!("{probes} probes beside {count} connections (drip {drip}, {connected} opened): slowest {slowest:?}");
    assert!(connected >= count as u64, "the hostile connections were opened: {connected}");
    assert_eq!(sidecar.get("/readyz").0, 503, "still serving");
    sidecar.terminate();
}

/// Lifts this process's open-file limit to its hard limit, for a thousand connections.
fn raise_open_files() {
    // SAFETY: getrlimit/setrlimit on this process, with a structure they fill and read.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The red team's first shape: eight connections that send a bad request, then a byte every
/// 3 s, so that draining it never ended; over the drip and past a connection's 5 s life.
#[test]
fn probes_are_answered_beside_eight_connections_that_drip_after_a_bad_request() {
    probes_beside(8, true, Duration::from_secs(7));
}

/// Eight idle connections opened again whenever the gate lets one go.
#[test]
fn probes_are_answered_beside_eight_idle_connections_reopened() {
    probes_beside(8, false, Duration::from_secs(7));
}

/// A thousand idle connections, opened again whenever the gate lets one go.
#[test]
fn probes_are_answered_beside_a_thousand_connections() {
    probes_beside(1000, false, Duration::from_secs(7));
}
