//! What reaches the screen from elsewhere: the HTTP library's own lines under `RUST_LOG=trace`
//! (which would print a query's `client_secret`, a redirect's `code` and a proxy's credentials),
//! and a hostile provider's text (control characters that forge a `ready:` line or drive the
//! terminal, and lists long enough to make one line of a megabyte).

use crate::support::*;
use std::sync::Arc;

const CLIENT_SECRET: &str = "client-secret-q7w8e9r0";
const CODE: &str = "auth-code-z1x2c3v4";

/// With `RUST_LOG=trace`, a discovery URL carrying `client_secret` and a redirect carrying an
/// authorization `code`: neither is in the log, from the gate or from its libraries; the
/// libraries' debug lines still come through, with their paths masked.
#[test]
fn rust_log_trace_shows_no_query_secret_and_no_redirect_code() {
    let ca = TestCa::new();
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let doc = discovery_doc(iss);
        Arc::new(move |req, _| {
            if req.path.starts_with(WELL_KNOWN) {
                Reply::redirect(302, &format!("/final?code={CODE}&state=s"))
            } else {
                Reply::json(200, doc.clone())
            }
        })
    });
    let url = format!("{iss}{WELL_KNOWN}?client_id=gate&client_secret={CLIENT_SECRET}");
    let mut cmd = gate();
    cmd.args(["--discovery-url", &url, "--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once"]);
    cmd.env("RUST_LOG", "trace");
    let r = run(cmd);
    assert_exit(&r, 0);
    for secret in [CLIENT_SECRET, CODE] {
        assert!(!r.stderr.contains(secret) && !r.stdout.contains(secret), "{secret}:\n{}\n{}", r.stderr, r.stdout);
    }
    assert!(r.stderr.contains("DEBUG Call<"), "the libraries' debug lines pass:\n{}", r.stderr);
}

/// A proxy's password under `RUST_LOG=trace`: in nothing printed, whether as written or as the
/// `Proxy-Authorization` credentials.
#[test]
fn rust_log_trace_shows_no_proxy_password() {
    let ca = TestCa::new();
    let proxy = TestProxy::http();
    let (_p, iss) = ready_provider(&ca, PROXIED_NAME, "");
    let mut cmd = gate_for(&ca, &iss);
    cmd.arg("--once").env("HTTPS_PROXY", proxy.url("http", "user:proxy-pass-5r6t7y@")).env("RUST_LOG", "trace");
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(proxy.seen().len(), 1, "the proxy was used");
    // base64("user:proxy-pass-5r6t7y") holds "cHJveHktcGFzcy01cjZ0N3k" from its 6th byte on.
    for secret in ["proxy-pass-5r6t7y", "dXNlcjpwcm94eS1wYXNz", "proxy-pass"] {
        assert!(!r.stderr.contains(secret) && !r.stdout.contains(secret), "{secret}:\n{}", r.stderr);
    }
}

/// What a hostile provider sends to forge a line of the log and drive the terminal.
const FORGED: &str = "x\n[+0.1s] INFO  ready: https://evil\u{1b}[2J\u{9b}31m\u{202e}";

/// A provider serving `doc` (made from its issuer) as its document and `keys` as its JWK Set.
fn hostile(ca: &TestCa, doc: impl Fn(&str) -> serde_json::Value, keys: String) -> (Provider, String) {
    Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", move |iss| {
        let doc = doc(iss).to_string();
        Arc::new(
            move |req, _| {
                if req.path == WELL_KNOWN { Reply::json(200, doc.clone()) } else { Reply::json(200, keys.clone()) }
            },
        )
    })
}

fn document(iss: &str) -> serde_json::Value {
    serde_json::from_str(&discovery_doc(iss)).unwrap()
}

/// Runs the gate once (with `extra`) and returns the run and its termination message.
fn once(ca: &TestCa, iss: &str, extra: &[&str]) -> (Run, String) {
    let termination = ca.path("termination-log");
    let mut cmd = gate_for(ca, iss);
    cmd.args(["--once", "--termination-log"]).arg(&termination).args(extra);
    let r = run(cmd);
    let written = std::fs::read_to_string(&termination).unwrap_or_default();
    (r, written)
}

/// Nothing of `FORGED` reaches an output raw: no line of its own, no escape sequence, no bidi
/// override; its escaped form is there instead.
fn assert_escaped(name: &str, text: &str) {
    assert!(!text.lines().any(|l| l.starts_with("[+0.1s]")), "{name} has a forged line:\n{text}");
    assert!(!text.contains(['\u{1b}', '\u{9b}', '\u{202e}']), "{name} has a raw control:\n{text:?}");
}

/// The JWK Set's `alg` and `use`, and the document's members the `--once` summary shows, hold
/// a line break, ESC, CSI and a bidi override: the text log, stdout (text and JSON) and the
/// termination message show them escaped.
#[test]
fn a_providers_control_characters_are_escaped_in_every_output() {
    let ca = TestCa::new();
    let keys =
        serde_json::json!({ "keys": [{ "kty": "RSA", "alg": FORGED, "use": FORGED, "n": "AQAB", "e": "AQAB" }] });
    let (_p, iss) = hostile(&ca, document, keys.to_string());
    for output in ["text", "json"] {
        let (r, written) = once(&ca, &iss, &["--check-jwks", "--output", output]);
        assert_exit(&r, 1);
        for (name, text) in [("log", r.log()), ("stdout", r.stdout.as_str()), ("termination message", written.as_str())]
        {
            assert_escaped(name, text);
        }
        assert!(written.contains("x\\n[+0.1s] INFO  ready: https://evil\\u001b[2J\\u009b31m\\u202e"), "{written}");
    }

    let forged_doc = |iss: &str| {
        let mut doc = document(iss);
        doc["userinfo_endpoint"] = FORGED.into();
        doc["id_token_signing_alg_values_supported"] = serde_json::json!(["RS256", FORGED]);
        doc
    };
    let (_p, iss) = hostile(&ca, forged_doc, String::new());
    let (r, written) = once(&ca, &iss, &[]);
    assert_exit(&r, 0);
    for (name, text) in [("log", r.log()), ("summary", r.stdout.as_str()), ("termination message", written.as_str())] {
        assert_escaped(name, text);
    }
    assert!(r.stdout.contains("userinfo_endpoint       x\\n[+0.1s]"), "{}", r.stdout);
    let (r, _) = once(&ca, &iss, &["--output", "json"]);
    assert_escaped("JSON", &r.stdout);
    assert_eq!(
        r.json()["issuers"][0]["endpoints"]["userinfo_endpoint"],
        FORGED,
        "the JSON says the same, escaped\n{}",
        r.stdout
    );
}

/// A JWK Set of 40,000 keys none of which fits, and a document listing 40,000 algorithms with a
/// `token_endpoint` of 400 KB: no line
/// of the log, stdout or the termination message passes 16 KiB, where container runtimes split
/// lines, and each cut says how much it left out.
#[test]
fn a_providers_huge_lists_are_bounded_in_every_line() {
    let ca = TestCa::new();
    let key = serde_json::json!({ "kty": "oct", "alg": "HS256", "k": "AQAB" });
    let keys = serde_json::json!({ "keys": vec![key; 40_000] }).to_string();
    let many_algs = |iss: &str| {
        let mut doc = document(iss);
        let algs: Vec<String> = (0..40_000).map(|i| format!("X{i}")).chain(["RS256".into()]).collect();
        doc["id_token_signing_alg_values_supported"] = algs.into();
        doc["token_endpoint"] = format!("{iss}/token?{}", "x".repeat(400_000)).into();
        doc
    };
    let (_p, iss) = hostile(&ca, many_algs, keys);
    let runs = [
        (&["--check-jwks"][..], 1),
        (&["--check-jwks", "--output", "json"][..], 1),
        (&[][..], 0),
        (&["--output", "json"][..], 0),
    ];
    for (extra, code) in runs {
        let (r, written) = once(&ca, &iss, extra);
        assert_exit(&r, code);
        for (name, text) in [("log", r.log()), ("stdout", r.stdout.as_str()), ("termination message", written.as_str())]
        {
            let longest = text.lines().map(str::len).max().unwrap_or(0);
            assert!(longest < 16 * 1024, "{extra:?}: a line of {longest} bytes in the {name}");
        }
        let said = format!("{}{}", r.log(), r.stdout);
        assert!(said.contains("more bytes left out]"), "{extra:?}: no marker:\n{said}");
    }
}

/// A plain-http proxy whose error page echoes the request head, `Proxy-Authorization` included:
/// the password is in no output, neither as written nor in the header's base64.
#[test]
fn a_proxy_password_echoed_by_the_proxy_is_never_printed() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let echoed = head.lines().find(|l| l.starts_with("Proxy-Authorization")).unwrap_or_default();
            let body = format!("proxy error; you sent {echoed}");
            let reply = format!(
                "HTTP/1.1 502 Bad Gateway\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes());
        }
    });
    let termination = std::env::temp_dir().join(format!("wait-for-idp-proxy-echo-{}", std::process::id()));
    let mut cmd = gate();
    cmd.args(["--issuer", &format!("http://{PROXIED_NAME}:8080"), "--once", "--output", "json", "--termination-log"])
        .arg(&termination)
        .env("HTTP_PROXY", format!("http://user:proxy-pass-5r6t7y@127.0.0.1:{port}"));
    let r = run(cmd);
    let written = std::fs::read_to_string(&termination).unwrap_or_default();
    let _ = std::fs::remove_file(&termination);
    assert_exit(&r, 1);
    assert!(r.log().contains("proxy error"), "the proxy's page is quoted: {}", r.log());
    // base64("user:proxy-pass-5r6t7y") = dXNlcjpwcm94eS1wYXNzLTVyNnQ3eQ==
    for (name, text) in [("log", r.log()), ("JSON", r.stdout.as_str()), ("termination message", written.as_str())] {
        for secret in ["proxy-pass-5r6t7y", "cm94eS1wYXNzLTVy"] {
            assert!(!text.contains(secret), "{secret} in the {name}:\n{text}");
        }
    }
}
