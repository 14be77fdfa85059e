//! Found in the field (issue 9): each test here failed before its fix. The real binary against
//! local servers that misbehave the way real ones did.

use crate::support::*;
use serde_json::Value;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

// 1. The waiting side ends an attempt at its own deadline, whatever the socket does.

/// A provider that accepts connections and then never answers (frozen: SIGSTOP, a hung JVM, a
/// NetworkPolicy that drops after the handshake). Several gates at once, as after a cold boot,
/// used to end up in the same late timer bucket and never report their last attempt.
#[test]
fn a_frozen_provider_is_always_reported_with_the_stage_it_hung_in() {
    let ca = TestCa::new();
    let silent = Provider::start(Mode::Silent, Arc::new(|_, _| Reply::Hang));
    let hung = Provider::start(tls_mode(ca.leaf(&["localhost"])), Arc::new(|_, _| Reply::Hang));
    let mut cases = Vec::new();
    for (timeout, provider, stage) in [
        ("3s", &silent, "TLS handshake with localhost not complete within"),
        ("5s", &silent, "TLS handshake with localhost not complete within"),
        ("10s", &silent, "TLS handshake with localhost not complete within"),
        ("3s", &hung, "no response from localhost within"),
        ("5s", &hung, "no response from localhost within"),
    ] {
        for _ in 0..3 {
            cases.push((timeout, provider.port(), stage));
        }
    }
    std::thread::scope(|s| {
        let runs: Vec<_> = cases
            .iter()
            .map(|(timeout, port, stage)| {
                let ca = &ca;
                s.spawn(move || {
                    let mut cmd = gate_for(ca, &issuer_at("localhost", *port, ""));
                    cmd.args(["--timeout", timeout, "--output", "json"]);
                    (*timeout, *stage, run(cmd))
                })
            })
            .collect();
        for handle in runs {
            let (timeout, stage, r) = handle.join().unwrap();
            assert_eq!(r.code, Some(0), "fails open: {}", r.log());
            assert!(r.log().contains(&format!("last failure timeout: {stage}")), "--timeout {timeout}: {}", r.log());
            assert!(!r.log().contains("last failure: none"), "--timeout {timeout}: {}", r.log());
            let json = r.json();
            assert_eq!(json["issuers"][0]["last_failure"]["class"], "timeout", "{json}");
            assert!(json["attempts"].as_u64().unwrap() >= 1, "{json}");
            assert_within(&r, humantime::parse_duration(timeout).unwrap());
        }
    });
}

#[test]
fn attempt_timeout_is_kept_by_the_waiter() {
    let silent = Provider::start(Mode::Silent, Arc::new(|_, _| Reply::Hang));
    let mut cmd = gate();
    cmd.args(["--issuer", &silent.issuer(""), "--attempt-timeout", "1s"]);
    cmd.args(["--timeout", "3500ms", "--fail-closed", "--interval", "100ms"]);
    let r = run(cmd);
    assert_exit(&r, 1);
    let full = r.log().lines().filter(|l| l.contains("not complete within 1.00s")).count();
    assert!(full >= 3, "three whole 1 s attempts fit in 3.5 s: {}", r.log());
    assert_logged(&r, &["not complete within 1.00s"]);
}

/// A resolver that never answers: the attempt is class `dns`, not a bare timeout.
#[test]
#[ignore = "needs root: unshare and a resolver on port 53; the test command runs it"]
fn a_resolver_that_never_answers_is_class_dns() {
    require_root_tools();
    // A "name server" on a loopback address of its own that swallows every query.
    let server = UdpSocket::bind("127.53.53.53:53").expect("bind udp/53 (the tests run as root)");
    let dir = tempfile::tempdir().unwrap();
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&resolv, "nameserver 127.53.53.53\noptions timeout:30 attempts:1\n").unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "sh", "-c", r#"mount --bind "$0" /etc/resolv.conf && exec "$@""#])
        .arg(&resolv)
        .arg(bin())
        .args(["--issuer", "https://idp.never-resolves.test", "--timeout", "2s", "--fail-closed"])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let r = run(cmd);
    drop(server);
    assert_exit(&r, 1);
    assert!(
        r.log().contains("attempt 1: dns: no answer from the resolver within")
            && r.log().contains("(looking up idp.never-resolves.test)"),
        "{}",
        r.log()
    );
    assert_logged(&r, &["last failure: dns"]);
    assert_within(&r, Duration::from_secs(2));
}

/// A listener whose accept queue is full drops new SYNs: the connect itself hangs.
#[test]
fn a_connect_that_hangs_is_named_as_such() {
    let listener = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    listener.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
    listener.listen(0).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    // Fill the queue (never accepted) until a further connect no longer completes.
    let mut held = Vec::new();
    while let Ok(c) = TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
        held.push(c);
        assert!(held.len() < 64, "the accept queue never filled");
    }
    let mut cmd = gate();
    cmd.args(["--issuer", &issuer_at("localhost", addr.port(), ""), "--timeout", "1500ms", "--fail-closed"]);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["timeout: no TCP connection to "]);
    drop(held);
}

// 8. Messages that misled.

#[test]
fn messages_say_what_is_actually_wrong() {
    let ca = TestCa::new();
    // The host differs only in case.
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/x");
    let mut cmd = gate_for(&ca, &iss.replace("localhost", "LocalHost"));
    cmd.arg("--once");
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["the hosts differ in case", "byte for byte"]);
    assert!(!r.log().contains("the paths differ"), "{}", r.log());
    assert!(!r.log().contains(" left)"), "--once has no time left to speak of: {}", r.log());

    // A body encoded although no encoding was asked for.
    let gz = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(|_, _| Reply::Response {
            status: 200,
            headers: vec![("Content-Encoding".into(), "gzip".into())],
            body: vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3],
        }),
    );
    let mut cmd = gate_for(&ca, &gz.issuer(""));
    cmd.arg("--once");
    let r = run(cmd);
    assert_logged(&r, &["body: the body is gzip-encoded although"]);
    assert!(!r.log().contains("UTF-8"), "{}", r.log());

    // 401 on discovery: a wrong path or a disabled issuer, not only a network policy.
    let locked = Provider::start(tls_mode(ca.leaf(&["localhost"])), Arc::new(|_, _| Reply::json(401, "{}")));
    let mut cmd = gate_for(&ca, &locked.issuer(""));
    cmd.arg("--once");
    let r = run(cmd);
    assert_logged(&r, &["check the path", "enabled"]);

    // --check-jwks where only HS256 is offered: no key can ever exist.
    let slot = Reserved::new();
    let hs_iss = slot.issuer("");
    let mut doc: Value = serde_json::from_str(&discovery_doc(&hs_iss)).unwrap();
    doc["id_token_signing_alg_values_supported"] = serde_json::json!(["HS256"]);
    let doc = doc.to_string();
    let _hs = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(
            move |req, _| if req.path == WELL_KNOWN { Reply::json(200, doc.clone()) } else { Reply::json(403, "{}") },
        ),
    );
    let mut cmd = gate_for(&ca, &hs_iss);
    cmd.args(["--once", "--check-jwks"]);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert!(
        r.log().contains("only with HS256 (a shared secret), so no public key exists to check: drop --check-jwks"),
        "{}",
        r.log()
    );
    // Issue 17, section 6: the cause is known, so no guess at a gateway or network policy.
    assert!(!r.log().contains("network policy") && !r.log().contains("metadata is normally public"), "{}", r.log());
    assert_logged(&r, &["/protocol/openid-connect/certs answered HTTP 403)"]);
}

fn require_root_tools() {
    let ok = Command::new("unshare").args(["--mount", "true"]).status().map(|s| s.success()).unwrap_or(false);
    assert!(ok, "this test needs `unshare --mount` (util-linux, run as root)");
}
