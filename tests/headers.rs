//! `--header-file NAME=PATH`: extra request headers for providers behind a zero-trust edge
//! (Cloudflare Access service tokens). Each value is a secret handled as the token file is: sent
//! only to the discovery URL's origin (never to a `jwks_uri` elsewhere, never past a redirect to
//! another origin, which is followed without them), re-read on every attempt, never printed even when a server echoes it; a name
//! or value HTTP cannot send is exit 2 naming the file, and class `header-file` at run time.

use crate::support::*;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

const ID: &str = "0123456789abcdef0123456789abcdef.access";
const SECRET: &str = "cf-secret-5f2b8c1d9e7a4b3c6d0e1f2a3b4c5d6e";

/// The two Cloudflare Access service-token files, and their `--header-file` arguments.
fn service_token(ca: &TestCa, secret: &str) -> Vec<String> {
    std::fs::write(ca.path("cf-id"), format!("{ID}\n")).unwrap();
    std::fs::write(ca.path("cf-secret"), format!("{secret}\n")).unwrap();
    vec![
        "--header-file".into(),
        format!("CF-Access-Client-Id={}", ca.path("cf-id").display()),
        "--header-file".into(),
        format!("CF-Access-Client-Secret={}", ca.path("cf-secret").display()),
    ]
}

fn keys() -> String {
    std::fs::read_to_string(fixture("keycloak-mafiasi.jwks.json")).unwrap()
}

fn carries(req: &Request) -> bool {
    req.header("cf-access-client-id").is_some() || req.header("cf-access-client-secret").is_some()
}

#[test]
fn headers_go_to_the_discovery_origin_only() {
    let ca = TestCa::new();
    let args = service_token(&ca, SECRET);
    // The keys live on another origin: they must never see the headers.
    let elsewhere = Provider::start(tls_mode(ca.leaf(&["localhost"])), Arc::new(|_, _| Reply::json(200, keys())));
    let keys_at = elsewhere.issuer("/keys");
    let (edge, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", move |iss| {
        let mut doc: Value = serde_json::from_str(&discovery_doc(iss)).unwrap();
        doc["jwks_uri"] = Value::String(keys_at.clone());
        let doc = doc.to_string();
        Arc::new(move |req, _| match (req.header("cf-access-client-id"), req.header("cf-access-client-secret")) {
            (Some(ID), Some(SECRET)) => Reply::json(200, doc.clone()),
            _ => Reply::text(403, "Forbidden: Cloudflare Access"),
        })
    });
    let r = run_args(gate_for(&ca, &iss), &[&["--check-jwks", "--once"][..], &str_refs(&args)].concat());
    assert_exit(&r, 0);
    assert!(edge.seen.lock().unwrap().iter().all(carries), "sent to the discovery origin");
    let seen = elsewhere.seen.lock().unwrap().clone();
    assert!(!seen.is_empty() && !seen.iter().any(carries), "sent to a jwks_uri on another origin: {seen:?}");
    assert!(!r.log().contains(SECRET) && !r.stdout.contains(SECRET));

    // A redirect on the same origin stays behind the same edge, and carries them, as it carries
    // the token; one to another origin is followed, as Go follows it, without them.
    let (moved, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", move |iss| {
        let doc = discovery_doc(iss);
        Arc::new(move |req, _| match req.path.as_str() {
            WELL_KNOWN => Reply::redirect(302, "/moved"),
            "/moved" if carries(req) => Reply::json(200, doc.clone()),
            _ => Reply::json(404, "{}"),
        })
    });
    let r = run_args(gate_for(&ca, &iss), &[&["--once"][..], &str_refs(&args)].concat());
    assert_exit(&r, 0);
    assert_eq!(moved.paths(), [WELL_KNOWN, "/moved"]);
    let other = Provider::start(tls_mode(ca.leaf(&["localhost"])), Arc::new(|_, _| Reply::json(404, "{}")));
    let (_redirecting, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |_| {
        let to = other.issuer(WELL_KNOWN);
        Arc::new(move |_, _| Reply::redirect(302, &to))
    });
    let r = run_args(gate_for(&ca, &iss), &[&["--once"][..], &str_refs(&args)].concat());
    assert_exit(&r, 1);
    assert_logged(&r, &["HTTP 404"]);
    let seen = other.seen.lock().unwrap().clone();
    assert!(!seen.is_empty() && !seen.iter().any(carries), "sent across a redirect to another origin: {seen:?}");
}

fn str_refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn a_header_file_is_reread_on_every_attempt() {
    let ca = TestCa::new();
    let file = ca.path("api-key");
    std::fs::write(&file, "old-key-0123456789").unwrap();
    // The key is rotated once the provider has refused the old one: an event, whenever a loaded
    // machine lets the first attempt come.
    let path = file.clone();
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let doc = discovery_doc(iss);
        Arc::new(move |req, _| match req.header("x-api-key") {
            Some("new-key-0123456789") => Reply::json(200, doc.clone()),
            _ => {
                std::fs::write(&path, "new-key-0123456789\n").unwrap();
                Reply::json(401, "{}")
            }
        })
    });
    let tenant = ca.path("tenant");
    std::fs::write(&tenant, "acme\n").unwrap();
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--interval", "200ms", "--timeout", "10s"])
        .env("WAIT_FOR_IDP_HEADER_FILE", format!("X-Api-Key={}, X-Tenant={}", file.display(), tenant.display()));
    let r = run(cmd);
    assert_exit(&r, 0);
    let seen: Vec<String> =
        p.seen.lock().unwrap().iter().filter_map(|r| r.header("x-api-key").map(String::from)).collect();
    assert_eq!(seen.first().map(String::as_str), Some("old-key-0123456789"));
    assert_eq!(seen.last().map(String::as_str), Some("new-key-0123456789"));
    assert!(p.seen.lock().unwrap().iter().all(|r| r.header("x-tenant") == Some("acme")), "both, from the variable");
    assert!(!r.log().contains("old-key-0123456789") && !r.log().contains("new-key-0123456789"), "{}", r.log());
}

/// A name HTTP cannot send, a name the gate sets itself, and a value with a line break, a
/// byte-order mark or nothing in it: exit 2 naming the file, at --dry-run and at start; a file
/// spoilt by a later rotation fails the attempt with class `header-file`, naming the file.
#[test]
fn a_header_file_http_cannot_send_is_named() {
    let ca = TestCa::new();
    let (p, iss) = ready_provider(&ca, "localhost", "");
    let file = ca.path("value");
    let at = file.display().to_string();
    std::fs::write(&file, "fine-value").unwrap();
    let names = [
        (format!("X Api Key={at}"), "' ' is not allowed in one"),
        (format!("X-Api-Key:{at}"), "is not NAME=PATH"),
        (format!("Host={at}"), "the gate sets Host from the URL"),
        (format!("Content-Length={at}"), "a GET sends none"),
        (format!("Connection={at}"), "hop-by-hop"),
    ];
    for (value, why) in &names {
        for dry_run in [true, false] {
            let mut cmd = gate_for(&ca, &iss);
            cmd.args(["--once", "--header-file", value]);
            if dry_run {
                cmd.arg("--dry-run");
            }
            let r = run(cmd);
            assert_exit(&r, 2);
            assert_logged(&r, &["--header-file", &at, why]);
        }
    }
    let token = ca.path("token");
    std::fs::write(&token, "a-token").unwrap();
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--dry-run", "--header-file", &format!("Authorization={at}"), "--token-file"]).arg(&token);
    let r = run(cmd);
    assert_exit(&r, 2);
    assert_logged(&r, &[&at, "names Authorization, which --token-file already sends"]);

    for (bad, why) in [
        ("value\r\nX-Injected: 1", "holds a line break"),
        ("\u{feff}value", "holds a line break, a control or non-ASCII character"),
        (" \n", "is empty"),
    ] {
        std::fs::write(&file, bad).unwrap();
        for dry_run in [true, false] {
            let mut cmd = gate_for(&ca, &iss);
            cmd.args(["--once", "--header-file", &format!("X-Api-Key={at}")]);
            if dry_run {
                cmd.arg("--dry-run");
            }
            let r = run(cmd);
            assert_exit(&r, 2);
            assert_logged(&r, &["--header-file", &format!("header file '{at}' (for X-Api-Key)"), why]);
        }
    }
    assert!(p.seen.lock().unwrap().is_empty(), "no request sent with a bad header");

    // Valid when checked, spoilt before a later attempt: by the provider as it answers the first
    // one, so the order is the events' whatever the machine's load; attempts, not a short
    // deadline, end the run.
    std::fs::write(&file, "good-value").unwrap();
    let path = file.clone();
    let down = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        reply(move |_, _| {
            std::fs::write(&path, "good\nvalue").unwrap();
            Reply::text(503, "no healthy upstream")
        }),
    );
    let mut cmd = gate_for(&ca, &down.issuer(""));
    cmd.args(["--interval", "200ms", "--timeout", "5m", "--max-attempts", "3", "--fail-closed"]);
    cmd.args(["--header-file", &format!("X-Api-Key={at}")]);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(
        &r,
        &[&format!("header file {at} (for X-Api-Key)"), "holds a line break", "last failure: header-file"],
    );
}

/// A server that echoes the request's headers into its error page: the value appears in nothing
/// the gate prints or writes (log, JSON, termination message); `--dry-run` shows the header's
/// name and file, never its value.
#[test]
fn a_header_value_echoed_by_the_server_is_never_printed() {
    let ca = TestCa::new();
    let args = service_token(&ca, SECRET);
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |_| {
        Arc::new(|req, _| {
            let cf = req.headers.iter().filter(|(n, _)| n.to_ascii_lowercase().starts_with("cf-"));
            let echoed = cf.map(|(n, v)| format!("{n}: {v}")).collect::<Vec<_>>().join("\n");
            Reply::text(500, &format!("<pre>upstream rejected request headers:\n{echoed}</pre>"))
        })
    });
    let termination = ca.path("termination-log");
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--once", "--output", "json", "--termination-log"]).arg(&termination).args(&args);
    let r = run(cmd);
    assert_exit(&r, 1);
    let written = std::fs::read_to_string(&termination).unwrap();
    for (name, text) in [("log", r.log()), ("JSON", r.stdout.as_str()), ("termination message", written.as_str())] {
        assert!(!text.contains(&SECRET[..12]) && !text.contains(&ID[..12]), "a value is in the {name}:\n{text}");
    }
    assert!(r.stdout.contains("[header value redacted]"), "{}", r.stdout);

    let r = run_args(gate_for(&ca, &iss), &[&["--dry-run"][..], &str_refs(&args)].concat());
    assert_exit(&r, 0);
    let secret_file = ca.path("cf-secret").display().to_string();
    assert!(r.stdout.contains(&format!("CF-Access-Client-Secret from {secret_file}")), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("CF-Access-Client-Secret={secret_file}")), "{}", r.stdout);
    assert!(!r.stdout.contains(&SECRET[..12]) && !r.log().contains(&SECRET[..12]), "{}", r.stdout);
}

/// A secret with the characters escapes change: `/`, `+`, `=`.
const SLASHED: &str = "cf/secret+5f2b8c1d=9e7a4b3c6d0e1f2a3b4c5d6e";

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// A server that echoes the secret header's value in each form a server may use (percent-encoded
/// in a body and in a `Location`, JSON-escaped, base64 at each alignment and in both alphabets,
/// wrapped over lines): no form of it is in the log, the JSON or the termination message.
#[test]
fn a_header_value_echoed_in_any_encoding_is_never_printed() {
    let b64_at = |prefix: &str| base64(format!("{prefix}{SLASHED}").as_bytes());
    let url_safe = |s: String| s.replace('+', "-").replace('/', "_").trim_end_matches('=').to_string();
    let wrapped =
        |s: &str| s.as_bytes().chunks(16).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>();
    let cases: Vec<(&str, String)> = vec![
        ("percent", percent(SLASHED)),
        ("JSON", SLASHED.replace('/', "\\/")),
        ("base64", b64_at("")),
        ("base64 after 1 byte", b64_at("u:")),
        ("base64 after 2 bytes", b64_at("us:")),
        ("base64 after 3 bytes", b64_at("use:")),
        ("URL-safe base64", url_safe(b64_at("user:"))),
        ("URL-safe base64 after 1 byte", url_safe(b64_at("a"))),
        ("wrapped", wrapped(SLASHED).join("\n")),
        ("wrapped base64", wrapped(&b64_at("k=")).join("\r\n")),
    ];
    let ca = TestCa::new();
    let args = service_token(&ca, SLASHED);
    for (name, echoed) in cases {
        let body =
            format!("{{\"error\":\"rejected\",\"echo\":\"{}\"}}", echoed.replace('\n', "\\n").replace('\r', "\\r"));
        let shown = echoed.clone();
        let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", move |_| {
            Arc::new(
                move |_, _| if name == "wrapped" { Reply::text(500, &shown) } else { Reply::json(400, body.clone()) },
            )
        });
        assert_no_form_printed(&ca, &iss, &args, name, &echoed);
    }
    // In a `Location`, percent-encoded: a redirect to plain http is refused, naming where it led.
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |_| {
        Arc::new(|_, _| Reply::redirect(302, &format!("http://127.0.0.1:9/cb?v={}", percent(SLASHED))))
    });
    assert_no_form_printed(&ca, &iss, &args, "Location", &percent(SLASHED));
}

/// Runs the gate once against `iss` and checks that no 12 characters of the echoed form, within
/// the secret's part of it, are in the log, the JSON or the termination message.
fn assert_no_form_printed(ca: &TestCa, iss: &str, args: &[String], name: &str, echoed: &str) {
    let termination = ca.path("termination-log");
    let mut cmd = gate_for(ca, iss);
    cmd.args(["--once", "--output", "json", "--termination-log"]).arg(&termination).args(args);
    let r = run(cmd);
    assert_exit(&r, 1);
    let written = std::fs::read_to_string(&termination).unwrap();
    let inner: Vec<&str> = echoed.lines().filter(|l| l.len() >= 12).collect();
    let (log, json) = (r.log().to_string(), r.stdout.clone());
    for (output, text) in [("log", log.as_str()), ("JSON", json.as_str()), ("termination message", written.as_str())] {
        for line in &inner {
            let middle = &line[(line.len() - 12) / 2..][..12];
            assert!(!text.contains(middle), "{name}: {middle:?} is in the {output}:\n{text}");
        }
    }
    assert!(r.log().contains("[header value redacted]"), "{name}: {}", r.log());
}

/// A token or header file that is a FIFO blocked the gate for ever, before its deadline started,
/// even under `--dry-run`; `/dev/zero` was read until memory ran out. What is not a regular file
/// is refused, naming it, and a file is read up to a bound the error names. A symbolic link to a
/// regular file (how Kubernetes mounts a Secret) is still read.
#[test]
fn a_token_or_header_file_that_is_not_a_regular_file_or_too_large_is_refused() {
    let ca = TestCa::new();
    let fifo = ca.path("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let fifo_at = fifo.display().to_string();
    let cases = [
        (vec!["--token-file".to_string(), fifo_at.clone()], vec![fifo_at.as_str(), "a FIFO, not a regular file"]),
        (vec!["--header-file".to_string(), format!("X-Key={fifo_at}")], vec![fifo_at.as_str(), "not a regular file"]),
        (
            vec!["--token-file".to_string(), "/dev/zero".to_string()],
            vec!["/dev/zero", "a device or socket, not a regular file"],
        ),
    ];
    for (args, phrases) in &cases {
        let mut cmd = gate();
        cmd.args(["--issuer", "https://sso.example.com", "--dry-run"]).args(args);
        let r = run_with_limit(cmd, Duration::from_secs(20));
        assert_exit(&r, 2);
        assert_logged(&r, phrases);
    }
    let big = ca.path("big-token");
    std::fs::write(&big, "x".repeat(9 * 1024)).unwrap();
    let mut cmd = gate();
    cmd.args(["--issuer", "https://sso.example.com", "--dry-run", "--token-file"]).arg(&big);
    let r = run(cmd);
    assert_exit(&r, 2);
    assert_logged(&r, &["over 8 KiB, the most for a token file"]);

    // Kubernetes: token -> ..data/token -> ..2026_12_01/token.
    std::fs::create_dir(ca.path("..2026_12_01")).unwrap();
    std::fs::write(ca.path("..2026_12_01/token"), "a-token").unwrap();
    std::os::unix::fs::symlink("..2026_12_01", ca.path("..data")).unwrap();
    std::os::unix::fs::symlink("..data/token", ca.path("token")).unwrap();
    let mut cmd = gate();
    cmd.args(["--issuer", "https://sso.example.com", "--dry-run", "--token-file"]).arg(ca.path("token"));
    cmd.arg("--header-file").arg(format!("X-Key={}", ca.path("token").display()));
    assert_exit(&run(cmd), 0);
}

/// Issue 36 §6: a 401 to the token the gate sent said "the API server's issuer needs
/// --token-file", to a user who had given one. It says the token was refused now; without one,
/// the hint stays.
#[test]
fn a_401_to_the_token_sent_says_it_was_refused() {
    let ca = TestCa::new();
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |_| {
        reply(|_, _| Reply::json(401, r#"{"kind":"Status","reason":"Unauthorized"}"#))
    });
    let token = ca.path("token");
    std::fs::write(&token, "expired-token-0123456789").unwrap();
    let mut cmd = gate_for(&ca, &iss);
    cmd.arg("--once").arg("--token-file").arg(&token);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["HTTP 401", "refused the credentials from --token-file that the gate sent"]);
    assert!(!r.log().contains("needs --token-file"), "{}", r.log());
    let r = run_args(gate_for(&ca, &iss), &["--once"]);
    assert_logged(&r, &["HTTP 401", "needs --token-file"]);
}
