//! TLS trust and certificates: trust as the real client trusts (`--ca-file`, a self-signed CA
//! certificate given as one, Go's `SSL_CERT_FILE` and `SSL_CERT_DIR`, oauth2-proxy's own CA
//! settings, what `--dry-run` says of them), a proxy that skips certificate checks, and each
//! certificate problem explained in words (name, dates, a P-521 key, an IP address listed as a DNS
//! name, a required client certificate). The fault matrix (`network_faults.rs`) holds the rows for
//! an untrusted CA, a wrong name, an expired certificate, a self-signed leaf and plain HTTP on the
//! https port, for their classes and the deadline; the TLS fault matrix here holds every TLS fault
//! the support can make, for what each failure says: in words, never a library's debug text.

use crate::support::*;
use std::process::{Command, Stdio};
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
        assert!(r.running() < Duration::from_secs(3), "ended after {:?}\n{}", r.elapsed, r.log());
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

/// A server whose key is not its certificate's fails Go's handshake even with certificate checks
/// skipped (crypto/tls checks the handshake signature with the certificate's key whatever
/// `InsecureSkipVerify` says): not a rejection the proxy skips, so the wait goes on. It was taken
/// for one (rustls calls it a bad certificate signature), and the gate passed at once.
#[test]
fn a_server_whose_key_is_not_its_certificate_s_is_not_a_check_the_proxy_skips() {
    let ca = TestCa::new();
    let (_p, iss) = Provider::for_issuer(tls_mode_with_another_key(ca.leaf(&["localhost"])), "", |iss| {
        serve_at(WELL_KNOWN, discovery_doc(iss))
    });
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--timeout", "5m", "--interval", "10ms", "--max-attempts", "3", "--output", "json"]);
    cmd.env("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY", "true");
    let r = run(cmd);
    assert!(!r.log().contains("a check oauth2-proxy skips"), "{}", r.log());
    assert_eq!(r.json()["issuers"][0]["attempts"], 3, "{}", r.log());
    assert_logged(&r, &["localhost signed the TLS handshake with a key that is not its certificate's"]);
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

#[test]
fn a_self_signed_ca_certificate_given_as_ca_file_is_accepted_with_name_and_dates_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (chain, pem) = self_signed_ca_cert(dir.path(), &["localhost"], (2020, 1, 1), (2090, 1, 1));
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let p = slot.listen(tls_mode(chain), serve_at(WELL_KNOWN, discovery_doc(&iss)));
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--once", "--ca-file"]).arg(&pem);
    let r = run(cmd);
    assert_exit(&r, 0);
    drop(p);

    // Still checked: its name …
    let (chain, pem) = self_signed_ca_cert(dir.path(), &["other.test"], (2020, 1, 1), (2090, 1, 1));
    let p = Provider::start(tls_mode(chain), serve_at(WELL_KNOWN, String::new()));
    let mut cmd = gate();
    cmd.args(["--issuer", &p.issuer(""), "--once", "--ca-file"]).arg(&pem);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["certificate is for other.test, not localhost"]);

    // … and its validity period (webpki checks the dates before the CA flag).
    let (chain, pem) = self_signed_ca_cert(dir.path(), &["localhost"], (2020, 1, 1), (2021, 1, 1));
    let p = Provider::start(tls_mode(chain), serve_at(WELL_KNOWN, String::new()));
    let mut cmd = gate();
    cmd.args(["--issuer", &p.issuer(""), "--once", "--ca-file"]).arg(&pem);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["has expired"]);
}

/// Runs `script` with sh in `dir`, asserting it succeeds (openssl making keys and certificates).
fn sh(dir: &std::path::Path, script: &str) {
    let ok = Command::new("sh").arg("-c").arg(script).current_dir(dir).stderr(Stdio::null()).status();
    assert!(ok.unwrap().success(), "{script}");
}

/// A CA `{name}ca.pem` with an openssl `-newkey` argument, and a leaf `{name}.pem` for localhost
/// signed by it, with its own key type.
fn openssl_pki(dir: &std::path::Path, name: &str, ca_key: &str, leaf_key: &str) {
    sh(dir, "printf 'subjectAltName=DNS:localhost\\nbasicConstraints=CA:FALSE\\n' > ext");
    sh(
        dir,
        &format!(
            "openssl req -x509 -newkey {ca_key} -nodes -subj /CN=ca -keyout {name}ca.key -out {name}ca.pem -days 2 \
             -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
             && openssl req -newkey {leaf_key} -nodes -subj /CN=localhost -keyout {name}.key -out {name}.csr \
             && openssl x509 -req -in {name}.csr -CA {name}ca.pem -CAkey {name}ca.key -CAcreateserial \
             -out {name}.pem -days 2 -extfile ext"
        ),
    );
}

/// openssl's server for `{name}.pem` with these extra arguments, and the gate's one attempt at
/// it trusting `{name}ca.pem`.
fn gate_at_openssl(dir: &std::path::Path, name: &str, args: &[&str]) -> Run {
    require_openssl();
    // openssl binds port 0 itself and says which port it got; -WWW serves files from `dir`.
    let mut server = Command::new("openssl")
        .args(["s_server", "-WWW", "-accept", "127.0.0.1:0"])
        .args(["-cert", &format!("{name}.pem"), "-key", &format!("{name}.key")])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let port = accepted_port(server.stdout.take().unwrap());
    let issuer = issuer_at("localhost", port, "");
    std::fs::create_dir_all(dir.join(".well-known")).unwrap();
    std::fs::write(dir.join(&WELL_KNOWN[1..]), discovery_doc(&issuer)).unwrap();
    let mut cmd = gate();
    cmd.args(["--issuer", &issuer, "--once", "--ca-file"]).arg(dir.join(format!("{name}ca.pem")));
    let r = run(cmd);
    let _ = server.kill();
    let _ = server.wait();
    r
}

#[test]
fn p521_certificates_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    // A P-521 CA signing a P-256 leaf; a P-256 CA signing a P-521 leaf.
    openssl_pki(dir.path(), "a", "ec -pkeyopt ec_paramgen_curve:P-521", "ec -pkeyopt ec_paramgen_curve:P-256");
    openssl_pki(dir.path(), "b", "ec -pkeyopt ec_paramgen_curve:P-256", "ec -pkeyopt ec_paramgen_curve:P-521");
    for (name, args, expected) in [
        ("a", &[][..], "is signed with an ECDSA P-521 key, which this build cannot verify"),
        // The gate offers P-521 signatures as Go does, so the server shows its certificate.
        ("b", &[][..], "server certificate of localhost has an ECDSA P-521 key, which this build cannot verify"),
        // TLS 1.2 ties an ECDSA certificate to the key exchange groups offered: without P-521
        // among them, the server refuses at once.
        ("b", &["-tls1_2"][..], "certificates with a P-521 key (over TLS 1.2)"),
    ] {
        let r = gate_at_openssl(dir.path(), name, args);
        assert_exit(&r, 1);
        assert!(r.log().contains(expected), "{name} {args:?}: {}", r.log());
        assert!(!r.log().contains("signature_algorithm_id"), "no debug dump: {}", r.log());
    }
}

#[test]
fn rsa_1024_keys_are_accepted_as_go_accepts_them_where_ring_can_check_them() {
    let dir = tempfile::tempdir().unwrap();
    // A 1024-bit CA (Go accepts RSA keys from 1024 bits), and a 1024-bit leaf.
    openssl_pki(dir.path(), "ca1024", "rsa:1024", "ec -pkeyopt ec_paramgen_curve:P-256");
    openssl_pki(dir.path(), "leaf1024", "rsa:2048", "rsa:1024");
    let weak = ["-cipher", "DEFAULT@SECLEVEL=0"];
    assert_exit(&gate_at_openssl(dir.path(), "ca1024", &weak), 0);
    // TLS 1.2 signed with PKCS#1: checked. TLS 1.3 signs with RSA-PSS, which ring checks only from
    // 2048 bits: said so.
    let r = gate_at_openssl(dir.path(), "leaf1024", &[&weak[..], &["-tls1_2", "-sigalgs", "RSA+SHA256"]].concat());
    assert_exit(&r, 0);
    let r = gate_at_openssl(dir.path(), "leaf1024", &[&weak[..], &["-tls1_3"]].concat());
    assert_exit(&r, 1);
    assert_logged(
        &r,
        &["server certificate of localhost has an RSA key of 1024 bits, and the server signs with RSA-PSS"],
    );
}

#[test]
fn a_cbc_only_server_is_named_with_what_the_gate_offers() {
    let dir = tempfile::tempdir().unwrap();
    openssl_pki(dir.path(), "cbc", "ec -pkeyopt ec_paramgen_curve:P-256", "ec -pkeyopt ec_paramgen_curve:P-256");
    let r = gate_at_openssl(dir.path(), "cbc", &["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA"]);
    assert_exit(&r, 1);
    assert_logged(
        &r,
        &[
            "localhost refused the TLS handshake at the gate's first message (handshake_failure)",
            "TLS 1.2 and 1.3 with AES-GCM or ChaCha20-Poly1305, key exchange X25519, P-256 or P-384",
            "only CBC suites (TLS 1.2)",
        ],
    );
}

#[test]
fn chacha20_only_servers_are_reached_over_tls_1_2_and_1_3() {
    use rustls::crypto::ring::cipher_suite as suite;
    let ca = TestCa::new();
    for (suites, tls12_only) in [
        (vec![suite::TLS13_CHACHA20_POLY1305_SHA256, suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256], false),
        (vec![suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256], true),
    ] {
        let mode = tls_mode_with_suites(ca.leaf(&["localhost"]), &suites, tls12_only);
        // Over 16 KiB, so that several records are decrypted.
        let doc =
            |iss: &str| discovery_doc(iss).replacen('{', &format!("{{\"x_padding\":\"{}\",", "a".repeat(40_000)), 1);
        let (_p, iss) = Provider::for_issuer(mode, "", |iss| serve_at(WELL_KNOWN, doc(iss)));
        let mut cmd = gate_for(&ca, &iss);
        cmd.arg("--once");
        let r = run(cmd);
        assert_exit(&r, 0);
    }
}

#[test]
fn a_ca_file_holding_another_ca_of_the_same_name_is_told_from_an_unknown_ca() {
    // Every TestCa has the same name and its own key: a CA re-created under the same name.
    let (old, new) = (TestCa::new(), TestCa::new());
    let (_p, iss) = ready_provider(&new, "localhost", "");
    let mut cmd = gate_for(&old, &iss);
    cmd.arg("--once");
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(
        &r,
        &[
            "certificate of localhost names a trusted CA as its issuer, but that CA's key does not verify it",
            "not the one that signed this certificate; give --ca-file the CA that issued it",
        ],
    );
}

#[test]
fn with_ssl_cert_file_and_ssl_cert_dir_set_mozillas_roots_are_no_longer_trusted() {
    let ca = TestCa::new();
    let dir = ca.dir.path().display().to_string();
    let cases: [(&[(&str, &str)], bool); 3] = [
        (&[("SSL_CERT_FILE", &ca.ca_arg())], true),
        (&[("SSL_CERT_DIR", &dir)], true),
        (&[("SSL_CERT_FILE", &ca.ca_arg()), ("SSL_CERT_DIR", &dir)], false),
    ];
    for (env, mozilla) in cases {
        let mut cmd = gate();
        cmd.args(["--issuer", "https://sso.example.com", "--dry-run"]).envs(env.iter().copied());
        let r = run(cmd);
        assert_exit(&r, 0);
        assert_eq!(r.stdout.contains("trust           Mozilla's roots"), mozilla, "{env:?}: {}", r.stdout);
    }
    // And the server the two name is still reached.
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    assert_exit(&once_with(&iss, &[("SSL_CERT_FILE", &ca.ca_arg()), ("SSL_CERT_DIR", &dir)]), 0);
}

#[test]
fn an_ip_address_listed_only_as_a_dns_name_is_explained() {
    let ca = TestCa::new();
    let p = Provider::start(tls_mode(ca.leaf_dns_name_only("127.0.0.1")), serve_at(WELL_KNOWN, String::new()));
    let mut cmd = gate_for(&ca, &issuer_at("127.0.0.1", p.port(), ""));
    cmd.arg("--once");
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["certificate lists 127.0.0.1 as a DNS name, not as an IP address"]);
    assert!(!r.log().contains("not 127.0.0.1"), "{}", r.log());
}

#[test]
fn a_required_client_certificate_is_class_tls_over_tls_1_2_and_1_3() {
    let ca = TestCa::new();
    for tls12_only in [true, false] {
        let p = Provider::start(
            tls_mode_requiring_client_cert(ca.leaf(&["localhost"]), &ca, tls12_only),
            serve_at(WELL_KNOWN, String::new()),
        );
        for _ in 0..5 {
            let mut cmd = gate_for(&ca, &p.issuer(""));
            cmd.arg("--once");
            let r = run(cmd);
            assert_exit(&r, 1);
            assert!(
                r.log().contains("last failure: tls: localhost requires a client certificate (mutual TLS)"),
                "TLS 1.2 only: {tls12_only}: {}",
                r.log()
            );
        }
    }
}

/// Go reads nothing of an `SSL_CERT_DIR` directory it cannot list, so a CA hash-linked in one is
/// not trusted, though a process that may pass through the directory can open the link. Run as
/// `nobody` when the tests run as root (root lists any directory).
#[test]
fn a_hash_linked_ca_in_a_directory_that_cannot_be_listed_is_not_trusted() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let (right, other) = (TestCa::new(), TestCa::new());
    let (_p, iss) = ready_provider(&right, "localhost", "");
    let hash = openssl_hash(&right.pem_path);
    let top = tempfile::tempdir().unwrap();
    let (store, file) = (top.path().join("certs"), top.path().join("other.pem"));
    std::fs::create_dir(&store).unwrap();
    std::fs::copy(&right.pem_path, store.join("right.pem")).unwrap();
    std::os::unix::fs::symlink("right.pem", store.join(format!("{hash}.0"))).unwrap();
    std::fs::copy(&other.pem_path, &file).unwrap();
    let mode = |path: &std::path::Path, mode| std::fs::set_permissions(path, PermissionsExt::from_mode(mode)).unwrap();
    mode(top.path(), 0o755);
    mode(&file, 0o644);
    mode(&store.join("right.pem"), 0o644);
    mode(&store, 0o311);
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--once"]).env("SSL_CERT_FILE", &file).env("SSL_CERT_DIR", &store);
    if unsafe { libc::geteuid() } == 0 {
        cmd.uid(65534).gid(65534);
    }
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["cannot be read as a directory"]);
}

/// Go checks a root's validity period as that of any certificate of the chain (webpki's anchors
/// have none): a CA file whose CA has expired (or is not valid yet) trusts nothing, and the
/// proxy's handshake fails, so the gate's must. The same CA re-issued is still trusted beside it.
#[test]
fn a_trusted_ca_outside_its_validity_period_is_no_anchor_as_in_go() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let (expired, future) = (ca.path("expired.pem"), ca.path("future.pem"));
    std::fs::write(&expired, ca.reissued_pem((2000, 1, 1), (2001, 1, 1))).unwrap();
    std::fs::write(&future, ca.reissued_pem((2090, 1, 1), (2091, 1, 1))).unwrap();
    let once = |files: &[&std::path::Path]| {
        let mut cmd = gate();
        cmd.args(["--issuer", &iss, "--once"]);
        for file in files {
            cmd.arg("--ca-file").arg(file);
        }
        run(cmd)
    };
    let r = once(&[&expired]);
    assert_exit(&r, 1);
    // Said as the CA's dates (issue 35 §6: it blamed the server's certificate, with the CA's date).
    let ca_expired = "the trusted CA that issued the certificate for localhost has expired (not valid after Mon, 01 \
                      Jan 2001 00:00:00 GMT); the certificate itself may be fine";
    assert_logged(&r, &[ca_expired, "give --ca-file the CA renewed"]);
    let r = once(&[&future]);
    assert_exit(&r, 1);
    assert_logged(&r, &["the trusted CA that issued the certificate for localhost is not valid yet (not before"]);
    assert_exit(&once(&[&expired, &ca.pem_path]), 0);
}

/// OpenSSL's hash of a certificate's subject: the name its tools (`c_rehash`, Debian's
/// `update-ca-certificates`) give the certificate's links in a hashed directory.
fn openssl_hash(pem: &std::path::Path) -> String {
    require_openssl();
    let out = Command::new("openssl").args(["x509", "-hash", "-noout", "-in"]).arg(pem).output().unwrap();
    assert!(out.status.success(), "openssl x509 -hash");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Go's store (`SSL_CERT_FILE` and `SSL_CERT_DIR` both set: no Mozilla roots) is read as far as a
/// chain needs: first what its issuer's hash links name, and everything, as Go reads it, when
/// that does not verify the chain. The verdict is always the whole store's: a CA only in a file
/// without a link, or behind links to another CA of the same name, still passes, and a failure
/// is said as the whole store says it. A FIFO in the directory shows whether it was read whole
/// (it is skipped with a warning).
#[test]
fn go_store_verdicts_are_the_whole_stores_whatever_its_hash_links_name() {
    let (right, other) = (TestCa::new(), TestCa::new());
    let (_p, iss) = ready_provider(&right, "localhost", "");
    let hash = openssl_hash(&right.pem_path);
    let pems = [
        ("right.pem", std::fs::read_to_string(&right.pem_path).unwrap()),
        ("other.pem", std::fs::read_to_string(&other.pem_path).unwrap()),
        ("old.pem", right.reissued_pem((2000, 1, 1), (2001, 1, 1))),
    ];
    // (files in the directory, hash links to them in order, exit code, read whole)
    let cases: [(&[&str], &[&str], i32, bool); 6] = [
        (&["right.pem"], &["right.pem"], 0, false),
        (&["right.pem"], &[], 0, true),
        (&["other.pem", "right.pem"], &["other.pem"], 0, true),
        (&["other.pem"], &["other.pem"], 1, true),
        (&["old.pem", "right.pem"], &["old.pem", "right.pem"], 0, false),
        (&["old.pem"], &["old.pem"], 1, true),
    ];
    for (files, links, code, whole) in cases {
        let dir = tempfile::tempdir().unwrap();
        for (name, pem) in pems.iter().filter(|(name, _)| files.contains(name)) {
            std::fs::write(dir.path().join(name), pem).unwrap();
        }
        for (n, target) in links.iter().enumerate() {
            std::os::unix::fs::symlink(target, dir.path().join(format!("{hash}.{n}"))).unwrap();
        }
        let fifo = dir.path().join("fifo.pem");
        assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
        let d = dir.path().display().to_string();
        let r = once_with(&iss, &[("SSL_CERT_FILE", &other.ca_arg()), ("SSL_CERT_DIR", &d)]);
        assert_exit(&r, code);
        assert_eq!(r.log().contains("fifo.pem' cannot be read"), whole, "{files:?} {links:?}:\n{}", r.log());
        if files == ["other.pem"] {
            assert_logged(&r, &["names a trusted CA as its issuer, but that CA's key does not verify it"]);
        } else if code == 1 {
            assert_logged(
                &r,
                &["the trusted CA that issued the certificate for localhost has expired", "after Mon, 01 Jan 2001"],
            );
        }
    }
}

fn require_openssl() {
    let ok = Command::new("openssl").arg("version").output().map(|o| o.status.success()).unwrap_or(false);
    assert!(ok, "openssl is missing: run the test command (.ci/test), which installs it");
}

/// The port from openssl's `ACCEPT 127.0.0.1:PORT` line.
fn accepted_port(stdout: std::process::ChildStdout) -> u16 {
    use std::io::BufRead;
    let line = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("ACCEPT "))
        .expect("openssl s_server says where it listens");
    line.rsplit(':').next().unwrap().parse().unwrap()
}

/// A CA file that is a FIFO blocked the gate for ever, before its deadline started; one that
/// never ends was read until memory ran out. `--ca-file` is exit 2 naming the file and the
/// bound; Go's `SSL_CERT_FILE` and an entry of `SSL_CERT_DIR` are skipped with a warning, as Go
/// skips what it cannot read, and the rest of the directory is still trusted.
#[test]
fn a_ca_file_or_trust_entry_that_is_not_a_regular_file_is_refused_or_skipped() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let fifo = ca.path("fifo.pem");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let fifo_at = fifo.display().to_string();
    for (path, why) in
        [(fifo_at.as_str(), "a FIFO, not a regular file"), ("/dev/zero", "a device or socket, not a regular file")]
    {
        let mut cmd = gate();
        cmd.args(["--issuer", &iss, "--dry-run", "--ca-file", path]);
        let r = run_with_limit(cmd, Duration::from_secs(20));
        assert_exit(&r, 2);
        assert_logged(&r, &["--ca-file", path, why]);
    }
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--once"]).env("SSL_CERT_DIR", ca.dir.path()).env("SSL_CERT_FILE", &fifo);
    let r = run_with_limit(cmd, Duration::from_secs(20));
    assert_exit(&r, 0);
    assert_logged(&r, &[&format!("SSL_CERT_FILE: '{fifo_at}' cannot be read (it is a FIFO, not a regular file)")]);
    assert_logged(&r, &[&format!("SSL_CERT_DIR: '{fifo_at}' cannot be read (it is a FIFO, not a regular file)")]);
}

/// A CA file is read up to 16 MiB (a bundle of every root there is holds about 220 KB), and
/// the error names that bound.
#[test]
fn a_ca_file_beyond_the_bound_is_refused_naming_it() {
    let ca = TestCa::new();
    let big = ca.path("big.pem");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(16 * 1024 * 1024 + 1).unwrap();
    let mut cmd = gate();
    cmd.args(["--issuer", "https://sso.example.com", "--dry-run", "--ca-file"]).arg(&big);
    let r = run(cmd);
    assert_exit(&r, 2);
    assert_logged(&r, &["over 16 MiB, the most for a file of CA certificates"]);
}

/// Where a row of the TLS fault matrix gets its server.
enum Server {
    /// A support listener: rustls with a certificate, or bytes written at once (an alert, a
    /// handshake cut short, something that is not TLS).
    Listener(Mode),
    /// openssl's server for `openssl_pki`'s `{name}.pem`, with these arguments.
    OpenSsl(&'static str, &'static [&'static str]),
}

/// One TLS fault, what to trust, and a phrase saying what to do that the failure must contain.
struct TlsFault {
    name: &'static str,
    server: Server,
    ca_file: Option<std::path::PathBuf>,
    says: &'static str,
}

/// A TLS record holding one fatal alert (RFC 8446, 6).
fn alert(description: u8) -> Mode {
    Mode::Greeting(vec![0x15, 0x03, 0x03, 0x00, 0x02, 0x02, description])
}

/// Words that are CamelCase by their own spelling, not a library's type names.
const PROPER_NAMES: &[&str] = &["ChaCha20"];

/// What in `log` looks like a library's debug text: a wrapped variant, a struct, a CamelCase
/// enum name.
fn debug_text(log: &str) -> Vec<String> {
    let shapes = ["Other(", "OtherError", "InvalidCertificate(", "Error {", "{ "];
    let mut found: Vec<String> = shapes.iter().filter(|s| log.contains(*s)).map(|s| s.to_string()).collect();
    let camel = |w: &&str| {
        w.starts_with(|c: char| c.is_ascii_uppercase())
            && w.as_bytes().windows(2).any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase())
    };
    let words = log.split(|c: char| !c.is_ascii_alphanumeric());
    found.extend(words.filter(camel).filter(|w| !PROPER_NAMES.contains(w)).map(str::to_string));
    found
}

#[test]
fn debug_text_is_recognised() {
    let log = "invalid peer certificate: Other(OtherError(CaUsedAsEndEntity)); ChaCha20; IPv6; BadSignature";
    assert_eq!(debug_text(log), ["Other(", "OtherError", "OtherError", "CaUsedAsEndEntity", "BadSignature"]);
    assert!(debug_text("PeerMisbehaved { x: 1 }").contains(&"{ ".to_string()));
    assert!(debug_text("certificate for localhost has expired; renew it").is_empty());
}

/// The rows the support can make with rustls or raw bytes.
fn listener_faults(ca: &TestCa) -> Vec<TlsFault> {
    let dir = ca.dir.path();
    let trusted = Some(ca.pem_path.clone());
    let row = |name, mode, ca_file: &Option<std::path::PathBuf>, says| TlsFault {
        name,
        server: Server::Listener(mode),
        ca_file: ca_file.clone(),
        says,
    };
    let client_only = |p: &mut rcgen::CertificateParams| {
        p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    };
    let (ca_leaf, _) = self_signed_ca_cert_with(dir, &["localhost"], |_| {});
    let (ca_leaf_other_name, _) = self_signed_ca_cert_with(dir, &["other.test"], |_| {});
    let (ca_leaf_client_only, ca_leaf_client_only_pem) = self_signed_ca_cert_with(dir, &["localhost"], client_only);
    let rotated = TestCa::new();
    let critical = |p: &mut rcgen::CertificateParams| {
        let mut ext = rcgen::CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 55555, 1], vec![0x05, 0x00]);
        ext.set_criticality(true);
        p.custom_extensions = vec![ext];
    };
    let truncated = vec![0x16, 0x03, 0x03, 0x00, 0x50, 0x02, 0x00, 0x00, 0x4c, 0x03, 0x03];
    let http_400 = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec();
    vec![
        row("expired", tls_mode(ca.leaf_valid(&["localhost"], (2020, 1, 1), (2021, 1, 1))), &trusted, "expired"),
        row("not yet valid", tls_mode(ca.leaf_valid(&["localhost"], (2080, 1, 1), (2090, 1, 1))), &trusted, "clock"),
        row("wrong host", tls_mode(ca.leaf(&["other.test"])), &trusted, "certificate is for other.test, not localhost"),
        row("unknown CA", tls_mode(ca.leaf(&["localhost"])), &None, "trust that CA with --ca-file"),
        row("self-signed leaf", tls_mode(self_signed(&["localhost"])), &None, "--ca-file"),
        row("self-signed CA:TRUE leaf", tls_mode(ca_leaf), &None, "--ca-file"),
        row("self-signed CA:TRUE leaf, another name", tls_mode(ca_leaf_other_name), &None, "not localhost"),
        row(
            "self-signed CA:TRUE leaf for client authentication, trusted",
            tls_mode(ca_leaf_client_only),
            &Some(ca_leaf_client_only_pem),
            "server authentication",
        ),
        row("rotated CA", tls_mode(rotated.leaf(&["localhost"])), &trusted, "not the one that signed"),
        row(
            "leaf for client authentication only",
            tls_mode(ca.leaf_with(&["localhost"], client_only)),
            &trusted,
            "server authentication",
        ),
        row(
            "CA:TRUE leaf under a trusted CA",
            tls_mode(
                ca.leaf_with(&["localhost"], |p| p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained)),
            ),
            &trusted,
            "CA:FALSE",
        ),
        row(
            "unknown critical extension",
            tls_mode_unchecked(ca.leaf_with(&["localhost"], critical)),
            &trusted,
            "critical",
        ),
        row(
            "handshake signed with another key",
            tls_mode_with_another_key(ca.leaf(&["localhost"])),
            &trusted,
            "matching pair",
        ),
        row("h2 only", h2_only(ca.leaf(&["localhost"])), &trusted, "HTTP/2"),
        row(
            "client certificate required, TLS 1.2",
            tls_mode_requiring_client_cert(ca.leaf(&["localhost"]), ca, true),
            &trusted,
            "client certificate",
        ),
        row(
            "client certificate required, TLS 1.3",
            tls_mode_requiring_client_cert(ca.leaf(&["localhost"]), ca, false),
            &trusted,
            "client certificate",
        ),
        row("refused at once: handshake_failure", alert(40), &trusted, "accepts none of what the gate offers"),
        row("refused at once: protocol_version", alert(70), &trusted, "TLS 1.0 or 1.1 must be upgraded"),
        row("refused at once: unrecognized_name", alert(112), &trusted, "a name it serves"),
        row("refused at once: internal_error", alert(80), &trusted, "logs"),
        row("handshake cut short", Mode::Greeting(truncated), &trusted, "closed the connection"),
        row("closed at once", Mode::Greeting(Vec::new()), &trusted, "closed the connection"),
        row(
            "not TLS: an SSH server",
            Mode::Greeting(b"SSH-2.0-OpenSSH_9.6\r\n".to_vec()),
            &trusted,
            "did not answer in TLS",
        ),
        row("plain HTTP on the https port", Mode::Greeting(http_400), &trusted, "http://"),
    ]
}

/// The rows openssl makes: keys and algorithms rustls's server does not have, old TLS versions.
fn openssl_faults(dir: &std::path::Path) -> Vec<TlsFault> {
    let p256 = "ec -pkeyopt ec_paramgen_curve:P-256";
    let p521 = "ec -pkeyopt ec_paramgen_curve:P-521";
    openssl_pki(dir, "p521ca", p521, p256);
    openssl_pki(dir, "p521leaf", p256, p521);
    openssl_pki(dir, "rsa1024", "rsa:2048", "rsa:1024");
    openssl_pki(dir, "ed448", p256, "ed448");
    openssl_pki(dir, "rsa", "rsa:2048", "rsa:2048");
    let row = |name, server, says| TlsFault { name, server, ca_file: None, says };
    vec![
        row("P-521 CA", Server::OpenSsl("p521ca", &[]), "reissue"),
        row("P-521 leaf", Server::OpenSsl("p521leaf", &[]), "reissue"),
        row("P-521 leaf, TLS 1.2", Server::OpenSsl("p521leaf", &["-tls1_2"]), "P-521"),
        row(
            "RSA 1024 leaf, TLS 1.3",
            Server::OpenSsl("rsa1024", &["-tls1_3", "-cipher", "DEFAULT@SECLEVEL=0"]),
            "2048 bits",
        ),
        row("Ed448 leaf", Server::OpenSsl("ed448", &[]), "Ed448"),
        row("CBC suites only", Server::OpenSsl("rsa", &["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA"]), "CBC"),
        row(
            "TLS 1.0 only",
            Server::OpenSsl("rsa", &["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"]),
            "TLS 1.0 or 1.1 must be upgraded",
        ),
        row(
            "TLS 1.1 only",
            Server::OpenSsl("rsa", &["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"]),
            "TLS 1.0 or 1.1 must be upgraded",
        ),
    ]
}

/// Issue 25: no library's debug text ever reaches a user. Every TLS fault the support can make
/// (certificates, keys, versions, suites, alerts, handshakes cut short) is said in words that
/// name something to do, with no `Other(OtherError(CaUsedAsEndEntity))` or `BadSignature`.
#[test]
fn every_tls_failure_is_said_in_words_without_library_debug_text() {
    require_openssl();
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    let mut faults = listener_faults(&ca);
    faults.extend(openssl_faults(dir.path()));
    let queue = std::sync::Mutex::new(faults);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(fault) = queue.lock().unwrap().pop() {
                    let r = match &fault.server {
                        Server::Listener(mode) => {
                            // A ready provider: a certificate accepted by mistake passes.
                            let (_p, issuer) =
                                Provider::for_issuer(mode.clone(), "", |iss| serve_at(WELL_KNOWN, discovery_doc(iss)));
                            let mut cmd = gate();
                            cmd.args(["--issuer", &issuer, "--once"]);
                            if let Some(pem) = &fault.ca_file {
                                cmd.arg("--ca-file").arg(pem);
                            }
                            run(cmd)
                        }
                        Server::OpenSsl(name, args) => gate_at_openssl(dir.path(), name, args),
                    };
                    let said = r.log().lines().find_map(|l| l.split_once("last failure: ")).map_or("", |(_, m)| m);
                    eprintln!("{}: exit {:?}: {said}", fault.name, r.code);
                    let found = debug_text(r.log());
                    if r.code != Some(1) || !found.is_empty() || !r.log().contains(fault.says) {
                        let why = format!("exit {:?}, debug text {found:?}, expected {:?}", r.code, fault.says);
                        failures.lock().unwrap().push(format!("{}: {why}\n{}", fault.name, r.log()));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{} rows fail:\n\n{}", failures.len(), failures.join("\n"));
}

/// Issue 36: a server's own certificate (`CA:FALSE`, signed by a CA the gate is not given) as
/// `--ca-file`, the usual way to pin a provider, was refused as "signed by an unknown CA", while
/// Go's `net/http` with that file as its roots answers 200: Go's `Verify` takes a leaf its roots
/// contain as a chain of its own. It is ready now, and Go's checks on it still hold, in Go's
/// order: its dates, its name, its usage.
#[test]
fn a_pinned_server_certificate_is_trusted_as_itself_as_go_trusts_it() {
    let ca = TestCa::new();
    let client_only = |p: &mut rcgen::CertificateParams| {
        p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    };
    let cases: [(Chain, i32, &str); 4] = [
        (ca.leaf(&["localhost"]), 0, "ready: "),
        (ca.leaf_valid(&["localhost"], (2020, 1, 1), (2021, 1, 1)), 1, "has expired"),
        (ca.leaf(&["other.test"]), 1, "certificate is for other.test, not localhost"),
        (ca.leaf_with(&["localhost"], client_only), 1, "server authentication"),
    ];
    for (n, (chain, code, says)) in cases.into_iter().enumerate() {
        let pinned = ca.path(&format!("pinned-{n}.pem"));
        let der = chain.0[0].as_ref();
        let lines: Vec<String> = base64(der).as_bytes().chunks(64).map(|l| String::from_utf8_lossy(l).into()).collect();
        let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", lines.join("\n"));
        std::fs::write(&pinned, pem).unwrap();
        let (_p, iss) = Provider::for_issuer(tls_mode(chain), "", |iss| serve_at(WELL_KNOWN, discovery_doc(iss)));
        let mut cmd = gate();
        cmd.args(["--issuer", &iss, "--once", "--ca-file"]).arg(&pinned);
        let r = run(cmd);
        assert_exit(&r, code);
        assert_logged(&r, &[says]);
    }
}

/// Issue 35 §6: Go's store read whole after a first miss was kept for the life of the process, so
/// a CA installed during a start-up wait (or during a sidecar's weeks of watching) was never seen,
/// while a client started then would see it. The store is read again when it changes: installed
/// by a rename into `SSL_CERT_FILE` (as a ConfigMap's update swaps its link), and by a file added
/// to `SSL_CERT_DIR`.
#[test]
fn a_ca_installed_in_the_store_during_the_wait_is_seen() {
    let (right, other) = (TestCa::new(), TestCa::new());
    let (_p, iss) = ready_provider(&right, "localhost", "");
    let store = tempfile::tempdir().unwrap();
    let (file, dir) = (store.path().join("bundle.pem"), store.path().join("certs"));
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(&other.pem_path, &file).unwrap();
    let installs: [(&str, &dyn Fn()); 2] = [
        ("a rename into SSL_CERT_FILE", &|| {
            let next = store.path().join("next.pem");
            let both =
                std::fs::read_to_string(&other.pem_path).unwrap() + &std::fs::read_to_string(&right.pem_path).unwrap();
            std::fs::write(&next, both).unwrap();
            std::fs::rename(&next, &file).unwrap();
        }),
        ("a file added to SSL_CERT_DIR", &|| {
            std::fs::copy(&right.pem_path, dir.join("right.pem")).unwrap();
        }),
    ];
    for (how, install) in installs {
        std::fs::copy(&other.pem_path, &file).unwrap();
        let _ = std::fs::remove_file(dir.join("right.pem"));
        let mut cmd = gate();
        cmd.args(["--issuer", &iss, "--timeout", "5m", "--interval", "100ms"])
            .env("SSL_CERT_FILE", &file)
            .env("SSL_CERT_DIR", &dir);
        let live = LiveGate::spawn(cmd);
        // The other CA has the same name: "names a trusted CA as its issuer, but that CA's key…".
        live.wait_logged("attempt 1: tls: ");
        install();
        let r = live.finish();
        assert_exit(&r, 0);
        assert_logged(&r, &["ready: "]);
        assert!(r.log().contains("that CA's key does not verify it"), "{how}: it waited first:\n{}", r.log());
    }
}

/// Issue 36 §6: `http://` to a port that serves TLS, where the server resets the connection
/// (as openssl's and others' do, rather than answering an alert or 400 as rustls, nginx and Go
/// do), said only that the connection was closed; it names the likely fix now.
#[test]
fn plain_http_to_a_tls_port_that_resets_names_https() {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let _ = conn.read(&mut [0u8; 512]);
            // A reset, not a close: SO_LINGER 0.
            let _ = socket2::SockRef::from(&conn).set_linger(Some(Duration::ZERO));
        }
    });
    let r = run_args(gate(), &["--issuer", &format!("http://127.0.0.1:{port}"), "--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["closed the connection before a response", "if this port serves HTTPS, use an https:// URL"]);
}
