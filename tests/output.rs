//! Output, and that writing it never changes the outcome: the termination log gets the outcome
//! line (an unwritable one is skipped, a FIFO, `/dev/full` or `/dev/null` never blocks), and a
//! full stdout (`--output json`, `--help`, `--dry-run`) or a broken stderr pipe changes neither the
//! exit code nor the wait: the gate never aborts and never blocks on its own output.

use crate::support::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn termination_log_gets_the_outcome() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let log = ca.path("termination-log");
    let mut cmd = gate_for(&ca, &p.issuer(""));
    cmd.args(["--timeout", "1s", "--termination-log"]).arg(&log);
    assert_exit(&run(cmd), 0);
    let line = std::fs::read_to_string(&log).unwrap();
    assert!(line.starts_with("failing open: not ready: https://localhost:"), "{line}");
    assert!(line.contains("last failure: http-status"), "{line}");

    let r = run_args(gate_for(&ca, &p.issuer("")), &["--once", "--termination-log", "/nonexistent-dir/log"]);
    assert_eq!(r.code, Some(1), "an unwritable log is skipped: {}", r.log());
}

#[test]
fn a_termination_log_that_is_a_fifo_does_not_block() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let fifo = ca.path("termination-fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--timeout", "5s", "--termination-log"]).arg(&fifo);
    let r = run_with_limit(cmd, Duration::from_secs(10));
    assert_exit(&r, 0);
    assert!(r.elapsed < Duration::from_secs(2), "blocked on the FIFO: {:?}", r.elapsed);
    for odd in ["/dev/full", "/dev/null"] {
        let mut cmd = gate_for(&ca, &iss);
        cmd.args(["--termination-log", odd]);
        assert_eq!(run(cmd).code, Some(0), "{odd}");
    }
}

#[test]
fn a_full_stdout_changes_nothing() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--output", "json"]).stdout(std::fs::File::create("/dev/full").unwrap());
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_logged(&r, &["ready: "]);
}

#[test]
fn a_broken_stderr_pipe_keeps_exit_2() {
    for args in [&["--issuer", "not a url"][..], &["--issuer", "https://h", "--bogus"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut cmd = gate();
        cmd.args(args).stderr(writer);
        let status = cmd.status().unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}");
    }
    // And a full stdout for --help and --dry-run.
    for args in [&["--help"][..], &["--issuer", "https://h", "--dry-run"][..]] {
        let mut cmd = gate();
        cmd.args(args).stdout(std::fs::File::create("/dev/full").unwrap());
        assert_eq!(cmd.status().unwrap().code(), Some(0), "{args:?}");
    }
}
