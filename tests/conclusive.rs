//! What waiting cannot fix (issue 36 §5, docs/ready.md "What waiting cannot fix"): an issuer off
//! only by a trailing `/` or a default port written out, Keycloak's answer for a base URL without
//! `/realms/…`, and the guarded client's own refusals end the wait at the first attempt, said in
//! the log, the JSON (`conclusive`) and `/readyz`; a realm not created yet, and a CA file that does
//! not sign the server, stay transient. And the guarded client's own time limit: a provider that
//! answers after 6 s is ready for `--client toolhive` (10 s), not for the default attempt (5 s).

use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;

/// The gate for `issuer`, fail open, with a deadline no test reaches when the wait ends at once.
fn gate_json(ca: &TestCa, issuer: &str, extra: &[&str]) -> Run {
    let mut cmd = gate_for(ca, issuer);
    cmd.args(["--timeout", "60s", "--output", "json"]).args(extra);
    run_with_limit(cmd, std::time::Duration::from_secs(90))
}

fn assert_final(r: &Run) {
    assert_exit(r, 0);
    let v = r.json();
    let target = &v["issuers"][0];
    assert_eq!((&target["verdict"], &target["attempts"]), (&"conclusive".into(), &1.into()), "{}", r.log());
    assert_eq!(target["last_failure"]["conclusive"], true, "{}", r.log());
    assert!(r.log().contains("waiting cannot fix this"), "{}", r.log());
}

#[test]
fn an_issuer_off_by_a_trailing_slash_ends_the_wait_at_once() {
    let ca = TestCa::new();
    let (_p, issuer) =
        Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/realms/x", |i| serve_at_issuer(i, &format!("{i}/")));
    assert_final(&gate_json(&ca, &issuer, &[]));
}

#[test]
fn an_explicit_default_port_ends_the_wait_at_once() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let port = slot.port;
    let p = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        serve_at_issuer("https://localhost/realms/x", "https://localhost/realms/x"),
    );
    let route = format!("localhost:443:127.0.0.1:{port}");
    let r = gate_json(&ca, "https://localhost:443/realms/x", &["--connect-to", &route]);
    assert_final(&r);
    assert_eq!(p.count(), 1);
}

#[test]
fn keycloak_s_base_url_ends_the_wait_and_a_realm_not_created_yet_does_not() {
    let ca = TestCa::new();
    let answer = |body: &'static str| reply(move |_, _| Reply::json(404, body));
    let base = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        answer(r#"{"error":"Unable to find matching target resource method"}"#),
    );
    let r = gate_json(&ca, &base.issuer(""), &[]);
    assert_final(&r);
    assert!(r.log().contains("only under /realms/NAME"), "{}", r.log());
    let realm = Provider::start(tls_mode(ca.leaf(&["localhost"])), answer(r#"{"error":"Realm does not exist"}"#));
    let r = gate_json(&ca, &realm.issuer("/realms/x"), &["--max-attempts", "2", "--interval", "10ms"]);
    assert_eq!(r.json()["issuers"][0]["verdict"], "attempts-exhausted", "{}", r.log());
}

#[test]
fn a_ca_file_that_does_not_sign_the_server_stays_transient() {
    let (ca, other) = (TestCa::new(), TestCa::new());
    let (_p, issuer) = ready_provider(&ca, "localhost", "/realms/x");
    let r = gate_json(&other, &issuer, &["--max-attempts", "2", "--interval", "10ms"]);
    let target = &r.json()["issuers"][0];
    assert_eq!(
        (&target["verdict"], &target["last_failure"]["conclusive"]),
        (&"attempts-exhausted".into(), &false.into())
    );
}

/// ToolHive's own refusal (an endpoint off the loopback issuer's host), with `--serve`:
/// `/readyz` says waiting cannot fix it.
#[test]
fn the_guarded_client_s_refusal_is_said_by_readyz() {
    let ca = TestCa::new();
    let (_p, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/realms/x", |i| {
        let mut doc: serde_json::Value = serde_json::from_str(&discovery_doc(i)).unwrap();
        doc["token_endpoint"] = "https://idp.example/token".into();
        serve_at(&format!("/realms/x{WELL_KNOWN}"), doc.to_string())
    });
    let port = free_port();
    let mut cmd = gate_for(&ca, &issuer);
    cmd.args(["--client", "toolhive", "--serve", &format!("127.0.0.1:{port}"), "--timeout", "60s"]);
    let live = LiveGate::spawn(cmd);
    let hang = std::time::Instant::now() + HANG_BOUND;
    let body = loop {
        let body = readyz(port);
        if body.contains("failed open") {
            break body;
        }
        assert!(std::time::Instant::now() < hang, "/readyz never failed open: {body}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    live.wait_logged("waiting cannot fix this");
    assert!(body.contains("(missing-field, waiting cannot fix it)"), "{body}");
    live.wait_logged("ToolHive refuses the document");
}

#[test]
fn a_slow_provider_the_client_would_wait_for_is_ready() {
    let ca = TestCa::new();
    let (_p, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/realms/x", |i| {
        let doc = discovery_doc(i);
        reply(move |_, _| {
            std::thread::sleep(std::time::Duration::from_secs(6));
            Reply::json(200, doc.clone())
        })
    });
    let once = |client: &[&str]| {
        let mut cmd = gate_for(&ca, &issuer);
        cmd.args(["--once", "--timeout", "30s"]).args(client);
        run_with_limit(cmd, std::time::Duration::from_secs(60))
    };
    assert_exit(&once(&["--client", "toolhive"]), 0);
    let r = once(&[]);
    assert_exit(&r, 1);
    assert_logged(&r, &["timeout"]);
}

/// A document for `issuer` saying `said`, at the issuer's well-known URL.
fn serve_at_issuer(issuer: &str, said: &str) -> Handler {
    let path = issuer.split_once("://").map_or("", |(_, rest)| rest.find('/').map_or("", |i| &rest[i..]));
    serve_at(&format!("{}{WELL_KNOWN}", path.trim_end_matches('/')), discovery_doc(said))
}

fn readyz(port: u16) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return String::new() };
    let _ = write!(s, "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}
