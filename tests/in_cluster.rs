//! In-cluster realities: --connect-to, bearer tokens, JWKS, several issuers, flapping providers,
//! oauth2-proxy's variables and JSON output, against the local TLS provider.

use crate::support::*;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn jwks_body() -> String {
    std::fs::read_to_string(fixture("keycloak-mafiasi.jwks.json")).unwrap()
}

#[test]
fn connect_to_keeps_the_public_name_for_tls_and_host() {
    let ca = TestCa::new();
    let public = "https://sso.example.test";
    let p = Provider::start(tls_mode(ca.leaf(&["sso.example.test"])), serve_at(WELL_KNOWN, discovery_doc(public)));
    let rule = format!("sso.example.test:443:127.0.0.1:{}", p.port());
    let mut cmd = gate();
    cmd.args(["--issuer", public, "--ca-file", &ca.ca_arg(), "--connect-to", &rule, "--once"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(p.seen.lock().unwrap()[0].header("host"), Some("sso.example.test"));

    // The certificate is still checked against the public name, not the address connected to.
    let wrong =
        Provider::start(tls_mode(ca.leaf(&["127.0.0.1", "localhost"])), serve_at(WELL_KNOWN, discovery_doc(public)));
    let mut cmd = gate();
    cmd.env("WAIT_FOR_IDP_CONNECT_TO", format!("sso.example.test:443:localhost:{}", wrong.port())).args([
        "--issuer",
        public,
        "--ca-file",
        &ca.ca_arg(),
        "--once",
    ]);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["not sso.example.test"]);
}

#[test]
fn bearer_token_goes_to_the_discovery_origin_only_and_is_never_printed() {
    let ca = TestCa::new();
    let secret = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln";
    let token_file = ca.path("token");
    std::fs::write(&token_file, format!("{secret}\n")).unwrap();

    // The JWKS lives on another origin (another port): it must never see the token.
    let keys = Provider::start(tls_mode(ca.leaf(&["localhost"])), Arc::new(|_, _| Reply::json(200, jwks_body())));
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let mut doc: Value = serde_json::from_str(&discovery_doc(&iss)).unwrap();
    doc["jwks_uri"] = Value::String(keys.issuer("/keys"));
    let doc = doc.to_string();
    let expected = format!("Bearer {secret}");
    let api = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(move |req, _| {
            if req.header("authorization") == Some(expected.as_str()) {
                Reply::json(200, doc.clone())
            } else {
                Reply::json(401, r#"{"kind":"Status","reason":"Unauthorized"}"#)
            }
        }),
    );
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--check-jwks", "--once", "--token-file"]).arg(&token_file);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(keys.seen.lock().unwrap()[0].header("authorization"), None, "token sent cross-origin");
    assert!(!r.log().contains(secret) && !r.stdout.contains(secret));

    // Without the token the API server answers 401; the log says so without printing anything secret.
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1));
    assert_logged(&r, &["HTTP 401"]);
    drop(api);
}

/// The Kubernetes API server negotiates content as go-restful does: its JWKS route produces
/// `application/jwk-set+json` only, and a request whose Accept names neither that nor `*/*` gets
/// 406 (measured on kube-apiserver v1.36.3, tests/cluster.rs). Go's net/http sends no Accept
/// header, so jwx and go-oidc never meet the 406; the gate sends none either.
#[test]
fn no_accept_header_as_go_sends_none_so_the_api_servers_jwks_answers() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let mut doc: Value = serde_json::from_str(&discovery_doc(&iss)).unwrap();
    doc["jwks_uri"] = Value::String(format!("{iss}/openid/v1/jwks"));
    let doc = doc.to_string();
    let api = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(move |req, _| {
            let produces = if req.path.ends_with("/jwks") { "application/jwk-set+json" } else { "application/json" };
            match req.header("accept") {
                Some(accept) if !accept.contains(produces) && !accept.contains("*/*") => {
                    Reply::json(406, r#"{"kind":"Status","status":"Failure","message":"406: Not Acceptable"}"#)
                }
                _ if req.path.ends_with("/jwks") => Reply::json(200, jwks_body()),
                _ => Reply::json(200, doc.clone()),
            }
        }),
    );
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--check-jwks", "--once"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    for seen in api.seen.lock().unwrap().iter() {
        assert_eq!(seen.header("accept"), None, "{} asked with an Accept header", seen.path);
    }
}

/// A server that echoes the request's `Authorization` header into its error page, and into a
/// document it serves: the token appears in nothing the gate prints or writes (log, JSON,
/// termination message, the `--once` summary).
#[test]
fn a_token_echoed_by_the_server_is_redacted_everywhere() {
    let ca = TestCa::new();
    let secret = "eyJhbGciOiJSUzI1NiJ9.ZWNob2VkLXNlY3JldA.c2ln";
    let token_file = ca.path("token");
    std::fs::write(&token_file, format!("{secret}\n")).unwrap();
    let (echo_in_error, echo_in_document) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(false)));
    let (in_error, in_doc) = (echo_in_error.clone(), echo_in_document.clone());
    let (api, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", move |iss| {
        let iss = iss.to_string();
        Arc::new(move |req, _| {
            let auth = req.header("authorization").unwrap_or("").to_string();
            if in_error.load(Ordering::SeqCst) {
                return Reply::text(
                    500,
                    &format!("<pre>upstream rejected request headers: authorization: {auth}</pre>"),
                );
            }
            let mut doc: Value = serde_json::from_str(&discovery_doc(&iss)).unwrap();
            if in_doc.load(Ordering::SeqCst) {
                doc["userinfo_endpoint"] = Value::String(format!("{iss}/userinfo?debug={auth}"));
            }
            Reply::json(200, doc.to_string())
        })
    });
    let termination = ca.path("termination-log");
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once", "--output", "json", "--token-file"])
        .arg(&token_file)
        .arg("--termination-log")
        .arg(&termination);
    let r = run(cmd);
    assert_exit(&r, 1);
    let written = std::fs::read_to_string(&termination).unwrap();
    for (name, text) in [("log", r.log()), ("JSON", r.stdout.as_str()), ("termination message", written.as_str())] {
        // Not even a part of it: an excerpt cut inside the token would leave its start.
        assert!(!text.contains(&secret[..12]), "the token is in the {name}:\n{text}");
    }
    assert!(r.stdout.contains("authorization: Bearer [token redacted]"), "{}", r.stdout);

    echo_in_error.store(false, Ordering::SeqCst);
    echo_in_document.store(true, Ordering::SeqCst);
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once", "--token-file"]).arg(&token_file);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(!r.stdout.contains(&secret[..12]) && !r.log().contains(&secret[..12]), "{}\n{}", r.stdout, r.log());
    assert!(r.stdout.contains("debug=Bearer [token redacted]"), "{}", r.stdout);
    drop(api);
}

/// A token file saved with a byte-order mark, a non-ASCII character or white space inside cannot
/// be sent in an HTTP header: a clear error naming the file, at --dry-run and at run time.
#[test]
fn a_token_file_http_cannot_send_is_named() {
    let ca = TestCa::new();
    let (p, iss) = ready_provider(&ca, "localhost", "");
    let token_file = ca.path("token");
    for bad in ["\u{feff}eyJhbGciOi.x.y\n", "eyJh bGciOi.x.y", "t\u{f6}ken", "eyJh\u{a0}bGci"] {
        std::fs::write(&token_file, bad).unwrap();
        let mut cmd = gate();
        cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--dry-run", "--token-file"]).arg(&token_file);
        let r = run(cmd);
        assert_exit(&r, 2);
        assert_logged(&r, &[&token_file.display().to_string(), "printable ASCII only"]);
    }
    // Valid when checked, spoilt before a later attempt (a rotation gone wrong): class token,
    // the file named, and no request sent with it.
    // The provider spoils it as it answers the first attempt: the order is the events' whatever
    // the machine's load, and attempts, not a short deadline, end the run.
    std::fs::write(&token_file, "good-token").unwrap();
    let path = token_file.clone();
    let down = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        reply(move |_, _| {
            std::fs::write(&path, "\u{feff}good-token").unwrap();
            Reply::text(503, "no healthy upstream")
        }),
    );
    let mut cmd = gate();
    cmd.args(["--issuer", &down.issuer(""), "--ca-file", &ca.ca_arg(), "--interval", "200ms"])
        .args(["--timeout", "5m", "--max-attempts", "3", "--fail-closed", "--token-file"])
        .arg(&token_file);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &[&token_file.display().to_string(), "printable ASCII only", "last failure: token"]);
    drop(p);
}

#[test]
fn token_file_is_reread_on_every_attempt() {
    let ca = TestCa::new();
    let token_file = ca.path("token");
    std::fs::write(&token_file, "old-token").unwrap();
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let doc = discovery_doc(&iss);
    // Rotated once the provider has refused the old token: an event, not a race with the start.
    let path = token_file.clone();
    let p = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(move |req, _| match req.header("authorization") {
            Some("Bearer new-token") => Reply::json(200, doc.clone()),
            _ => {
                std::fs::write(&path, "new-token\n").unwrap();
                Reply::json(401, "{}")
            }
        }),
    );
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--interval", "200ms", "--timeout", "10s", "--token-file"])
        .arg(&token_file);
    let r = run(cmd);
    assert_exit(&r, 0);
    let seen: Vec<String> =
        p.seen.lock().unwrap().iter().filter_map(|r| r.header("authorization").map(String::from)).collect();
    assert_eq!(seen.first().map(String::as_str), Some("Bearer old-token"));
    assert_eq!(seen.last().map(String::as_str), Some("Bearer new-token"));
    assert!(!r.log().contains("old-token") && !r.log().contains("new-token"));
}

#[test]
fn empty_or_failing_jwks_is_not_ready() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let doc = discovery_doc(&iss);
    let jwks_calls = Arc::new(AtomicUsize::new(0));
    let calls = jwks_calls.clone();
    let _p = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(move |req, _| {
            if req.path == WELL_KNOWN {
                return Reply::json(200, doc.clone());
            }
            // Dex before its first key: 500 with HTML; Authentik without a key: {}; then keys.
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Reply::text(500, "<html>Internal Server Error</html>"),
                1 => Reply::json(200, "{}"),
                2 => Reply::json(200, r#"{"keys":[]}"#),
                _ => Reply::json(200, jwks_body()),
            }
        }),
    );
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--check-jwks", "--interval", "150ms", "--output", "json"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    let log = r.log();
    assert!(log.contains("attempt 1: jwks: HTTP 500") && log.contains("Dex answers 500"), "{log}");
    assert!(log.contains("attempt 2: jwks: JWK Set has no \"keys\" array"), "{log}");
    assert!(log.contains("attempt 3: jwks: JWK Set holds no key"), "{log}");
    let json: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(json["issuers"][0]["jwks_keys"], 1);
    assert_eq!(json["issuers"][0]["failures"]["jwks"], 3);
}

#[test]
fn several_issuers_all_must_be_ready_one_late() {
    let ca = TestCa::new();
    let started = Instant::now();
    let closed = Reserved::new();
    let never_iss = closed.issuer("");
    let (_a, iss_a) = ready_provider(&ca, "localhost", "");
    let slot_b = Reserved::new();
    let iss_b = slot_b.issuer("/realms/late");
    let doc_b = discovery_doc(&iss_b);
    // Late: 503 for 1.5 s, and at least once, however late a loaded machine makes the first
    // attempt (the log's "attempt 1: ... 503" is then an event, not a race).
    let answered_503 = std::sync::atomic::AtomicBool::new(false);
    let _b = slot_b.listen(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(move |_, _| {
            let first = !answered_503.swap(true, std::sync::atomic::Ordering::SeqCst);
            if first || started.elapsed() < Duration::from_millis(1500) {
                Reply::text(503, "starting")
            } else {
                Reply::json(200, doc_b.clone())
            }
        }),
    );
    let mut cmd = gate();
    cmd.env("WAIT_FOR_IDP_ISSUER", format!("{iss_a},{iss_b}")).args([
        "--ca-file",
        &ca.ca_arg(),
        "--interval",
        "300ms",
        "--output",
        "json",
    ]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(r.elapsed >= Duration::from_millis(1400), "waited for the late one: {:?}", r.elapsed);
    assert_logged(&r, &[&format!("[{iss_b}] attempt 1: http-status: HTTP 503")]);
    assert_logged(&r, &[&format!("ready: {iss_a}, {iss_b}")]);
    let json: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(json["outcome"], "ready");
    assert_eq!(json["issuers"].as_array().unwrap().len(), 2);
    assert!(json["issuers"].as_array().unwrap().iter().all(|i| i["ready"] == true));

    // One never ready: the whole gate is not ready, and the summary names that issuer.
    let mut cmd = gate();
    cmd.args([
        "--issuer",
        &iss_a,
        "--issuer",
        &never_iss,
        "--ca-file",
        &ca.ca_arg(),
        "--timeout",
        "1s",
        "--fail-closed",
        "--output",
        "json",
    ]);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_within(&r, Duration::from_secs(1));
    let json: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(json["outcome"], "not-ready");
    assert_eq!(json["exit_code"], 1);
    assert_eq!(json["issuers"][0]["ready"], true);
    assert_eq!(json["issuers"][1]["ready"], false);
    assert_eq!(json["issuers"][1]["last_failure"]["class"], "connect");
    assert_logged(&r, &[&format!("not ready: {never_iss} (timeout of 1.00s used up")]);
}

/// Issue 17, section 5: one issuer out of attempts ends the wait for all; the others are
/// reported as cut short by it, each with its last attempt (finished, or where the one under way
/// had got to), never as a timeout of a minute used up after a second.
#[test]
fn several_issuers_each_report_their_last_attempt_when_one_ends_the_wait() {
    let ca = TestCa::new();
    let failing = Provider::start(tls_mode(ca.leaf(&["localhost"])), reply(|_, _| Reply::text(503, "down")));
    let hung = Provider::start(tls_mode(ca.leaf(&["localhost"])), reply(|_, _| Reply::Hang));
    let (failing_iss, hung_iss) = (failing.issuer("/realms/a"), hung.issuer("/realms/b"));
    let mut cmd = gate();
    cmd.args(["--issuer", &failing_iss, "--issuer", &hung_iss, "--ca-file", &ca.ca_arg()]);
    cmd.args(["--timeout", "1m", "--interval", "200ms", "--max-attempts", "3", "--attempt-timeout", "30s"]);
    cmd.args(["--output", "json"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(r.running() < Duration::from_secs(10), "ended by the first issuer: {:?}", r.elapsed);
    let json = r.json();
    let (a, b) = (&json["issuers"][0], &json["issuers"][1]);
    assert_eq!(a["verdict"], "attempts-exhausted");
    assert_eq!(a["last_failure"]["class"], "http-status");
    assert_eq!(b["verdict"], "cut-short", "{json}");
    let in_flight = b["in_flight"].as_str().unwrap_or_default();
    assert!(in_flight.contains("waiting for the response (localhost)"), "{json}");
    assert!(!r.log().contains("timeout of 1m0s used up"), "{}", r.log());
    assert_logged(
        &r,
        &[&format!("[{hung_iss}] not ready (cut short after "), &format!(": {failing_iss} ended the wait)")],
    );
    assert_logged(&r, &["before any attempt finished; attempt 1 was under way: waiting for the response"]);

    // Both out of time: the one that ran out first cut nothing short.
    let mut cmd = gate();
    cmd.args(["--issuer", &failing_iss, "--issuer", &hung_iss, "--ca-file", &ca.ca_arg()]);
    cmd.args(["--timeout", "2s", "--interval", "200ms", "--output", "json"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    let json = r.json();
    assert_eq!(json["issuers"][0]["verdict"], "deadline-reached", "{json}");
    assert_eq!(json["issuers"][1]["verdict"], "deadline-reached", "{json}");
    assert!(!r.log().contains("cut short"), "{}", r.log());
}

/// Issue 17, section 4: the resolved addresses are in the JSON, private ones marked, without a
/// word by default (in a cluster most providers are private); on request the gate fails where an
/// SSRF-guarded client refuses, naming the address and the client setting that allows it.
#[test]
fn private_addresses_are_recorded_and_refused_on_request() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let r = run_args(gate_for(&ca, &iss), &["--once", "--output", "json"]);
    assert_exit(&r, 0);
    let addresses = r.json()["issuers"][0]["addresses"].clone();
    let loopback = serde_json::json!({"host": "localhost", "address": "127.0.0.1", "private": "loopback"});
    assert!(addresses.as_array().unwrap().contains(&loopback), "{addresses}");
    assert!(!r.log().contains("private"), "no warning by default: {}", r.log());

    for (how, env) in [("flag", false), ("variable", true)] {
        let mut cmd = gate_for(&ca, &iss);
        cmd.args(["--once", "--output", "json"]);
        if env {
            cmd.env("WAIT_FOR_IDP_REFUSE_PRIVATE_ADDRESSES", "true");
        } else {
            cmd.arg("--refuse-private-addresses");
        }
        let r = run(cmd);
        assert_exit(&r, 1);
        let failure = &r.json()["issuers"][0]["last_failure"];
        assert_eq!(failure["class"], "private-address", "{how}: {failure}");
        assert_logged(&r, &["localhost resolves to 127.0.0.1, a loopback address", "--jwks-allow-private-ip"]);
    }
    let r = run_args(gate_for(&ca, &iss), &["--dry-run", "--refuse-private-addresses"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains("CGNAT ones refused, as SSRF-guarded clients do"), "{}", r.stdout);
}

#[test]
fn flapping_provider_needs_consecutive_successes() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let doc = discovery_doc(&iss);
    // A rolling restart: good, bad, good, good, bad, then steady.
    let p = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        Arc::new(
            move |_, n| if n == 1 || n == 4 { Reply::text(502, "bad gateway") } else { Reply::json(200, doc.clone()) },
        ),
    );
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--successes", "3", "--interval", "100ms"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(p.count(), 8, "ready only after requests 6, 7 and 8 passed in a row\n{}", r.log());
    assert_logged(&r, &["(2 consecutive;"]);
}

#[test]
fn oauth2_proxy_variables_configure_the_gate() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/demo");
    let mut cmd = gate();
    cmd.env("OAUTH2_PROXY_OIDC_ISSUER_URL", &iss)
        .env("OAUTH2_PROXY_PROVIDER_CA_FILES", ca.ca_arg())
        .env("OAUTH2_PROXY_CLIENT_ID", "ignored")
        .arg("--once");
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_logged(&r, &["issuer read from OAUTH2_PROXY_OIDC_ISSUER_URL"]);

    // The proxy's own switch to skip the issuer check is honoured too.
    let mut cmd = gate();
    cmd.env("OAUTH2_PROXY_OIDC_ISSUER_URL", format!("{iss}/"))
        .env("OAUTH2_PROXY_PROVIDER_CA_FILES", ca.ca_arg())
        .env("OAUTH2_PROXY_INSECURE_OIDC_SKIP_ISSUER_VERIFICATION", "true")
        .arg("--once");
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_logged(&r, &["--skip-issuer-check"]);
}

#[test]
fn json_output_parses_and_matches_the_outcome() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once", "--output", "json"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    let json: Value = serde_json::from_str(r.stdout.trim()).expect("stdout is one JSON object");
    assert_eq!(json["outcome"], "ready");
    assert_eq!(json["exit_code"], 0);
    assert_eq!(json["attempts"], 1);
    assert!(json["elapsed_ms"].as_u64().unwrap() < 5_000);
    let i = &json["issuers"][0];
    assert_eq!(i["issuer"], iss.as_str());
    assert_eq!(i["verdict"], "ready");
    assert_eq!(i["endpoints"]["jwks_uri"], format!("{iss}/protocol/openid-connect/certs"));
    assert_eq!(i["last_failure"], Value::Null);
    assert_eq!(i["jwks_keys"], Value::Null, "not fetched without --check-jwks");

    let mut cmd = gate();
    let closed = Reserved::new();
    cmd.args(["--issuer", &closed.issuer(""), "--timeout", "1s", "--output", "json"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(0));
    let json: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(json["outcome"], "failed-open");
    assert_eq!(json["issuers"][0]["verdict"], "deadline-reached");
    assert_eq!(json["issuers"][0]["last_failure"]["class"], "connect");
    assert!(json["issuers"][0]["failures"]["connect"].as_u64().unwrap() >= 5, "fast retries: {json}");
}
