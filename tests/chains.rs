//! Discovery chains (issue 11): `--metadata auto` in the MCP order, protected resources (RFC 9728)
//! down to every authorization server they name, and `--jwks-url`, against local providers.

use crate::support::*;
use serde_json::{Value, json};

const OAUTH: &str = "/.well-known/oauth-authorization-server";
const PRM: &str = "/.well-known/oauth-protected-resource";

/// An RFC 8414 document for `issuer` (no jwks_uri: it is optional there).
fn oauth_doc(issuer: &str) -> String {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{}/authorize", issuer.trim_end_matches('/')),
        "token_endpoint": format!("{}/token", issuer.trim_end_matches('/')),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    })
    .to_string()
}

fn prm_doc(resource: &str, servers: &[&str]) -> String {
    json!({ "resource": resource, "authorization_servers": servers }).to_string()
}

/// Serves each path's reply; 404 elsewhere.
fn routes(table: Vec<(String, u16, String)>) -> Handler {
    reply(move |req, _| match table.iter().find(|(path, _, _)| *path == req.path) {
        Some((_, status, body)) => Reply::json(*status, body.clone()),
        None => Reply::json(404, r#"{"error":"not_found"}"#),
    })
}

#[test]
fn auto_tries_the_mcp_order_and_says_which_url_passed() {
    let ca = TestCa::new();
    // An issuer with a path: RFC 8414 inserted (404), OIDC inserted (404), OIDC appended (200).
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/realms/x", |iss| {
        routes(vec![(format!("/realms/x{WELL_KNOWN}"), 200, discovery_doc(iss))])
    });
    let r = run_args(gate_for(&ca, &iss), &["--metadata", "auto", "--once", "--output", "json"]);
    assert_exit(&r, 0);
    assert_eq!(
        p.paths(),
        [format!("{OAUTH}/realms/x"), format!("{WELL_KNOWN}/realms/x"), format!("/realms/x{WELL_KNOWN}")]
    );
    let json = r.json();
    assert_eq!(json["issuers"][0]["metadata_url"], format!("{iss}{WELL_KNOWN}"));
    assert_eq!(json["issuers"][0]["discovery_url"], p.issuer(&format!("{OAUTH}/realms/x")));
    assert_logged(&r, &[&format!("passed: issuer {iss:?} served by {iss}{WELL_KNOWN}")]);

    // Without a path, OIDC only: found at the second URL.
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(WELL_KNOWN.to_string(), 200, discovery_doc(iss))])
    });
    let r = run_args(gate_for(&ca, &iss), &["--metadata", "auto", "--once"]);
    assert_exit(&r, 0);
    assert_eq!(p.paths(), [OAUTH, WELL_KNOWN]);

    // Without a path: RFC 8414 first, and a document there is judged by RFC 8414 (no jwks_uri needed).
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    });
    let r = run_args(gate_for(&ca, &iss), &["--metadata", "auto", "--once"]);
    assert_exit(&r, 0);
    assert_eq!(p.paths(), [OAUTH]);
}

#[test]
fn auto_stops_at_a_server_error_and_at_a_bad_document() {
    let ca = TestCa::new();
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 503, "{}".into()), (WELL_KNOWN.to_string(), 200, discovery_doc(iss))])
    });
    let r = run_args(gate_for(&ca, &iss), &["--metadata", "auto", "--once"]);
    assert_exit(&r, 1);
    assert_eq!(p.paths(), [OAUTH], "a 503 ends the attempt: the next URL is on the same server");
    assert_logged(&r, &["http-status: HTTP 503"]);

    // A 200 with another issuer ends the search too: the document may not be used (RFC 8414 §3.3).
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![
            (OAUTH.to_string(), 200, oauth_doc("https://elsewhere.test")),
            (WELL_KNOWN.to_string(), 200, discovery_doc(iss)),
        ])
    });
    let r = run_args(gate_for(&ca, &iss), &["--metadata", "auto", "--once"]);
    assert_exit(&r, 1);
    assert_eq!(p.paths(), [OAUTH]);
    assert_logged(&r, &["issuer-mismatch"]);

    // Every URL a client error: the failure lists them all.
    let p = Provider::start(tls_mode(ca.leaf(&["localhost"])), routes(vec![]));
    let r = run_args(gate_for(&ca, &p.issuer("/t")), &["--metadata", "auto", "--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["http-status: HTTP 404", "; before it: ", &format!("{OAUTH}/t (HTTP 404)")]);
}

/// A protected resource at a path, its metadata at the inserted location, one authorization
/// server elsewhere: the gate passes only when the whole chain does.
#[test]
fn a_resource_is_ready_when_its_metadata_and_every_server_are() {
    let ca = TestCa::new();
    let (_as1, as1) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    });
    let (_as2, as2) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/realms/mcp", |iss| {
        routes(vec![(format!("/realms/mcp{WELL_KNOWN}"), 200, discovery_doc(iss))])
    });
    let servers = [as1.as_str(), as2.as_str()];
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/tenant/mcp", |res| {
        routes(vec![(format!("{PRM}/tenant/mcp"), 200, prm_doc(res, &servers))])
    });
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once", "--output", "json"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(rs.paths(), [format!("{PRM}/tenant/mcp")]);
    let json = r.json();
    let entry = &json["issuers"][0];
    assert_eq!(entry["resource"], resource.as_str());
    assert_eq!(entry["issuer"], Value::Null);
    assert_eq!(entry["metadata_url"], rs.issuer(&format!("{PRM}/tenant/mcp")));
    assert_eq!(entry["authorization_servers"][0]["issuer"], as1.as_str());
    assert_eq!(entry["authorization_servers"][1]["metadata_url"], format!("{as2}{WELL_KNOWN}"));
    assert_logged(&r, &["passed: resource metadata at", &format!("authorization server issuer {as1:?} served by")]);
}

#[test]
fn resource_metadata_falls_back_to_the_root_then_to_the_challenge() {
    let ca = TestCa::new();
    let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    });
    let servers = [issuer.as_str()];
    // The root form.
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        routes(vec![(PRM.to_string(), 200, prm_doc(res, &servers))])
    });
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(r.stdout.starts_with("resource metadata       https://localhost:"), "--once summary: {}", r.stdout);
    assert_eq!(rs.paths(), [format!("{PRM}/mcp"), PRM.to_string()]);

    // Neither well-known location: the resource's own 401 challenge names the metadata (§5.1).
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let (res, doc) = (res.to_string(), prm_doc(res, &servers));
        let named = res.replace("/mcp", "/meta/prm.json");
        reply(move |req, _| match req.path.as_str() {
            "/mcp" => Reply::with_headers(
                401,
                &[("WWW-Authenticate", &format!(r#"Bearer error="invalid_token", resource_metadata="{named}""#))],
                "",
            ),
            "/meta/prm.json" => Reply::json(200, doc.clone()),
            _ => Reply::json(404, "{}"),
        })
    });
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(rs.paths(), [format!("{PRM}/mcp"), PRM.to_string(), "/mcp".to_string(), "/meta/prm.json".to_string()]);
}

#[test]
fn each_broken_link_of_a_resource_chain_is_named() {
    let ca = TestCa::new();
    let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |_| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc("https://another.test"))])
    });
    let servers = [issuer.as_str()];
    let mismatch =
        format!("issuer-mismatch: authorization server {issuer}: document says issuer \"https://another.test\"");
    type Case<'a> = (&'a str, Box<dyn Fn(&str) -> Vec<(String, u16, String)> + 'a>, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        (
            "resource mismatch",
            Box::new(|res: &str| vec![(format!("{PRM}/mcp"), 200, prm_doc(&format!("{res}/"), &servers))]),
            "resource",
            "resource: protected resource metadata says resource",
        ),
        (
            "no servers",
            Box::new(|res: &str| vec![(format!("{PRM}/mcp"), 200, prm_doc(res, &[]))]),
            "resource",
            "lists no authorization_servers",
        ),
        ("nothing anywhere", Box::new(|_: &str| vec![]), "resource", "no protected resource metadata:"),
        (
            "server's issuer differs",
            Box::new(|res: &str| vec![(format!("{PRM}/mcp"), 200, prm_doc(res, &servers))]),
            "issuer-mismatch",
            &mismatch,
        ),
    ];
    for (name, table, class, phrase) in cases {
        let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| routes(table(res)));
        let mut cmd = gate();
        cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once", "--output", "json"]);
        let r = run(cmd);
        assert_eq!(r.code, Some(1), "{name}: {}", r.log());
        assert!(r.log().contains(phrase), "{name}: expected {phrase:?} in {}", r.log());
        let failure = &r.json()["issuers"][0]["last_failure"];
        assert_eq!(failure["class"], class, "{name}");
        let link = if class == "resource" { "resource-metadata" } else { "metadata" };
        assert_eq!(failure["link"], link, "{name}");
    }
}

/// The API server's keys at an address of the user's choosing, with the token, which never goes
/// to the document's own jwks_uri elsewhere.
#[test]
fn jwks_url_replaces_jwks_uri_and_gets_the_token() {
    let ca = TestCa::new();
    let secret = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2ln";
    let token_file = ca.path("token");
    std::fs::write(&token_file, secret).unwrap();
    let keys = std::fs::read_to_string(fixture("kubernetes-sa.jwks.json")).unwrap();
    let in_cluster =
        Provider::start(tls_mode(ca.leaf(&["localhost"])), routes(vec![("/openid/v1/jwks".into(), 200, keys)]));
    let public_keys = Provider::start(tls_mode(ca.leaf(&["localhost"])), routes(vec![]));
    let (api, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let body =
            std::fs::read_to_string(fixture("kubernetes-sa.json")).unwrap().replace("https://issuer.example.com", iss);
        let mut doc: Value = serde_json::from_str(&body).unwrap();
        doc["jwks_uri"] = Value::String(public_keys.issuer("/openid/v1/jwks"));
        serve_at(WELL_KNOWN, doc.to_string())
    });
    let jwks_url = in_cluster.issuer("/openid/v1/jwks");
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--jwks-url", &jwks_url, "--once", "--output", "json", "--token-file"]).arg(&token_file);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(r.json()["issuers"][0]["jwks_keys"].as_u64().unwrap() >= 1);
    assert_eq!(r.json()["issuers"][0]["jwks_url"], jwks_url.as_str());
    let bearer = format!("Bearer {secret}");
    assert_eq!(in_cluster.seen.lock().unwrap()[0].header("authorization"), Some(bearer.as_str()));
    assert_eq!(api.seen.lock().unwrap()[0].header("authorization"), Some(bearer.as_str()));
    assert_eq!(public_keys.count(), 0, "the document's jwks_uri is not fetched");
    assert!(!r.log().contains(secret) && !r.stdout.contains(secret));
}

#[test]
fn dry_run_shows_every_url_in_the_order_tried() {
    let mut cmd = gate();
    cmd.args(["--issuer", "https://idp.test/realms/x", "--metadata", "auto", "--resource", "https://mcp.test/t/mcp"]);
    cmd.args(["--dry-run"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    for line in [
        "issuer          https://idp.test/realms/x",
        "  metadata      https://idp.test/.well-known/oauth-authorization-server/realms/x",
        "  metadata      https://idp.test/.well-known/openid-configuration/realms/x",
        "  metadata      https://idp.test/realms/x/.well-known/openid-configuration",
        "resource        https://mcp.test/t/mcp",
        "  metadata      https://mcp.test/.well-known/oauth-protected-resource/t/mcp",
        "  metadata      https://mcp.test/.well-known/oauth-protected-resource",
        "rules           auto",
    ] {
        assert!(r.stdout.contains(line), "{line:?} not in\n{}", r.stdout);
    }
}
