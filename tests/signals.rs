//! Signals: a SIGTERM ends the wait promptly as interrupted (exit 143; in the JSON the run and a
//! target still waiting are `interrupted`, its last failure kept; the termination log says so),
//! also as PID 1, where the kernel drops a SIGTERM unless the gate installs a handler.

use crate::support::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// A SIGTERM ends the run as interrupted, in the JSON as in the exit code:
/// the verdict of a target still waiting is `interrupted`, with its last failure kept.
#[test]
fn sigterm_is_reported_as_interrupted_in_the_json() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let mut cmd = gate_for(&ca, &p.issuer(""));
    cmd.args(["--timeout", "60s", "--interval", "200ms", "--output", "json"]);
    let child = cmd.spawn().unwrap();
    let start = Instant::now();
    while p.count() < 2 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(p.count() >= 2, "the gate never made two attempts");
    assert!(std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["outcome"], "interrupted");
    assert_eq!(json["issuers"][0]["verdict"], "interrupted", "{json}");
    assert_eq!(json["issuers"][0]["last_failure"]["class"], "http-status", "{json}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("not ready (interrupted after "), "{log}");
}

/// As PID 1 the kernel drops SIGTERM unless a handler is installed; the gate installs one.
#[test]
#[ignore = "needs root: unshare --pid, to be PID 1; the test command runs it"]
fn sigterm_as_pid_1_ends_the_wait_promptly() {
    let probe = std::process::Command::new("unshare").args(["--pid", "--fork", "--mount-proc", "true"]).status();
    assert!(matches!(probe, Ok(s) if s.success()), "this test needs `unshare --pid --fork` (util-linux, run as root)");
    let ca = TestCa::new();
    let p = always_503(&ca);
    let log = ca.path("termination-log");
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child", bin(), "--issuer", &p.issuer("")])
        .args(["--ca-file", &ca.ca_arg(), "--timeout", "60s", "--termination-log"])
        .arg(&log)
        .env_clear()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // Wait for the first attempt, then signal the gate (PID 1 inside) from outside, as the kubelet does.
    let start = Instant::now();
    while p.count() == 0 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    // The gate made its first attempt: it runs, under unshare, as PID 1 inside.
    assert!(p.count() > 0, "the gate never made its first attempt");
    let children = std::fs::read_to_string(format!("/proc/{}/task/{}/children", child.id(), child.id())).unwrap();
    let pid: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let status_line = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(status_line.lines().any(|l| l.starts_with("NSpid:") && l.trim_end().ends_with("\t1")), "{status_line}");
    // What the machine's load keeps the gate from running is excused from the 500 ms: its
    // threads' run-queue waits from the signal on, sampled until it is gone.
    let mut starvation = Starvation::default();
    starvation.sample(pid as u32);
    let before = starvation.total();
    let sent = Instant::now();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let status = loop {
        starvation.sample(pid as u32);
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(sent.elapsed() < Duration::from_secs(5), "SIGTERM ignored");
        std::thread::sleep(Duration::from_millis(1));
    };
    let took = sent.elapsed();
    let starved = starvation.total().saturating_sub(before);
    assert_eq!(status.code(), Some(143));
    assert!(took.saturating_sub(starved) < Duration::from_millis(500), "took {took:?} ({starved:?} waiting for a CPU)");
    let line = std::fs::read_to_string(&log).unwrap();
    assert!(line.starts_with("interrupted by SIGTERM"), "{line}");
}

/// Whether the process `pid` holds `dir` open (as it does while it reads the directory).
fn holds_open(pid: u32, dir: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|to| to == dir))
}

/// A SIGTERM while Go's trust store is being read (here a large `SSL_CERT_DIR`, which holds the
/// provider's CA under no hash link, so the first handshake reads it whole) ends the gate at once,
/// as interrupted, before any request reaches the provider: it is not held until the reading is
/// done. The gate is caught reading the directory and stopped there (SIGSTOP), so the SIGTERM is
/// certain to come in the middle of it, whatever the machine's speed.
#[test]
fn sigterm_while_the_trust_store_is_read_ends_the_gate_at_once() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let dir = ca.path("certs");
    std::fs::create_dir(&dir).unwrap();
    let pem = std::fs::read(ca.ca_arg()).unwrap();
    for i in 0..3000 {
        std::fs::write(dir.join(format!("ca-{i}.pem")), &pem).unwrap();
    }
    let dir = dir.canonicalize().unwrap();
    let signal = |pid: u32, sig: i32| assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
    for _try in 0..20 {
        // No --ca-file: the CA is trusted through the directory alone.
        let mut cmd = gate();
        cmd.args(["--issuer", &p.issuer(""), "--timeout", "60s"]).env("SSL_CERT_DIR", &dir);
        let mut child = cmd.spawn().unwrap();
        let pid = child.id();
        while !holds_open(pid, &dir) && child.try_wait().unwrap().is_none() {
            std::thread::yield_now();
        }
        signal(pid, libc::SIGSTOP);
        if !holds_open(pid, &dir) || p.count() > 0 {
            // Caught too late, past the directory or the first request: another try.
            signal(pid, libc::SIGKILL);
            let _ = child.wait();
            continue;
        }
        signal(pid, libc::SIGTERM);
        signal(pid, libc::SIGCONT);
        let out = child.wait_with_output().unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(143), "{log}");
        assert!(log.contains("interrupted by SIGTERM"), "{log}");
        assert_eq!(p.count(), 0, "a request reached the provider: {log}");
        return;
    }
    panic!("the gate was never caught reading SSL_CERT_DIR");
}

/// A signal the gate's parent ignored stays ignored while the gate waits, as it will for the
/// command: a script's background job (`wait-for-idp … &`) has SIGINT ignored, so that Ctrl-C in
/// the terminal stops the foreground only. SIGTERM still ends the gate.
#[test]
fn a_signal_the_parent_ignored_does_not_end_the_wait() {
    use std::os::unix::process::CommandExt;
    let ca = TestCa::new();
    let p = always_503(&ca);
    let mut cmd = gate_for(&ca, &p.issuer(""));
    cmd.args(["--timeout", "60s", "--interval", "100ms"]);
    // SAFETY: between fork and exec, one async-signal-safe call.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let attempts = |n: usize| {
        let start = Instant::now();
        while p.count() < n && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(p.count() >= n, "the gate made {} attempt(s), not {n}", p.count());
    };
    attempts(1);
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    // Two more attempts after it: the SIGINT was not taken.
    let after = p.count();
    attempts(after + 2);
    assert!(child.try_wait().unwrap().is_none(), "SIGINT ended the gate");
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
}
