//! `Retry-After` on a 429 or 503: honoured in both its forms (delay-seconds and an HTTP-date),
//! from whichever fetch of an attempt it came with (the metadata, the JWK Set, an `auto` URL the
//! attempt moved past), and never at the cost of the final attempt before the deadline. The
//! header's parsing and the pause arithmetic (cap, spread, deadline) are unit tests in
//! `src/net/response.rs` and `src/wait.rs`.

use crate::support::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn retry_after_is_honoured_in_both_forms() {
    let ca = TestCa::new();
    for form in ["seconds", "date"] {
        let slot = Reserved::new();
        let iss = slot.issuer("");
        let doc = discovery_doc(&iss);
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let times = seen.clone();
        let p = slot.listen(
            tls_mode(ca.leaf(&["localhost"])),
            Arc::new(move |_, n| {
                times.lock().unwrap().push(Instant::now());
                if n > 0 {
                    return Reply::json(200, doc.clone());
                }
                let value = match form {
                    "seconds" => "2".to_string(),
                    _ => httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(3)),
                };
                Reply::Response {
                    status: if form == "seconds" { 429 } else { 503 },
                    headers: vec![("Retry-After".into(), value)],
                    body: b"slow down".to_vec(),
                }
            }),
        );
        let mut cmd = gate_for(&ca, &iss);
        cmd.args(["--interval", "200ms", "--timeout", "20s"]);
        let r = run(cmd);
        assert_exit(&r, 0);
        assert_eq!(p.count(), 2);
        let times = seen.lock().unwrap();
        let gap = times[1] - times[0];
        assert!(gap >= Duration::from_millis(1_900), "{form}: asked to wait, came back after {gap:?}");
        assert_logged(&r, &["honoured; next in"]);
    }
}

#[test]
fn retry_after_never_costs_the_final_attempt() {
    let ca = TestCa::new();
    let p = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(|_, _| Reply::Response {
            status: 503,
            headers: vec![("Retry-After".into(), "3600".into())],
            body: Vec::new(),
        }),
    );
    let mut cmd = gate_for(&ca, &p.issuer(""));
    cmd.args(["--timeout", "2s", "--fail-closed"]);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_eq!(p.count(), 2, "the last attempt is still made before the deadline:\n{}", r.log());
    assert!(r.log().contains("Retry-After 1h0m0s not honoured: the deadline comes first"), "{}", r.log());
    assert_within(&r, Duration::from_secs(2));
}

/// A `Retry-After` counts whichever fetch of the attempt it came with: the
/// JWK Set, and an `auto` URL the attempt moved past (its 429 is a client error, so the next URL
/// is tried and the attempt fails there with a 404 that asks for nothing).
#[test]
fn retry_after_is_honoured_on_every_fetch() {
    let ca = TestCa::new();
    let jwks = std::fs::read_to_string(fixture("keycloak-mafiasi.jwks.json")).unwrap();
    for case in ["jwks", "auto URL moved past"] {
        let slot = Reserved::new();
        let iss = slot.issuer("");
        let doc = discovery_doc(&iss);
        let (jwks, seen) = (jwks.clone(), Arc::new(std::sync::Mutex::new(Vec::new())));
        let times = seen.clone();
        let p = slot.listen(
            tls_mode(ca.leaf(&["localhost"])),
            reply(move |req, _| {
                let asking = || Reply::with_headers(429, &[("Retry-After", "2")], "slow down");
                let mut times = times.lock().unwrap();
                let first = !times.iter().any(|(path, _)| *path == req.path);
                times.push((req.path.clone(), Instant::now()));
                match (case, req.path.as_str()) {
                    ("jwks", WELL_KNOWN) => Reply::json(200, doc.clone()),
                    ("jwks", _) if first => asking(),
                    ("jwks", _) => Reply::json(200, jwks.clone()),
                    (_, "/.well-known/oauth-authorization-server") if first => asking(),
                    (_, WELL_KNOWN) if first => Reply::json(404, "{}"),
                    (_, WELL_KNOWN) => Reply::json(200, doc.clone()),
                    _ => Reply::json(404, "{}"),
                }
            }),
        );
        let mut cmd = gate_for(&ca, &iss);
        cmd.args(["--interval", "200ms", "--timeout", "20s"]);
        cmd.args(if case == "jwks" { ["--check-jwks"].as_slice() } else { ["--metadata", "auto"].as_slice() });
        let r = run(cmd);
        assert_exit(&r, 0);
        assert_logged(&r, &["Retry-After 2.00s honoured; next in"]);
        let times = seen.lock().unwrap();
        let attempts: Vec<Instant> = times.iter().filter(|(path, _)| path == &times[0].0).map(|(_, t)| *t).collect();
        assert_eq!(attempts.len(), 2, "{case}: {:?}\n{}", p.paths(), r.log());
        let gap = attempts[1] - attempts[0];
        assert!(gap >= Duration::from_millis(1_900), "{case}: asked to wait 2 s, came back after {gap:?}");
    }
}
