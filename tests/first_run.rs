//! The newcomer's first hour: the demo provider of the README's "Try it without a provider"
//! (`examples/local-idp`, a package of its own) answers `--help`, serves the keys its document
//! names so that `--check-jwks` and `--strict` pass against it, and serves long enough to explore;
//! and every test command the README and CONTRIBUTING.md show exists and selects tests.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The demo provider, built once per run of this suite into the test target's own directory (the
/// README's sequence builds it under `examples/local-idp/target`). Its lock pins the versions of
/// the gate's own lock, so a machine that has built the gate's tests has every crate it needs.
fn local_idp() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("local-idp");
        let manifest = repo_root().join("examples/local-idp/Cargo.toml");
        let out = Command::new(env!("CARGO"))
            .args(["build", "--locked", "--quiet", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target)
            .stdin(Stdio::null())
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "building the demo provider failed:\n{}", String::from_utf8_lossy(&out.stderr));
        target.join("debug/local-idp")
    })
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A loopback port free right now (the demo refuses a port that is not, and says so).
fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port()
}

/// The demo started on `port` with its files in `dir`; its background server is stopped by the
/// process id it announces ("kill N") when this is dropped, whatever the test's outcome.
struct Demo {
    announced: String,
    server: Option<i32>,
}

impl Demo {
    fn start(dir: &Path, port: u16, extra: &[&str]) -> Demo {
        let out = Command::new(local_idp())
            .args(["--port", &port.to_string(), "--dir"])
            .arg(dir)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        let server =
            stdout.split("kill ").nth(1).and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok());
        let demo = Demo { announced: stdout, server };
        assert!(out.status.success(), "local-idp failed: {stderr}\n{}", demo.announced);
        demo
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        if let Some(pid) = self.server {
            // SAFETY: kill(2) on the id the demo announced for its own server, a child of this run.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

#[test]
fn the_demo_provider_answers_help() {
    for flag in ["--help", "-h"] {
        let out = Command::new(local_idp()).arg(flag).stdin(Stdio::null()).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "local-idp {flag}: {stderr}{stdout}");
        for word in ["usage: local-idp", "--ready-after", "--serve-for", "--port", "--dir", "/jwks"] {
            assert!(stdout.contains(word), "local-idp {flag} does not mention {word}: {stdout}");
        }
    }
    let out = Command::new(local_idp()).arg("--ready").stdin(Stdio::null()).output().unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "an unknown flag: {stderr}");
    assert!(stderr.contains("unknown flag --ready") && stderr.contains("usage: local-idp"), "{stderr}");
}

/// The document names `/jwks`; the keys are served there, in a set the gate's rules (and so
/// go-jose's and jwx's) accept, so the strictest gate passes against the demo. The PKI it writes
/// is what curl and every OpenSSL client accept too.
#[test]
fn the_gate_passes_against_the_demo_with_check_jwks_and_strict() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let demo = Demo::start(dir.path(), port, &["--ready-after", "0s", "--serve-for", "2m"]);
    let issuer = format!("https://localhost:{port}");
    assert!(demo.announced.contains(&issuer), "{}", demo.announced);
    let ca = dir.path().join("ca.pem");
    let run = run_args(
        gate(),
        &[
            "--issuer",
            &issuer,
            "--ca-file",
            ca.to_str().unwrap(),
            "--check-jwks",
            "--strict",
            "--fail-closed",
            "--timeout",
            "2m",
        ],
    );
    assert_exit(&run, 0);
    assert_logged(&run, &["ready: https://localhost:"]);
    let verify = Command::new("openssl")
        .arg("verify")
        .arg("-CAfile")
        .arg(&ca)
        .arg(dir.path().join("leaf.pem"))
        .output()
        .expect("this test needs the openssl command");
    let (stdout, stderr) = text(&verify);
    assert!(verify.status.success() && stdout.contains(": OK"), "openssl verify: {stdout}{stderr}");
}

/// A minute was too short to try a few commands against it; ten are enough, and the
/// announcement says how to stop it sooner.
#[test]
fn the_demo_serves_for_ten_minutes_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Demo::start(dir.path(), free_port(), &["--ready-after", "2s"]);
    assert!(demo.announced.contains("then serves for 10m"), "{}", demo.announced);
    assert!(demo.server.is_some(), "the announcement names no process to stop: {}", demo.announced);
}

/// Every `cargo test --test NAME [FILTER]` the README and CONTRIBUTING.md show names a test target
/// that exists (the areas are modules of the one crate `integration`, so `--test readiness` is
/// not one), and its filter selects tests in this very binary, as libtest would; the README
/// names the plain `cargo test` and the test command, which exists.
#[test]
fn every_test_command_the_docs_show_exists_and_selects_tests() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    assert!(
        readme.contains("`bash .ci/test`") && repo_root().join(".ci/test").is_file(),
        "the README names the test command"
    );
    assert!(readme.contains("`cargo test`"), "the README names the plain cargo test for a quick check");
    let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let targets: Vec<&str> = manifest
        .split("[[test]]")
        .skip(1)
        .filter_map(|t| t.lines().find_map(|l| l.strip_prefix("name = \"")?.strip_suffix('"')))
        .collect();
    let mut shown = 0;
    for doc in ["README.md", "CONTRIBUTING.md"] {
        let text = std::fs::read_to_string(repo_root().join(doc)).unwrap();
        for command in text.split("cargo test --test ").skip(1) {
            let words: Vec<&str> = command.split(['`', '\n']).next().unwrap().split_whitespace().collect();
            assert!(
                targets.contains(&words[0]),
                "{doc}: `cargo test --test {}`: no such test target ({targets:?})",
                words[0]
            );
            let Some(filter) = words.get(1).filter(|w| !w.starts_with('-')) else { continue };
            let list = Command::new(std::env::current_exe().unwrap()).args([filter, "--list"]).output().unwrap();
            let selected = String::from_utf8_lossy(&list.stdout).lines().filter(|l| l.ends_with(": test")).count();
            assert!(selected > 0, "{doc}: `cargo test --test {} {filter}` selects no test", words[0]);
            shown += 1;
        }
    }
    assert!(readme.contains("cargo test --test integration readiness::"), "the README shows how to run one area");
    assert!(shown >= 1);
}
