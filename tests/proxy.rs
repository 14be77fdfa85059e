//! Proxies, exactly as the guarded Go clients use them (`http.ProxyFromEnvironment` and the
//! Transport's proxy dialing): `HTTPS_PROXY` for https URLs and `HTTP_PROXY` for http ones,
//! upper case first, `ALL_PROXY` never; loopback never proxied; every `NO_PROXY` form; http,
//! https and SOCKS5 proxies with credentials; a value judged only where a URL uses it; a failing
//! proxy named as the failure; a password never shown. The provider is `idp.test`, a name only
//! the local proxies (tests/support/proxies.rs) map to 127.0.0.1: a pass proves the proxy was
//! used. Go's matching rules themselves are unit-tested over Go's own cases
//! (src/go_proxy/mod.rs).

use crate::support::*;
use std::process::Command;

/// The provider under the name only the proxies know.
fn proxied_provider(ca: &TestCa) -> (Provider, String) {
    ready_provider(ca, PROXIED_NAME, "")
}

/// The gate, once, for `issuer`, with these variables.
fn gate_with(ca: &TestCa, issuer: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = gate_for(ca, issuer);
    cmd.arg("--once").envs(env.iter().copied());
    cmd
}

/// Reaches the provider's name directly, as `/etc/hosts` would: for routes that are direct.
fn direct_to(cmd: &mut Command, provider: &Provider) {
    let port = provider.port();
    cmd.args(["--connect-to", &format!("{PROXIED_NAME}:{port}:127.0.0.1:{port}")]);
}

/// A loopback port nothing listens on.
fn dead_port() -> u16 {
    Reserved::new().port
}

#[test]
fn https_proxy_tunnels_with_credentials_and_the_certificate_is_still_checked() {
    let ca = TestCa::new();
    let proxy = TestProxy::http();
    let (provider, iss) = proxied_provider(&ca);
    let url = proxy.url("http", "user:s3cret@");
    let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &url)]));
    assert_exit(&r, 0);
    // base64("user:s3cret")
    assert_eq!(proxy.seen(), [format!("CONNECT {PROXIED_NAME}:{} auth=Basic dXNlcjpzM2NyZXQ=", provider.port())]);

    // Through the tunnel the certificate is checked against the provider's name.
    let slot = Reserved::new();
    let wrong = issuer_at(PROXIED_NAME, slot.port, "");
    let _w = slot.listen(tls_mode(ca.leaf(&["other.test"])), serve_at(WELL_KNOWN, discovery_doc(&wrong)));
    let r = run(gate_with(&ca, &wrong, &[("HTTPS_PROXY", &url)]));
    assert_exit(&r, 1);
    assert_logged(&r, &["certificate is for other.test"]);
    assert!(!r.log().contains("s3cret"), "{}", r.log());
}

#[test]
fn upper_case_first_empty_is_unset_and_all_proxy_is_never_read() {
    let ca = TestCa::new();
    let (good, dead) = (TestProxy::http(), format!("http://127.0.0.1:{}", dead_port()));
    let (provider, iss) = proxied_provider(&ca);
    let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &good.url("http", "")), ("https_proxy", &dead)]));
    assert_exit(&r, 0);
    let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", ""), ("https_proxy", &good.url("http", ""))]));
    assert_exit(&r, 0);
    assert_eq!(good.seen().len(), 2);

    // ALL_PROXY is curl's, not Go's: never used, and never judged (socks4 and a bad port).
    for (name, value) in [("ALL_PROXY", good.url("http", "")), ("all_proxy", "socks4://p:99999".to_string())] {
        let mut cmd = gate_with(&ca, &iss, &[(name, &value)]);
        direct_to(&mut cmd, &provider);
        assert_exit(&run(cmd), 0);
    }
    assert_eq!(good.seen().len(), 2, "ALL_PROXY was not used");
}

#[test]
fn http_proxy_does_not_apply_to_https_and_the_start_line_says_so() {
    let ca = TestCa::new();
    let proxy = TestProxy::http();
    let (provider, iss) = proxied_provider(&ca);
    let mut cmd = gate_with(&ca, &iss, &[("HTTP_PROXY", &proxy.url("http", ""))]);
    direct_to(&mut cmd, &provider);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(proxy.seen().is_empty());
    let first = r.log().lines().next().unwrap_or_default();
    assert!(
        first.contains("HTTP_PROXY is set but applies to http URLs only") && first.contains("HTTPS_PROXY"),
        "{first}"
    );
}

#[test]
fn loopback_is_never_proxied() {
    let ca = TestCa::new();
    let dead = format!("http://127.0.0.1:{}", dead_port());
    for name in ["localhost", "127.0.0.1"] {
        let (_p, iss) = ready_provider(&ca, name, "");
        let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &dead), ("NO_PROXY", "")]));
        assert_exit(&r, 0);
    }
}

#[test]
fn no_proxy_takes_every_form_go_takes() {
    let ca = TestCa::new();
    let proxy = TestProxy::http();
    let (provider, iss) = proxied_provider(&ca);
    let port = provider.port();
    let direct = [".test".to_string(), "*.test".into(), "idp.test".into(), format!("IDP.test:{port}"), "*".into()];
    for entry in &direct {
        let mut cmd =
            gate_with(&ca, &iss, &[("HTTPS_PROXY", &proxy.url("http", "")), ("no_proxy", &format!("x, {entry}"))]);
        direct_to(&mut cmd, &provider);
        assert_exit(&run(cmd), 0);
    }
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());
    for entry in ["other.test", ".idp.test", "dp.test", &format!("idp.test:{}", port + 1)] {
        let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &proxy.url("http", "")), ("NO_PROXY", entry)]));
        assert_exit(&r, 0);
    }
    assert_eq!(proxy.seen().len(), 4, "entries that do not match leave the proxy in use");
}

#[test]
fn an_https_proxy_is_verified_with_the_gate_s_trust() {
    let ca = TestCa::new();
    let (_p, iss) = proxied_provider(&ca);
    let proxy = TestProxy::https(ca.leaf(&["127.0.0.1"]));
    let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &proxy.url("https", "u:pw@"))]));
    assert_exit(&r, 0);
    assert_eq!(proxy.seen().len(), 1);

    let untrusted = TestProxy::https(self_signed(&["127.0.0.1"]));
    let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &untrusted.url("https", "u:pw@"))]));
    assert_exit(&r, 1);
    assert_logged(
        &r,
        &[
            "proxy",
            "TLS to proxy https://***@127.0.0.1:",
            "(HTTPS_PROXY) failed: certificate for 127.0.0.1 is signed by an unknown CA",
            "--ca-file",
        ],
    );
    assert!(untrusted.seen().is_empty(), "nothing was sent to an unverified proxy");
    assert!(!r.log().contains("UnknownIssuer"), "no library's debug text: {}", r.log());
}

#[test]
fn socks5_gets_the_host_name_and_the_credentials() {
    let ca = TestCa::new();
    let (provider, iss) = proxied_provider(&ca);
    let proxy = TestProxy::socks5(Some(("user", "p/w")));
    for scheme in ["socks5", "socks5h"] {
        let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &proxy.url(scheme, "user:p%2Fw@"))]));
        assert_exit(&r, 0);
    }
    let sent = format!("SOCKS5 name {PROXIED_NAME}:{} auth=user:p/w", provider.port());
    assert_eq!(proxy.seen(), [sent.clone(), sent]);

    let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &proxy.url("socks5", "user:wrong@"))]));
    assert_exit(&r, 1);
    assert_logged(&r, &["proxy", "socks5://***@127.0.0.1:", "(HTTPS_PROXY)", "rejected the username and password"]);
    assert!(!r.log().contains("wrong"), "{}", r.log());
}

#[test]
fn http_urls_go_to_http_proxy_in_absolute_form() {
    let (slot, proxy) = (Reserved::new(), TestProxy::http());
    let iss = format!("http://{PROXIED_NAME}:{}", slot.port);
    let _p = slot.listen(Mode::Plain, serve_at(WELL_KNOWN, discovery_doc(&iss)));
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--once"]).env("http_proxy", proxy.url("http", "u:pw@"));
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(proxy.seen(), [format!("GET {iss}{WELL_KNOWN} auth=Basic dTpwdw==")]);
}

#[test]
fn a_malformed_proxy_fails_at_start_only_where_go_would_use_it() {
    let ca = TestCa::new();
    let (provider, iss) = proxied_provider(&ca);
    // The last: a password whose `@` was forgotten, which Go reads as a port.
    for value in
        ["http://p:99999", "http://p:abc", "http://p:-1", "p:abc", "ftp://p:21", "http://svc-user:Secr3tPassw0rd"]
    {
        for dry_run in [false, true] {
            let mut cmd = gate_with(&ca, &iss, &[("HTTPS_PROXY", value)]);
            if dry_run {
                cmd.arg("--dry-run");
            }
            let r = run(cmd);
            assert_exit(&r, 2);
            assert_logged(&r, &["HTTPS_PROXY: '"]);
            assert!(!r.log().contains("Secr3t"), "{}", r.log());
        }
    }
    // Not used: an http URL's variable for an https issuer, a loopback issuer, a NO_PROXY host.
    let (_l, local) = ready_provider(&ca, "localhost", "");
    let mut unused = vec![
        gate_with(&ca, &iss, &[("HTTP_PROXY", "http://p:99999")]),
        gate_with(&ca, &local, &[("HTTPS_PROXY", "http://p:99999")]),
        gate_with(&ca, &iss, &[("HTTPS_PROXY", "http://p:99999"), ("NO_PROXY", PROXIED_NAME)]),
    ];
    for cmd in &mut unused {
        direct_to(cmd, &provider);
    }
    for cmd in unused {
        assert_exit(&run(cmd), 0);
    }
}

#[test]
fn a_url_found_at_run_time_that_would_use_a_malformed_proxy_fails_that_attempt() {
    let ca = TestCa::new();
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let mut doc: serde_json::Value = serde_json::from_str(&discovery_doc(iss)).unwrap();
        doc["jwks_uri"] = format!("https://{PROXIED_NAME}/keys").into();
        serve_at(WELL_KNOWN, doc.to_string())
    });
    let r = run(gate_with(
        &ca,
        &iss,
        &[("HTTPS_PROXY", "http://user:s3cret@p:99999"), ("WAIT_FOR_IDP_CHECK_JWKS", "true")],
    ));
    assert_exit(&r, 1);
    assert_logged(&r, &["jwks", "HTTPS_PROXY: 'http://***@p:99999' is not a usable proxy", "a port from 1 to 65535"]);
    assert!(!r.log().contains("s3cret"), "{}", r.log());
}

#[test]
fn a_proxy_password_never_appears_anywhere() {
    let ca = TestCa::new();
    let (_p, iss) = proxied_provider(&ca);
    let proxy = TestProxy::http();
    let addr = proxy.addr;
    // Used and working, then values Go cannot use: unencoded '/', '?', '#', and scheme-less.
    let values = [
        format!("http://user:s3cret@{addr}"),
        format!("http://user:s3/cret@{addr}"),
        format!("http://user:s3?cret@{addr}"),
        format!("http://user:s3#cret@{addr}"),
        format!("user:s3?cret@{addr}"),
        format!("user:s3cret@{}:99999", addr.ip()),
    ];
    for value in &values {
        for extra in [&["--output", "json", "-v"][..], &["--dry-run"]] {
            let log = ca.path("termination-log");
            let mut cmd = gate_with(&ca, &iss, &[("HTTPS_PROXY", value)]);
            cmd.args(extra).arg("--termination-log").arg(&log);
            let r = run(cmd);
            let written = std::fs::read_to_string(&log).unwrap_or_default();
            for (what, text) in [("stderr", r.log()), ("stdout", &r.stdout), ("termination log", &written)] {
                assert!(!text.contains("s3") && !text.contains("cret"), "{value} {extra:?}: {what} shows it: {text}");
            }
        }
    }
}

/// Issue 35 §4: a proxy that quotes what it received (the username, the `Basic` header) put the
/// credentials into the log, the JSON and the termination message when the username was the
/// secret or the password was under 8 characters. Now the pair, its `Basic` form and each part
/// are scrubbed at any length.
#[test]
fn a_proxy_that_quotes_the_credentials_shows_none_of_them() {
    use std::io::{Read, Write};
    let ca = TestCa::new();
    let (_p, iss) = proxied_provider(&ca);
    // Answers every CONNECT with a 407 that quotes the username and the header it was sent.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let quoted = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let user_now = quoted.clone();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let auth = head.lines().find_map(|l| l.strip_prefix("Proxy-Authorization: ")).unwrap_or("none");
            let user = user_now.lock().unwrap().clone();
            let answer = format!("HTTP/1.1 407 user {user} not allowed ({auth})\r\nContent-Length: 0\r\n\r\n");
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    for (user, password) in [("apikey-0123456789abcdef", ""), ("ops", "hunter2"), ("k9", "zq")] {
        *quoted.lock().unwrap() = user.to_string();
        let log = ca.path("termination-log");
        let value = format!("http://{user}:{password}@{addr}");
        let mut cmd = gate_with(&ca, &iss, &[("HTTPS_PROXY", value.as_str())]);
        cmd.args(["--output", "json", "-v", "--termination-log"]).arg(&log);
        let r = run(cmd);
        assert_exit(&r, 1);
        assert_logged(&r, &["407"]);
        let written = std::fs::read_to_string(&log).unwrap();
        let pair = format!("{user}:{password}");
        let basic = base64(pair.as_bytes());
        let mut secrets = vec![user, pair.as_str(), basic.as_str()];
        if !password.is_empty() {
            secrets.push(password);
        }
        for (what, text) in [("stderr", r.log()), ("stdout", &r.stdout), ("termination log", &written)] {
            for secret in &secrets {
                assert!(!text.contains(secret), "{value}: {what} shows {secret:?}: {text}");
            }
        }
        assert!(written.contains("[proxy"), "the quote is there, scrubbed: {written}");
    }
}

/// Issue 35 §6: Go opens a tunnel on a CONNECT answer whose lines end in LF alone (textproto takes
/// both); the gate waited for CRLF CRLF until it timed out.
#[test]
fn a_tunnel_answer_with_bare_line_feeds_opens_it_as_go_does() {
    let ca = TestCa::new();
    let (_p, iss) = proxied_provider(&ca);
    for answer in ["HTTP/1.1 200 OK\n\n", "HTTP/1.1 200 OK\nProxy-Agent: x\n\n", "HTTP/1.1 200 OK\r\n\n"] {
        let proxy = TestProxy::http_established_with(answer);
        let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &proxy.url("http", ""))]));
        assert_exit(&r, 0);
        assert_eq!(proxy.seen().len(), 1, "{answer:?}");
    }
}

/// Issue 35 §6: a refusal's status is cut at 200 bytes on a character boundary; a cut inside a
/// character used to keep all of it (15,348 characters in the message).
#[test]
fn a_long_refusal_is_cut_on_a_character_boundary() {
    let ca = TestCa::new();
    let (_p, iss) = proxied_provider(&ca);
    // "403 x" then 'é' (2 bytes) from byte 5: byte 200 falls inside one.
    let status: &'static str = Box::leak(format!("403 x{}", "é".repeat(8000)).into_boxed_str());
    let proxy = TestProxy::http_refusing(status);
    let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &proxy.url("http", ""))]));
    assert_exit(&r, 1);
    let line = r.log().lines().find(|l| l.contains("answered CONNECT")).unwrap_or_default().to_string();
    assert!(line.contains("bytes left out]") && line.len() < 1200, "{} bytes: {line:.300}", line.len());
}

#[test]
fn a_failing_proxy_is_named_as_the_failure() {
    let ca = TestCa::new();
    let (provider, iss) = proxied_provider(&ca);
    let dead = dead_port();
    let r = run(gate_with(
        &ca,
        &iss,
        &[("HTTPS_PROXY", &format!("user:pw@127.0.0.1:{dead}")), ("WAIT_FOR_IDP_OUTPUT", "json")],
    ));
    assert_exit(&r, 1);
    assert_logged(&r, &[&format!("proxy http://***@127.0.0.1:{dead} (HTTPS_PROXY) refused the connection")]);
    assert_eq!(r.json()["issuers"][0]["last_failure"]["class"], "proxy");

    let refusing = TestProxy::http_refusing("403 Forbidden");
    let r = run(gate_with(&ca, &iss, &[("HTTPS_PROXY", &refusing.url("http", ""))]));
    assert_exit(&r, 1);
    assert_logged(
        &r,
        &[&format!("(HTTPS_PROXY) answered CONNECT {PROXIED_NAME}:{} with 403 Forbidden", provider.port())],
    );
}

#[test]
fn dry_run_shows_each_route_and_why() {
    let ca = TestCa::new();
    let mut cmd = gate();
    cmd.args(["--dry-run", "--issuer", "https://idp.test", "--issuer", "https://localhost:8443"]);
    cmd.args(["--issuer", "https://kc.svc", "--issuer", "http://plain.test", "--ca-file", &ca.ca_arg()]);
    cmd.envs([("HTTPS_PROXY", "http://u:s3cret@proxy.corp:3128"), ("NO_PROXY", ".svc")]);
    let r = run(cmd);
    assert_exit(&r, 0);
    for line in [
        "connect       proxy http://***@proxy.corp:3128 (HTTPS_PROXY)",
        "connect       direct (loopback: Go never proxies it)",
        "connect       direct (NO_PROXY entry .svc)",
        "connect       direct",
    ] {
        assert!(r.stdout.contains(line), "{line:?} in {}", r.stdout);
    }
    assert!(!r.stdout.contains("s3cret"));
}
