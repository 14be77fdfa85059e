//! Failure messages say what is actually wrong rather than a plausible guess: hosts that differ
//! only in case, a body encoded although only gzip was asked for, a 401 on discovery (a wrong
//! path or a disabled issuer), `--check-jwks` where only HS256 is offered (no public key can
//! exist, so no gateway or network policy is blamed). Certificate problems are explained in
//! `tls_trust.rs`, bad input in `configuration.rs`.

use crate::support::*;
use serde_json::Value;
use std::sync::Arc;

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

    // A body encoded although only gzip was asked for (as Go's transport asks), and not JSON.
    let br = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(|_, _| Reply::Response {
            status: 200,
            headers: vec![("Content-Encoding".into(), "br".into())],
            body: vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3],
        }),
    );
    let mut cmd = gate_for(&ca, &br.issuer(""));
    cmd.arg("--once");
    let r = run(cmd);
    assert_logged(&r, &["body: the body is br-encoded although the gate asked only for gzip"]);
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

/// `http://` sent to a port that speaks TLS: the attempt's failure says so and to use
/// `https://`, whether the server answers in TLS (an alert) or, as nginx and Go do, with a 400
/// saying so in plain HTTP.
#[test]
fn plain_http_to_a_tls_port_says_to_use_https() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/x");
    let plain = iss.replacen("https://", "http://", 1);
    let r = run_args(gate_for(&ca, &plain), &["--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["last failure: tls: localhost answered the plain-HTTP request in TLS", "use an https:// URL"]);

    let alert = Provider::start(
        Mode::Greeting(vec![0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46]),
        reply(|_, _| Reply::text(200, "")),
    );
    let r = run_args(gate_for(&ca, &alert.issuer("").replacen("https://", "http://", 1)), &["--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["answered the plain-HTTP request in TLS"]);

    let nginx = Provider::start(
        Mode::Plain,
        reply(|_, _| Reply::text(400, "<center>The plain HTTP request was sent to HTTPS port</center>")),
    );
    let r = run_args(gate_for(&ca, &nginx.issuer("").replacen("https://", "http://", 1)), &["--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["HTTP 400", "the server says this port serves HTTPS: use an https:// URL"]);
}

/// A 404 under Keycloak's pre-17 `/auth` prefix says that Keycloak 17 and later dropped it.
#[test]
fn a_404_under_keycloaks_auth_prefix_says_it_was_dropped() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/main");
    let old = iss.replace("/realms/main", "/auth/realms/main");
    let r = run_args(gate_for(&ca, &old), &["--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["HTTP 404", "Keycloak 17 and later serve /realms/… without the /auth prefix"]);
}

/// Keycloak's realm hint only where the path looks like Keycloak's (issue 25): a 404 from a path
/// that is not `/realms/…` or `/auth/…` names no realm, and the JSON names the status and URL.
#[test]
fn a_404_names_keycloak_only_on_a_keycloak_path() {
    let ca = TestCa::new();
    for (path, keycloak) in [("/realms/demo", true), ("/tenant/v2.0", false)] {
        let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), path, |_| {
            reply(|_, _| Reply::json(404, r#"{"error":"not found"}"#))
        });
        let r = run_args(gate_for(&ca, &iss), &["--once", "--output", "json"]);
        assert_exit(&r, 1);
        assert_eq!(r.log().contains("realm is imported"), keycloak, "{path}: {}", r.log());
        let failure = &r.json()["issuers"][0]["last_failure"];
        assert_eq!(failure["http_status"], 404, "{failure}");
        assert_eq!(failure["url"], format!("{iss}/.well-known/openid-configuration"), "{failure}");
        assert_eq!((&failure["stage"], &failure["proxy"]), (&Value::Null, &Value::Null));
        drop(p);
    }
}
