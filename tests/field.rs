//! Found in the field (issue 9): each test here failed before its fix. The real binary against
//! local servers that misbehave the way real ones did.

use crate::support::*;
use serde_json::Value;
use std::sync::Arc;

// 1. The waiting side ends an attempt at its own deadline, whatever the socket does.

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
