//! The document rules over real providers' documents (tests/fixtures, see SOURCES.md there), and
//! a document as Go's client receives and reads it: asked for and sent gzipped, fetched with the
//! Host header the URL gives, its JSON text read as encoding/json reads it.

use crate::network_faults::gzip;
use crate::support::*;
use wait_for_idp::rules::authorization_server::{
    DocumentProblem, MetadataKind, Rules, validate_document, well_known_url,
};

fn doc(name: &str) -> (Vec<u8>, String) {
    let body = std::fs::read(fixture(name)).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    (body, v["issuer"].as_str().unwrap().to_string())
}

fn rules(strict: bool) -> Rules {
    Rules { kind: MetadataKind::Oidc, strict, skip_issuer_check: false, client: Default::default() }
}

#[test]
fn complete_documents_pass_even_strict() {
    for name in [
        "google.json",
        "auth0-docker.json",
        "keycloak-mafiasi.json",
        "authentik-romm.json",
        "dex-reconstructed.json",
        "gitlab.json",
        "mojeid.metadata.json",
        "twitch.metadata.json",
        // EKS: authorization_endpoint is a URN and, id_token being its only response type, no
        // token_endpoint is required.
        "eks.json",
    ] {
        let (body, issuer) = doc(name);
        let d = validate_document(&body, &issuer, rules(true)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(d.issuer, issuer);
        assert!(d.warnings.is_empty(), "{name}: {:?}", d.warnings);
    }
}

#[test]
fn partial_documents_pass_with_a_warning_and_fail_strict() {
    for (name, missing) in [
        ("kubernetes-sa.json", "authorization_endpoint"),
        ("okta-custom-as.json", "id_token_signing_alg_values_supported"),
        ("cognito-nodomain.json", "token_endpoint"),
    ] {
        let (body, issuer) = doc(name);
        let d = validate_document(&body, &issuer, rules(false)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(d.warnings.iter().any(|w| w.contains(missing)), "{name}: {:?}", d.warnings);
        match validate_document(&body, &issuer, rules(true)) {
            Err(DocumentProblem::MissingField(m)) => assert!(m.contains(missing), "{name}: {m}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn implicit_only_providers_need_no_token_endpoint() {
    // Okta's old org server and Facebook advertise only implicit response types.
    for name in ["okta-org-as.json", "facebook.metadata.json"] {
        let (body, issuer) = doc(name);
        let d = validate_document(&body, &issuer, rules(true)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(d.token_endpoint.is_none());
    }
}

#[test]
fn entra_common_can_never_match() {
    let (body, issuer) = doc("entra-common.json");
    assert!(issuer.contains("{tenantid}"));
    let configured = "https://login.microsoftonline.com/common/v2.0";
    let err = validate_document(&body, configured, rules(false)).unwrap_err();
    assert!(err.to_string().contains("{tenantid}"), "{err}");
    let skip = Rules { skip_issuer_check: true, ..rules(false) };
    assert!(validate_document(&body, configured, skip).is_ok());
}

#[test]
fn auth0_without_its_trailing_slash_is_a_mismatch() {
    let (body, issuer) = doc("auth0-docker.json");
    let err = validate_document(&body, issuer.trim_end_matches('/'), rules(false)).unwrap_err();
    assert!(err.to_string().contains("trailing slash"), "{err}");
}

#[test]
fn the_issuer_comes_from_the_configuration_not_a_normalised_url() {
    let (body, issuer) = doc("google.json");
    assert!(validate_document(&body, &format!("{issuer}/"), rules(false)).is_err());
    assert!(validate_document(&body, &issuer.to_uppercase(), rules(false)).is_err());
}

#[test]
fn well_known_urls_for_real_issuers() {
    for name in
        ["google.json", "keycloak-mafiasi.json", "authentik-romm.json", "auth0-docker.json", "okta-custom-as.json"]
    {
        let (_, issuer) = doc(name);
        let oidc = well_known_url(&issuer, MetadataKind::Oidc);
        assert!(oidc.ends_with("/.well-known/openid-configuration") && !oidc.contains("//.well-known"), "{oidc}");
        let oauth = well_known_url(&issuer, MetadataKind::OAuth);
        assert!(oauth.contains("/.well-known/oauth-authorization-server") && !oauth.ends_with('/'), "{oauth}");
    }
    let (_, kc) = doc("keycloak-mafiasi.json");
    assert_eq!(
        well_known_url(&kc, MetadataKind::OAuth),
        "https://identity.mafiasi.de/.well-known/oauth-authorization-server/auth/realms/simple_openid_test"
    );
}

/// Go's transport sends `Accept-Encoding: gzip` and decodes a gzipped body; it writes the Host
/// header as the URL gives it, a default port included, so a provider that builds its issuer from
/// Host (here `https://localhost:443`, reached through `--connect-to`) publishes what the client
/// compares.
#[test]
fn a_gzipped_document_passes_and_host_is_the_urls() {
    let ca = TestCa::new();
    let p = Provider::start(
        tls_mode(ca.leaf(&["localhost"])),
        reply(|req, _| {
            let host = req.header("host").unwrap_or_default();
            let doc = discovery_doc(&format!("https://{host}"));
            match req.header("accept-encoding") {
                Some("gzip") => Reply::Response {
                    status: 200,
                    headers: vec![("Content-Encoding".into(), "gzip".into())],
                    body: gzip(doc.as_bytes()),
                },
                _ => Reply::json(406, "{}"),
            }
        }),
    );
    let to = format!("localhost:443:localhost:{}", p.port());
    let r = run_args(gate_for(&ca, "https://localhost:443"), &["--once", "--connect-to", &to]);
    assert_exit(&r, 0);
    assert_eq!(p.seen.lock().unwrap()[0].header("host"), Some("localhost:443"));
}

/// Outside the members the rules check, JSON text is read as Go's encoding/json reads it: invalid
/// UTF-8 and a lone surrogate become U+FFFD, nesting may go 10,000 levels deep, a number out of
/// float range is never converted. In a member the rules check, such text fails.
#[test]
fn json_text_is_read_as_go_reads_it() {
    let ca = TestCa::new();
    let deep = format!("{}1{}", "[".repeat(9_999), "]".repeat(9_999));
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", move |iss| {
        let doc = discovery_doc(iss);
        let mut lenient = doc.trim_end().trim_end_matches('}').as_bytes().to_vec();
        lenient.extend(b",\"x-name\":\"caf\xe9 \\ud800\",\"x-n\":1e400,\"x-deep\":");
        lenient.extend(deep.as_bytes());
        lenient.push(b'}');
        let bad = doc.replacen("\"jwks_uri\":\"", "\"jwks_uri\":\"\\udc00", 1);
        reply(move |req, _| match req.path.as_str() {
            WELL_KNOWN => Reply::Response { status: 200, headers: vec![], body: lenient.clone() },
            "/bad/.well-known/openid-configuration" => Reply::json(200, bad.clone()),
            _ => Reply::json(404, "{}"),
        })
    });
    let r = run_args(gate_for(&ca, &iss), &["--once"]);
    assert_exit(&r, 0);
    let r = run_args(gate_for(&ca, &format!("{iss}/bad")), &["--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["member \"jwks_uri\" holds a lone UTF-16 surrogate"]);
}
