//! The readiness gate end to end: the real binary against a real local HTTPS provider with a
//! throwaway CA.

mod common;

use common::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WELL_KNOWN: &str = "/.well-known/openid-configuration";

fn issuer(port: u16) -> String {
    format!("https://localhost:{port}")
}

#[test]
fn ready_at_once() {
    let ca = TestCa::new();
    let (p, iss) = ready_provider(&ca, "localhost", "");
    let r = run(gate_for(&ca, &iss));
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("attempt 1: passed"), "{}", r.log());
    assert!(r.log().contains("ready: https://localhost:"), "{}", r.log());
    assert_eq!(p.count(), 1);
    assert_eq!(r.log().lines().count(), 2, "one line per attempt plus the outcome:\n{}", r.log());
}

#[test]
fn unavailable_then_ready_exits_right_after_readiness() {
    let ca = TestCa::new();
    let started = Instant::now();
    let ready_after = Duration::from_secs(2);
    let port = free_port();
    let iss = issuer(port);
    let doc = discovery_doc(&iss);
    let handler: Handler = Arc::new(move |_, _| {
        if started.elapsed() < ready_after {
            Reply::text(503, "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>")
        } else {
            Reply::json(200, doc.clone())
        }
    });
    let p = Provider::start_on(loopback(port), tls_mode(ca.leaf(&["localhost"])), handler);
    let r = run(gate_for(&ca, &iss));
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("http-status: HTTP 503"), "{}", r.log());
    assert!(r.log().contains("503 Service Temporarily Unavailable"), "HTML summarised: {}", r.log());
    // The next attempt after readiness comes within one interval (1 s).
    let lag = started.elapsed().saturating_sub(ready_after);
    assert!(lag < Duration::from_millis(1_500), "exited {lag:?} after readiness\n{}", r.log());
    assert!(p.count() >= 2 && p.count() <= 5, "about one request a second: {}", p.count());
}

#[test]
fn refused_then_listening() {
    let ca = TestCa::new();
    let port = free_port();
    let iss = issuer(port);
    let leaf = ca.leaf(&["localhost"]);
    let doc = discovery_doc(&iss);
    let starter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1_500));
        let started = Instant::now();
        let p = Provider::start_on(loopback(port), tls_mode(leaf), serve_at(WELL_KNOWN, doc));
        (p, started)
    });
    let r = run(gate_for(&ca, &iss));
    let (_p, listening_at) = starter.join().unwrap();
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("connect: connection refused"), "{}", r.log());
    let lag = listening_at.elapsed();
    assert!(lag < Duration::from_millis(500), "refused connections are retried fast; lag {lag:?}");
    let attempt_lines = r.log().lines().filter(|l| l.contains("attempt ")).count();
    assert!(attempt_lines <= 6, "fast retries are not logged ten times a second:\n{}", r.log());
}

#[test]
fn untrusted_ca_never_passes() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--timeout", "1500ms", "--fail-closed"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(r.log().contains("tls: certificate for localhost is signed by an unknown CA"), "{}", r.log());
    assert!(r.log().contains("--ca-file"), "{}", r.log());
    assert!(!r.log().contains("passed"), "{}", r.log());
    assert_within(&r, Duration::from_millis(1500));
}

#[test]
fn wrong_host_name_never_passes() {
    let ca = TestCa::new();
    let port = free_port();
    let iss = issuer(port);
    let _p = Provider::start_on(
        loopback(port),
        tls_mode(ca.leaf(&["other.test"])),
        serve_at(WELL_KNOWN, discovery_doc(&iss)),
    );
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--timeout", "1500ms", "--fail-closed"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(r.log().contains("tls: certificate is for other.test, not localhost"), "{}", r.log());
}

#[test]
fn issuer_mismatch_never_passes_and_shows_both_values() {
    let ca = TestCa::new();
    let port = free_port();
    let iss = issuer(port);
    let _p = Provider::start_on(
        loopback(port),
        tls_mode(ca.leaf(&["localhost"])),
        serve_at(WELL_KNOWN, discovery_doc("https://sso.example.com")),
    );
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--timeout", "1500ms", "--fail-closed"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(r.log().contains("issuer-mismatch"), "{}", r.log());
    assert!(r.log().contains("\"https://sso.example.com\"") && r.log().contains(&format!("{iss:?}")), "{}", r.log());
    assert!(r.log().contains("--discovery-url"), "hint: {}", r.log());
    assert!(r.log().contains("failures by class: issuer-mismatch="), "{}", r.log());
}

#[test]
fn trailing_slash_is_part_of_the_issuer() {
    let ca = TestCa::new();
    let (_p, with_slash) = ready_provider(&ca, "localhost", "/application/o/app/");
    let r = run(gate_for(&ca, &with_slash));
    assert_eq!(r.code, Some(0), "{}", r.log());

    let mut cmd = gate_for(&ca, with_slash.trim_end_matches('/'));
    cmd.args(["--max-attempts", "1", "--fail-closed"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(r.log().contains("only the trailing slash differs"), "{}", r.log());
}

/// Keycloak realm issuers under both metadata kinds: OIDC appends the well-known suffix, RFC 8414
/// inserts it after the host.
#[test]
fn path_issuers_under_both_metadata_kinds() {
    let ca = TestCa::new();
    let port = free_port();
    let iss = format!("https://localhost:{port}/realms/demo");
    let doc = discovery_doc(&iss);
    let handler: Handler = Arc::new(move |req, _| match req.path.as_str() {
        "/realms/demo/.well-known/openid-configuration" | "/.well-known/oauth-authorization-server/realms/demo" => {
            Reply::json(200, doc.clone())
        }
        _ => Reply::json(404, r#"{"error":"Realm does not exist"}"#),
    });
    let p = Provider::start_on(loopback(port), tls_mode(ca.leaf(&["localhost"])), handler);
    for kind in ["oidc", "oauth"] {
        let mut cmd = gate_for(&ca, &iss);
        cmd.args(["--metadata", kind, "--max-attempts", "1", "--fail-closed"]);
        let r = run(cmd);
        assert_eq!(r.code, Some(0), "{kind}: {}", r.log());
    }
    let paths: Vec<String> = p.seen.lock().unwrap().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        ["/realms/demo/.well-known/openid-configuration", "/.well-known/oauth-authorization-server/realms/demo"]
    );

    let with_slash = format!("{iss}/");
    let mut cmd = gate_for(&ca, &with_slash);
    cmd.args(["--metadata", "oauth", "--max-attempts", "1", "--fail-closed"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "the document says no slash: {}", r.log());
    assert_eq!(p.seen.lock().unwrap().last().unwrap().path, "/.well-known/oauth-authorization-server/realms/demo");
}

#[test]
fn keycloak_404_while_the_realm_is_imported_is_retried() {
    let ca = TestCa::new();
    let port = free_port();
    let iss = format!("https://localhost:{port}/realms/demo");
    let doc = discovery_doc(&iss);
    let handler: Handler = Arc::new(move |_, n| {
        if n < 2 { Reply::json(404, r#"{"error":"Realm does not exist"}"#) } else { Reply::json(200, doc.clone()) }
    });
    let _p = Provider::start_on(loopback(port), tls_mode(ca.leaf(&["localhost"])), handler);
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--interval", "200ms"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("HTTP 404") && r.log().contains("realm is imported"), "{}", r.log());
}

fn always_503(ca: &TestCa) -> Provider {
    Provider::start(tls_mode(ca.leaf(&["localhost"])), Arc::new(|_, _| Reply::text(503, "no healthy upstream")))
}

#[test]
fn fails_open_at_the_deadline_by_default() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let mut cmd = gate_for(&ca, &issuer(p.port()));
    cmd.args(["--timeout", "2s"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("failing open"), "{}", r.log());
    assert!(r.log().contains("last failure http-status: HTTP 503"), "{}", r.log());
    assert!(r.log().contains("failures by class: http-status="), "{}", r.log());
    // The final attempt is made as late as still leaves it time to run; then the gate ends.
    assert!(r.elapsed >= Duration::from_millis(1_700), "waited until the deadline: {:?}", r.elapsed);
    assert_within(&r, Duration::from_secs(2));
}

#[test]
fn fails_closed_on_request() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let mut cmd = gate_for(&ca, &issuer(p.port()));
    cmd.args(["--timeout", "2s", "--fail-closed"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(r.log().contains("failing closed"), "{}", r.log());
    assert_within(&r, Duration::from_secs(2));
}

#[test]
fn max_attempts_ends_before_the_deadline() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let mut cmd = gate_for(&ca, &issuer(p.port()));
    cmd.args(["--max-attempts", "2", "--interval", "100ms", "--fail-closed"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert_eq!(p.count(), 2);
    assert!(r.log().contains("all 2 attempt(s) used"), "{}", r.log());
}

#[test]
fn once_prints_a_summary_or_fails_closed() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/demo");
    let mut cmd = gate_for(&ca, &iss);
    cmd.arg("--once");
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.stdout.contains(&format!("issuer                  {iss}\n")), "{}", r.stdout);
    assert!(r.stdout.contains("token_endpoint") && r.stdout.contains("jwks_uri"), "{}", r.stdout);
    assert!(r.stdout.contains("signing algorithms      RS256"), "{}", r.stdout);

    let down = always_503(&ca);
    let mut cmd = gate_for(&ca, &issuer(down.port()));
    cmd.arg("--once");
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert_eq!(down.count(), 1);
    assert!(r.stdout.is_empty());
    assert!(r.elapsed < Duration::from_secs(2));
}

#[test]
fn configured_entirely_by_environment_variables() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/demo");
    let log = ca.path("termination-log");
    let mut cmd = gate();
    cmd.env("WAIT_FOR_IDP_ISSUER", &iss)
        .env("WAIT_FOR_IDP_CA_FILE", format!("{},{}", ca.ca_arg(), ca.ca_arg()))
        .env("WAIT_FOR_IDP_TIMEOUT", "20s")
        .env("WAIT_FOR_IDP_INTERVAL", "500ms")
        .env("WAIT_FOR_IDP_ATTEMPT_TIMEOUT", "3s")
        .env("WAIT_FOR_IDP_MAX_ATTEMPTS", "3")
        .env("WAIT_FOR_IDP_METADATA", "oidc")
        .env("WAIT_FOR_IDP_STRICT", "true")
        .env("WAIT_FOR_IDP_FAIL_CLOSED", "true")
        .env("WAIT_FOR_IDP_TERMINATION_LOG", &log)
        .env("WAIT_FOR_IDP_QUIET", "true");
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert_eq!(r.log().lines().count(), 1, "--quiet keeps only the final line: {}", r.log());
    assert!(std::fs::read_to_string(&log).unwrap().starts_with("ready: "));

    let mut cmd = gate();
    cmd.env("WAIT_FOR_IDP_ISSUER", &iss)
        .env("WAIT_FOR_IDP_DISCOVERY_URL", format!("{iss}{WELL_KNOWN}"))
        .env("WAIT_FOR_IDP_CA_FILE", ca.ca_arg())
        .env("WAIT_FOR_IDP_SKIP_ISSUER_CHECK", "no")
        .env("WAIT_FOR_IDP_MAX_ATTEMPTS", "1");
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
}

#[test]
fn discovery_url_fetches_elsewhere_but_expects_the_issuer() {
    let ca = TestCa::new();
    let port = free_port();
    let public = "https://sso.example.com/realms/demo";
    let _p = Provider::start_on(
        loopback(port),
        tls_mode(ca.leaf(&["localhost"])),
        serve_at(&format!("/realms/demo{WELL_KNOWN}"), discovery_doc(public)),
    );
    let mut cmd = gate_for(&ca, public);
    cmd.args(["--discovery-url", &format!("https://localhost:{port}/realms/demo{WELL_KNOWN}"), "--once"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
}

#[test]
fn skip_issuer_check_accepts_entra_common_with_a_warning() {
    let ca = TestCa::new();
    let body = std::fs::read_to_string(fixture("entra-common.json")).unwrap();
    let p = Provider::start(tls_mode(ca.leaf(&["localhost"])), serve_at(&format!("/common/v2.0{WELL_KNOWN}"), body));
    let iss = format!("https://localhost:{}/common/v2.0", p.port());
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--once"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1));
    assert!(r.log().contains("{tenantid}"), "{}", r.log());
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--once", "--skip-issuer-check"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("WARN") && r.log().contains("--skip-issuer-check"), "{}", r.log());
}

#[test]
fn kubernetes_api_server_document_passes_without_strict_only() {
    let ca = TestCa::new();
    let port = free_port();
    let iss = issuer(port);
    let body =
        std::fs::read_to_string(fixture("kubernetes-sa.json")).unwrap().replace("https://issuer.example.com", &iss);
    let _p = Provider::start_on(loopback(port), tls_mode(ca.leaf(&["localhost"])), serve_at(WELL_KNOWN, body));
    let mut cmd = gate_for(&ca, &iss);
    cmd.arg("--once");
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("usual member(s) missing: authorization_endpoint"), "{}", r.log());
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--once", "--strict"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(
        r.log().contains("missing-field: --strict: REQUIRED member(s) missing: authorization_endpoint"),
        "{}",
        r.log()
    );
}

#[test]
fn bad_values_exit_2_naming_the_flag_or_variable() {
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (&["--issuer", "https://h", "--timeout", "0"], &[], "--timeout: '0'"),
        (&["--issuer", "https://h", "--timeout", "-32"], &[], "--timeout: '-32'"),
        (&["--issuer", "https://h", "--interval", "fast"], &[], "--interval: 'fast'"),
        (&["--issuer", "sso.example.com"], &[], "--issuer: 'sso.example.com' is not an absolute URL"),
        (&["--issuer", "https://h/?x=1"], &[], "query"),
        (
            &["--issuer", "https://h", "--ca-file", "/nonexistent.pem"],
            &[],
            "--ca-file: CA file '/nonexistent.pem' cannot be read",
        ),
        (
            &["--issuer", "https://h"],
            &[("WAIT_FOR_IDP_TIMEOUT", "5 minutes please")],
            "WAIT_FOR_IDP_TIMEOUT: '5 minutes please'",
        ),
        (&[], &[], "no issuer given"),
        (&["--issuer", "https://h", "--bogus"], &[], "unexpected argument '--bogus'"),
    ];
    for (args, env, expected) in cases {
        let mut cmd = gate();
        cmd.args(*args);
        for (k, v) in *env {
            cmd.env(k, v);
        }
        let r = run(cmd);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.log());
        assert!(r.log().contains(expected), "{args:?}: expected {expected:?} in {}", r.log());
    }
}

#[test]
fn empty_and_non_pem_ca_files_are_rejected() {
    let ca = TestCa::new();
    let empty = ca.path("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let der = ca.path("ca.der");
    std::fs::write(&der, [0x30u8, 0x82, 0x01, 0x00]).unwrap();
    let key = ca.path("key.pem");
    std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n").unwrap();
    for (path, expected) in [(&empty, "is empty"), (&der, "is not PEM"), (&key, "no 'CERTIFICATE' block")] {
        let mut cmd = gate();
        cmd.args(["--issuer", "https://h", "--ca-file"]).arg(path);
        let r = run(cmd);
        assert_eq!(r.code, Some(2));
        assert!(r.log().contains(expected), "{}", r.log());
    }
}

#[test]
fn help_and_version() {
    let mut cmd = gate();
    cmd.arg("--help");
    let r = run(cmd);
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.contains("[env: WAIT_FOR_IDP_TIMEOUT]") && r.stdout.contains("Exit codes"), "{}", r.stdout);
    let mut cmd = gate();
    cmd.arg("--version");
    let r = run(cmd);
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.starts_with("wait-for-idp "));
}

#[test]
fn termination_log_gets_the_outcome() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let log = ca.path("termination-log");
    let mut cmd = gate_for(&ca, &issuer(p.port()));
    cmd.args(["--timeout", "1s", "--termination-log"]).arg(&log);
    let r = run(cmd);
    assert_eq!(r.code, Some(0));
    let line = std::fs::read_to_string(&log).unwrap();
    assert!(line.starts_with("failing open: not ready: https://localhost:"), "{line}");
    assert!(line.contains("last failure: http-status"), "{line}");

    let mut cmd = gate_for(&ca, &issuer(p.port()));
    cmd.args(["--once", "--termination-log", "/nonexistent-dir/log"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "an unwritable log is skipped: {}", r.log());
}

/// As PID 1 the kernel drops SIGTERM unless a handler is installed; the gate installs one.
#[test]
fn sigterm_as_pid_1_ends_the_wait_promptly() {
    let probe = std::process::Command::new("unshare").args(["--pid", "--fork", "--mount-proc", "true"]).status();
    assert!(matches!(probe, Ok(s) if s.success()), "this test needs `unshare --pid --fork` (util-linux, run as root)");
    let ca = TestCa::new();
    let p = always_503(&ca);
    let log = ca.path("termination-log");
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child", bin(), "--issuer", &issuer(p.port())])
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
    std::thread::sleep(Duration::from_millis(100));
    let children = std::fs::read_to_string(format!("/proc/{}/task/{}/children", child.id(), child.id())).unwrap();
    let pid: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let status_line = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(status_line.lines().any(|l| l.starts_with("NSpid:") && l.trim_end().ends_with("\t1")), "{status_line}");
    let sent = Instant::now();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(sent.elapsed() < Duration::from_secs(5), "SIGTERM ignored");
        std::thread::sleep(Duration::from_millis(1));
    };
    let took = sent.elapsed();
    assert_eq!(status.code(), Some(143));
    assert!(took < Duration::from_millis(500), "took {took:?}");
    let line = std::fs::read_to_string(&log).unwrap();
    assert!(line.starts_with("interrupted by SIGTERM"), "{line}");
}
