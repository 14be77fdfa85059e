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
