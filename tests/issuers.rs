//! An issuer and its metadata document, end to end: where the document is looked for (`--metadata
//! oidc` appends the well-known suffix, `oauth` inserts it after the host; path and IPv6-literal
//! issuers; `--discovery-url` fetches elsewhere but still expects the issuer), that its `issuer`
//! matches the configured one byte for byte (both values shown, a trailing slash counts, two
//! `issuer` members are ambiguous, `--skip-issuer-check` for Entra's `common`), and what
//! `--strict` asks of the rest. The rules over real providers' documents are in `documents.rs`;
//! the `auto` order and resource chains in `discovery_chains.rs`.

use crate::support::*;
use serde_json::Value;

#[test]
fn issuer_mismatch_never_passes_and_shows_both_values() {
    let ca = TestCa::new();
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |_| {
        serve_at(WELL_KNOWN, discovery_doc("https://sso.example.com"))
    });
    let r = run_args(gate_for(&ca, &iss), &["--timeout", "1500ms", "--fail-closed"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["issuer-mismatch", "\"https://sso.example.com\"", &format!("{iss:?}"), "--discovery-url"]);
    assert_logged(&r, &["failures by class: issuer-mismatch="]);
}

#[test]
fn trailing_slash_is_part_of_the_issuer() {
    let ca = TestCa::new();
    let (_p, with_slash) = ready_provider(&ca, "localhost", "/application/o/app/");
    assert_exit(&run(gate_for(&ca, &with_slash)), 0);

    let r = run_args(gate_for(&ca, with_slash.trim_end_matches('/')), &["--max-attempts", "1", "--fail-closed"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["only the trailing slash differs"]);
}

#[test]
fn duplicate_issuer_members_are_ambiguous() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let doc: Value = serde_json::from_str(&discovery_doc(&iss)).unwrap();
    let body = doc.to_string().replacen('{', "{\"Issuer\":\"https://evil.test\",", 1);
    let _p = slot.listen(tls_mode(ca.leaf(&["localhost"])), serve_at(WELL_KNOWN, body));
    let mut cmd = gate_for(&ca, &iss);
    cmd.arg("--once");
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["json: the document has 2 \"issuer\" members (\"Issuer\", \"issuer\")"]);
}

#[test]
fn skip_issuer_check_accepts_entra_common_with_a_warning() {
    let ca = TestCa::new();
    let body = std::fs::read_to_string(fixture("entra-common.json")).unwrap();
    let p = Provider::start(tls_mode(ca.leaf(&["localhost"])), serve_at(&format!("/common/v2.0{WELL_KNOWN}"), body));
    let iss = p.issuer("/common/v2.0");
    let r = run_args(gate_for(&ca, &iss), &["--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["{tenantid}"]);
    let r = run_args(gate_for(&ca, &iss), &["--once", "--skip-issuer-check"]);
    assert_exit(&r, 0);
    assert_logged(&r, &["WARN", "--skip-issuer-check"]);
}

/// Keycloak realm issuers under both metadata kinds: OIDC appends the well-known suffix, RFC 8414
/// inserts it after the host.
#[test]
fn path_issuers_under_both_metadata_kinds() {
    let ca = TestCa::new();
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/realms/demo", |iss| {
        let doc = discovery_doc(iss);
        reply(move |req, _| match req.path.as_str() {
            "/realms/demo/.well-known/openid-configuration" | "/.well-known/oauth-authorization-server/realms/demo" => {
                Reply::json(200, doc.clone())
            }
            _ => Reply::json(404, r#"{"error":"Realm does not exist"}"#),
        })
    });
    for kind in ["oidc", "oauth"] {
        let r = run_args(gate_for(&ca, &iss), &["--metadata", kind, "--max-attempts", "1", "--fail-closed"]);
        assert_exit(&r, 0);
    }
    assert_eq!(
        p.paths(),
        ["/realms/demo/.well-known/openid-configuration", "/.well-known/oauth-authorization-server/realms/demo"]
    );

    let r =
        run_args(gate_for(&ca, &format!("{iss}/")), &["--metadata", "oauth", "--max-attempts", "1", "--fail-closed"]);
    assert_exit(&r, 1);
    assert_eq!(p.paths().last().unwrap(), "/.well-known/oauth-authorization-server/realms/demo");
}

#[test]
fn ipv6_literal_issuers() {
    let ca = TestCa::new();
    let slot = Reserved::v6();
    let iss = issuer_at("[::1]", slot.port, "");
    let _p = slot.listen(tls_mode(ca.leaf(&["::1"])), serve_at(WELL_KNOWN, discovery_doc(&iss)));
    for kind in ["oidc", "oauth"] {
        let mut cmd = gate();
        cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--metadata", kind, "--once"]);
        let r = run(cmd);
        if kind == "oidc" {
            assert_exit(&r, 0);
        } else {
            assert!(r.log().contains("HTTP 404"), "oauth looks elsewhere: {}", r.log());
        }
    }
}

#[test]
fn discovery_url_fetches_elsewhere_but_expects_the_issuer() {
    let ca = TestCa::new();
    let public = "https://sso.example.com/realms/demo";
    let p = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        serve_at(&format!("/realms/demo{WELL_KNOWN}"), discovery_doc(public)),
    );
    let r = run_args(
        gate_for(&ca, public),
        &["--discovery-url", &p.issuer(&format!("/realms/demo{WELL_KNOWN}")), "--once"],
    );
    assert_exit(&r, 0);
}

/// Azure AD B2C serves its metadata under a policy query (`?p=`): a `--discovery-url` keeps its
/// query, sends it as given, and shows it in the log; a parameter with a credential's name
/// (`sig`) is shown as `***` in the log, the JSON and `--dry-run`, never its value.
#[test]
fn a_discovery_url_keeps_its_query_and_hides_a_signature() {
    let ca = TestCa::new();
    let public = "https://tenant.b2clogin.example/tenant.onmicrosoft.example/v2.0/";
    let at = "/tenant.onmicrosoft.example/b2c_1_signin/v2.0/.well-known/openid-configuration";
    let doc = discovery_doc(public);
    let expected = format!("{at}?p=B2C_1_signin");
    let p = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        reply(move |req, _| if req.path == expected { Reply::json(200, doc.clone()) } else { Reply::json(404, "{}") }),
    );
    let discovery = p.issuer(&format!("{at}?p=B2C_1_signin"));
    let r = run_args(gate_for(&ca, public), &["--discovery-url", &discovery, "--once"]);
    assert_exit(&r, 0);
    assert_logged(&r, &["?p=B2C_1_signin"]);
    assert_eq!(p.paths(), [format!("{at}?p=B2C_1_signin")], "the query is sent as given");

    let secret = "c2lnbmF0dXJlLXNlY3JldA";
    let signed = format!("{discovery}&sig={secret}");
    for extra in [&["--once", "--output", "json"][..], &["--dry-run"]] {
        let r = run_args(gate_for(&ca, public), &[&["--discovery-url", signed.as_str()][..], extra].concat());
        assert!(
            !r.log().contains(secret) && !r.stdout.contains(secret),
            "{}
{}",
            r.log(),
            r.stdout
        );
        assert!(
            r.log().contains("?p=B2C_1_signin&sig=***") || r.stdout.contains("?p=B2C_1_signin&sig=***"),
            "{}
{}",
            r.log(),
            r.stdout
        );
    }
    // The issuer itself still has no query, and a fragment is refused everywhere.
    let r = run_args(gate_for(&ca, &format!("{public}?p=B2C_1_signin")), &["--dry-run"]);
    assert_exit(&r, 2);
    assert_logged(&r, &["--issuer", "has a query", "goes in --discovery-url"]);
    let r = run_args(gate_for(&ca, public), &["--discovery-url", &format!("{discovery}#top"), "--dry-run"]);
    assert_exit(&r, 2);
    assert_logged(&r, &["--discovery-url", "has a fragment"]);
}

#[test]
fn kubernetes_api_server_document_passes_without_strict_only() {
    let ca = TestCa::new();
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let body = std::fs::read_to_string(fixture("kubernetes-sa.json")).unwrap();
        serve_at(WELL_KNOWN, body.replace("https://issuer.example.com", iss))
    });
    let r = run_args(gate_for(&ca, &iss), &["--once"]);
    assert_exit(&r, 0);
    assert_logged(&r, &["usual member(s) missing: authorization_endpoint"]);
    // A token verifier (go-oidc) reads no login endpoint: nothing to warn about (issue 36 ask 4).
    let r = run_args(gate_for(&ca, &iss), &["--once", "--client", "go-oidc"]);
    assert_exit(&r, 0);
    assert!(!r.stderr.contains("usual member"), "{}", r.stderr);
    let r = run_args(gate_for(&ca, &iss), &["--once", "--strict"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["missing-field: --strict: REQUIRED member(s) missing: authorization_endpoint"]);
}

/// Issue 26, section 4: with several issuers behind one frozen provider, every attempt ends at
/// the same moment as the deadline; a target whose attempt had just ended, and whose report had
/// not yet reached the main thread, had neither a `last_failure` nor an `in_flight` attempt.
/// Every target's last word is in the JSON, whatever the timing: 50 runs of 3 issuers.
#[test]
fn every_issuer_behind_a_frozen_provider_has_its_last_word_in_the_json() {
    let ca = TestCa::new();
    let hung = Provider::start(tls_mode(ca.leaf(&["localhost"])), reply(|_, _| Reply::Hang));
    let issuers: Vec<String> = ["/a", "/b", "/c"].iter().map(|p| hung.issuer(p)).collect();
    for _batch in 0..5 {
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..10)
                .map(|_| {
                    let mut cmd = gate();
                    for iss in &issuers {
                        cmd.args(["--issuer", iss]);
                    }
                    cmd.args(["--ca-file", &ca.ca_arg(), "--timeout", "1s", "--output", "json"]);
                    s.spawn(move || run(cmd))
                })
                .collect();
            for handle in runs {
                let json = handle.join().unwrap().json();
                for target in json["issuers"].as_array().unwrap() {
                    let said = !target["last_failure"].is_null() || target["in_flight"].is_string();
                    assert!(said, "neither a last failure nor an attempt under way: {target}\n{json}");
                }
            }
        });
    }
}
