//! The real binary, run with a clean environment and measured on the monotonic clock.

use super::pki::TestCa;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The outcome of one run of the binary.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn log(&self) -> &str {
        &self.stderr
    }

    /// Stdout as the one JSON object `--output json` prints.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wait-for-idp")
}

/// The binary with a clean environment: no proxies, no WAIT_FOR_IDP_* from the developer's shell.
pub fn gate() -> Command {
    let mut cmd = Command::new(bin());
    cmd.env_clear();
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// The gate for `issuer`, trusting the test CA.
pub fn gate_for(ca: &TestCa, issuer: &str) -> Command {
    let mut cmd = gate();
    cmd.args(["--issuer", issuer, "--ca-file", &ca.ca_arg()]);
    cmd
}

/// Runs and measures, on the monotonic clock, killing the child after `limit` so a broken
/// build cannot hang the suite.
pub fn run_with_limit(mut cmd: Command, limit: Duration) -> Run {
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn wait-for-idp");
    // Either stream may have been redirected elsewhere by the test (a file, /dev/full).
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.map(|mut o| o.read_to_string(&mut s));
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.map(|mut e| e.read_to_string(&mut s));
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = started.elapsed();
    Run { code: status.code(), stdout: out_thread.join().unwrap(), stderr: err_thread.join().unwrap(), elapsed }
}

pub fn run(cmd: Command) -> Run {
    run_with_limit(cmd, Duration::from_secs(60))
}

/// Runs the gate with these arguments added.
pub fn run_args(mut cmd: Command, args: &[&str]) -> Run {
    cmd.args(args);
    run(cmd)
}

/// Asserts the deadline promise: total run time within --timeout + 0.1 s.
pub fn assert_within(run: &Run, timeout: Duration) {
    assert!(
        run.elapsed <= timeout + Duration::from_millis(100),
        "ran {:?}, over the promised {:?} + 0.1s\n{}",
        run.elapsed,
        timeout,
        run.stderr
    );
}

/// Asserts an exit code, showing the log when it differs.
#[track_caller]
pub fn assert_exit(run: &Run, code: i32) {
    assert_eq!(run.code, Some(code), "exit code; log:\n{}", run.log());
}

/// Asserts the log contains every one of `phrases`.
#[track_caller]
pub fn assert_logged(run: &Run, phrases: &[&str]) {
    for phrase in phrases {
        assert!(run.log().contains(phrase), "expected {phrase:?} in the log:\n{}", run.log());
    }
}
