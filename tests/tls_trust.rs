//! TLS trust and certificates: trust as the real client trusts (`--ca-file`, a self-signed CA
//! certificate given as one, Go's `SSL_CERT_FILE` and `SSL_CERT_DIR`, oauth2-proxy's own CA
//! settings, what `--dry-run` says of them), a proxy that skips certificate checks, and each
//! certificate problem explained in words (name, dates, a P-521 key, an IP address listed as a DNS
//! name, a required client certificate). The fault matrix (`network_faults.rs`) holds the rows for
//! an untrusted CA, a wrong name, an expired certificate, a self-signed leaf and plain HTTP on the
//! https port.

use crate::support::*;
use std::time::Duration;

/// The gate for `issuer`, one attempt, with these variables and nothing else trusted.
fn once_with(issuer: &str, env: &[(&str, &str)]) -> Run {
    let mut cmd = gate();
    cmd.args(["--issuer", issuer, "--once"]).envs(env.iter().copied());
    run(cmd)
}

#[test]
fn ssl_cert_file_is_trusted() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    assert_exit(&once_with(&iss, &[]), 1);
    let r = once_with(&iss, &[("SSL_CERT_FILE", &ca.ca_arg())]);
    assert_exit(&r, 0);
}

#[test]
fn ssl_cert_dir_is_trusted() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    // Go reads every file of each directory and skips what is not PEM; a missing directory is
    // said, and the others still count.
    std::fs::write(ca.path("notes.txt"), "not a certificate").unwrap();
    let dirs = format!("/nonexistent/certs:{}", ca.dir.path().display());
    let r = once_with(&iss, &[("SSL_CERT_DIR", &dirs)]);
    assert_exit(&r, 0);
    assert_logged(&r, &["WARN  SSL_CERT_DIR: '/nonexistent/certs' cannot be read as a directory"]);
}

#[test]
fn oauth2_proxy_ca_files_alone_replace_the_system_pool() {
    let server_ca = TestCa::new();
    let (_p, iss) = ready_provider(&server_ca, "localhost", "");
    // Another CA (another name: TestCa's all share one), for the proxy's CA files.
    let (_, other_ca) = self_signed_ca_cert(server_ca.dir.path(), &["other.example"], (2020, 1, 1), (2090, 1, 1));
    let env =
        [("SSL_CERT_FILE", server_ca.ca_arg()), ("OAUTH2_PROXY_PROVIDER_CA_FILES", other_ca.display().to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // oauth2-proxy trusts only its CA files here: the server's CA in SSL_CERT_FILE does not count.
    let r = once_with(&iss, &env);
    assert_exit(&r, 1);
    assert_logged(&r, &["trusting only the CA files in OAUTH2_PROXY_PROVIDER_CA_FILES", "tls: ", "unknown CA"]);
    let mut with_system = env.clone();
    with_system.push(("OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE", "true"));
    assert_exit(&once_with(&iss, &with_system), 0);
}

#[test]
fn a_proxy_that_skips_certificate_checks_ends_the_wait_at_the_first_rejection() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    for (extra, code) in [(None, 0), (Some("--fail-closed"), 1)] {
        let mut cmd = gate();
        cmd.args(["--issuer", &iss, "--timeout", "20s", "--output", "json"]).args(extra);
        cmd.env("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY", "true");
        let r = run(cmd);
        assert_exit(&r, code);
        assert!(r.elapsed < Duration::from_secs(3), "ended after {:?}\n{}", r.elapsed, r.log());
        assert_logged(&r, &["oauth2-proxy skips this check", "--ca-file PATH or WAIT_FOR_IDP_CA_FILE"]);
        assert_logged(&r, &["certificate rejected, a check oauth2-proxy skips; last failure: tls"]);
        assert_logged(&r, &[if code == 0 { "failing open" } else { "failing closed" }]);
        let json = r.json();
        assert_eq!(json["issuers"][0]["last_failure"]["class"], "tls");
        assert_eq!(json["issuers"][0]["last_failure"]["link"], "metadata");
        assert_eq!(json["issuers"][0]["attempts"], 1);
        assert_eq!(json["issuers"][0]["verdict"], "certificate-rejected");
    }
}

#[test]
fn a_proxy_that_skips_certificate_checks_still_waits_for_a_503() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let mut cmd = gate_for(&ca, &p.issuer(""));
    cmd.args(["--timeout", "2s"]).env("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY", "true");
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(r.elapsed >= Duration::from_millis(1_500), "ended early, after {:?}\n{}", r.elapsed, r.log());
    assert_logged(&r, &["http-status: HTTP 503", "timeout of 2.00s used up"]);
    assert!(!r.log().contains("oauth2-proxy skips this check"), "{}", r.log());
}

#[test]
fn dry_run_names_the_trust_sources_and_the_skip_verify_conflict() {
    let ca = TestCa::new();
    let mut cmd = gate();
    cmd.args(["--issuer", "https://sso.example.com", "--ca-file", &ca.ca_arg(), "--dry-run"]);
    cmd.env("SSL_CERT_FILE", ca.ca_arg()).env("SSL_CERT_DIR", ca.dir.path());
    cmd.env("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY", "true");
    let r = run(cmd);
    assert_exit(&r, 0);
    let (pem, dir) = (ca.ca_arg(), ca.dir.path().display().to_string());
    for line in [
        "trust           Mozilla's roots".to_string(),
        format!("trust           --ca-file {pem}: 1 certificate(s)"),
        format!("trust           SSL_CERT_FILE {pem}: 1 certificate(s)"),
        format!("trust           SSL_CERT_DIR {dir}: 1 certificate(s)"),
        "warning         OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY is true: oauth2-proxy skips certificate checks, the \
         gate never does; give it the provider's CA with --ca-file"
            .to_string(),
    ] {
        assert!(r.stdout.contains(&line), "{line:?} not in\n{}", r.stdout);
    }
    let mut cmd = gate();
    cmd.args(["--issuer", "https://sso.example.com", "--dry-run"]);
    cmd.env("OAUTH2_PROXY_PROVIDER_CA_FILES", ca.ca_arg());
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(!r.stdout.contains("Mozilla's roots"), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("trust           OAUTH2_PROXY_PROVIDER_CA_FILES {pem}: 1")), "{}", r.stdout);
    assert!(r.stdout.contains("note            trusting only the CA files"), "{}", r.stdout);
}
