//! Discovery chains: `--metadata auto` in the MCP clients' order (a client error or a 502 passes
//! on to the next URL, another server error or a bad document ends the attempt), protected
//! resources (RFC 9728: the resource's own 401 challenge, the path form, the root, the legacy
//! path) down to every authorization server they name, what MCP clients demand of those documents
//! (registration, PKCE, https throughout a chain given as https), and `--jwks-url`, against local
//! providers. A redirect along a chain is in `redirects.rs`.

use crate::support::*;
use serde_json::{Value, json};

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
        protected("/tenant/mcp", vec![(format!("{PRM}/tenant/mcp"), 200, prm_doc(res, &servers))])
    });
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once", "--output", "json"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    // The endpoint first, as a client meets it (its 401 names no metadata), then the path form.
    assert_eq!(rs.paths(), ["/tenant/mcp".to_string(), format!("{PRM}/tenant/mcp")]);
    let json = r.json();
    let entry = &json["issuers"][0];
    assert_eq!(entry["resource"], resource.as_str());
    assert_eq!(entry["issuer"], Value::Null);
    assert_eq!(entry["metadata_url"], rs.issuer(&format!("{PRM}/tenant/mcp")));
    assert_eq!(entry["authorization_servers"][0]["issuer"], as1.as_str());
    // Clients use the first server listed: the second is named in a warning, never waited for.
    assert_eq!(entry["authorization_servers"].as_array().map(Vec::len), Some(1), "{entry}");
    assert_logged(&r, &["passed: resource metadata at", &format!("authorization server issuer {as1:?} served by")]);
    assert_logged(
        &r,
        &[&format!("MCP clients use the first, {as1}, so the gate waited for it only (not checked: {as2})")],
    );
}

/// How an MCP client can register, said in the log and the JSON for every
/// server judged by MCP's rules; a warning when it cannot register at all.
#[test]
fn registration_is_reported_for_each_server_mcp_clients_use() {
    let ca = TestCa::new();
    let with = |iss: &str, member: Option<(&str, Value)>| {
        let mut doc: Value = serde_json::from_str(&oauth_doc(iss)).unwrap();
        if let Some((k, v)) = member {
            doc[k] = v;
        }
        doc.to_string()
    };
    let (_cimd, cimd) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let doc = with(iss, Some(("client_id_metadata_document_supported", Value::Bool(true))));
        routes(vec![(OAUTH.to_string(), 200, doc)])
    });
    let (_dcr, dcr) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let doc = with(iss, Some(("registration_endpoint", Value::String(format!("{iss}/register")))));
        routes(vec![(OAUTH.to_string(), 200, doc)])
    });
    let (_none, none) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, with(iss, None))])
    });
    for (iss, expected) in [(&cimd, "cimd"), (&dcr, "dcr"), (&none, "none")] {
        let r = run_args(gate_for(&ca, iss), &["--metadata", "auto", "--once", "--output", "json"]);
        assert_exit(&r, 0);
        let entry = &r.json()["issuers"][0];
        assert_eq!(entry["registration"], expected, "{entry}");
        assert_logged(&r, &[&format!("(registration: {expected})")]);
        let warned = r.log().contains("registration: none: the metadata offers neither");
        assert_eq!(warned, expected == "none", "{}", r.log());
    }
    // Plain --issuer is not judged by MCP's rules: nothing said.
    let r = run_args(gate_for(&ca, &none), &["--metadata", "oauth", "--once", "--output", "json"]);
    assert_eq!(r.json()["issuers"][0]["registration"], Value::Null);
    assert!(!r.log().contains("registration"), "{}", r.log());
    // Along a resource chain, each server has its own.
    for (server, expected) in [(&dcr, "dcr"), (&none, "none")] {
        let servers = [server.as_str()];
        let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
            protected("/mcp", vec![(format!("{PRM}/mcp"), 200, prm_doc(res, &servers))])
        });
        let r = run_args(gate(), &["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once", "--output", "json"]);
        assert_exit(&r, 0);
        let entry = &r.json()["issuers"][0];
        assert_eq!(entry["registration"], Value::Null);
        assert_eq!(entry["authorization_servers"][0]["registration"], expected, "{entry}");
    }
}

/// The clients' order: the resource's own `401` challenge first, whose
/// `resource_metadata` MCP clients MUST use; then the path form; then the root.
#[test]
fn the_challenge_comes_first_then_the_path_form_then_the_root() {
    let ca = TestCa::new();
    let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    });
    let servers = [issuer.as_str()];
    // The root form.
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        protected("/mcp", vec![(PRM.to_string(), 200, prm_doc(res, &servers))])
    });
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert!(r.stdout.starts_with("resource metadata       https://localhost:"), "--once summary: {}", r.stdout);
    assert_eq!(rs.paths(), ["/mcp".to_string(), format!("{PRM}/mcp"), PRM.to_string()]);

    // The resource's own 401 challenge names the metadata (§5.1): used first, nothing else asked.
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
    assert_eq!(rs.paths(), ["/mcp".to_string(), "/meta/prm.json".to_string()]);
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
        // Then the origin is the authorization server (the legacy path), and it has no metadata.
        ("nothing anywhere", Box::new(|_: &str| vec![]), "http-status", "(no protected resource metadata): HTTP 404"),
        (
            "server's issuer differs",
            Box::new(|res: &str| vec![(format!("{PRM}/mcp"), 200, prm_doc(res, &servers))]),
            "issuer-mismatch",
            &mismatch,
        ),
    ];
    for (name, table, class, phrase) in cases {
        let (_rs, resource) =
            Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| protected("/mcp", table(res)));
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
        "  endpoint      POST server/discover (initialize if refused); its challenge's metadata next",
        "  metadata      https://mcp.test/.well-known/oauth-protected-resource/t/mcp",
        "  metadata      https://mcp.test/.well-known/oauth-protected-resource",
        "rules           auto",
    ] {
        assert!(r.stdout.contains(line), "{line:?} not in\n{}", r.stdout);
    }
}

/// A plain-HTTP provider (an in-cluster service) whose handler is made from its base URL
/// `http://localhost:PORT`.
fn plain_provider(handler: impl FnOnce(&str) -> Handler) -> (Provider, String) {
    let slot = Reserved::new();
    let base = format!("http://localhost:{}", slot.port);
    (slot.listen(Mode::Plain, handler(&base)), base)
}

#[track_caller]
fn assert_failed(r: &Run, class: &str, link: &str, phrases: &[&str]) {
    assert_exit(r, 1);
    assert_logged(r, phrases);
    let failure = &r.json()["issuers"][0]["last_failure"];
    assert_eq!((failure["class"].as_str(), failure["link"].as_str()), (Some(class), Some(link)), "{}", r.log());
}

/// A chain the user gave as https stays https. A plain-http link the gate takes from a
/// server fails, naming the link and the URL, before anything is fetched from it: the metadata
/// URL of a resource's challenge, an authorization server the metadata lists, a `jwks_uri`.
#[test]
fn plain_http_inside_an_https_chain_fails_naming_the_link() {
    let ca = TestCa::new();
    // The resource's challenge names http:// metadata (which would list a good server).
    let never = Provider::start(Mode::Plain, routes(vec![]));
    let plain_prm = format!("http://localhost:{}/prm", never.port());
    let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |_| {
        let header = format!(r#"Bearer resource_metadata="{plain_prm}""#);
        reply(move |req, _| match req.path.as_str() {
            "/mcp" => Reply::with_headers(401, &[("WWW-Authenticate", &header)], ""),
            _ => Reply::json(404, "{}"),
        })
    });
    let r = resource_gate(&ca, &resource, &[]);
    let named = format!(
        "the resource metadata URL named by the resource's challenge {plain_prm} uses plain http inside a chain given as https"
    );
    assert_failed(&r, "resource", "resource-metadata", &[&named, "RFC 9728 §7.1"]);
    assert_eq!(never.count(), 0, "nothing is fetched over plain http");

    // The metadata lists an http:// authorization server.
    let plain_as = format!("http://localhost:{}", never.port());
    let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        protected("/mcp", vec![(format!("{PRM}/mcp"), 200, prm_doc(res, &[&plain_as]))])
    });
    let r = resource_gate(&ca, &resource, &[]);
    let listed = format!("authorization server {plain_as} uses plain http inside a chain given as https");
    assert_failed(&r, "resource", "resource-metadata", &[&listed]);
    assert_eq!(never.count(), 0);

    // An https issuer whose document names an http:// jwks_uri, under --check-jwks.
    let plain_keys = format!("http://localhost:{}/keys", never.port());
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let mut doc: Value = serde_json::from_str(&discovery_doc(iss)).unwrap();
        doc["jwks_uri"] = Value::String(plain_keys.clone());
        serve_at(WELL_KNOWN, doc.to_string())
    });
    let r = run_args(gate_for(&ca, &iss), &["--check-jwks", "--once", "--output", "json"]);
    let keys = format!("jwks: jwks_uri {plain_keys} uses plain http inside a chain given as https");
    assert_failed(&r, "jwks", "jwks", &[&keys]);
    assert_eq!(never.count(), 0);
}

/// The exception: a `--resource http://…` (in-cluster use) makes each plain link a warning, as
/// its own URL is, and the chain passes.
#[test]
fn a_chain_given_as_http_passes_with_a_warning_for_each_plain_link() {
    let keys = std::fs::read_to_string(fixture("kubernetes-sa.jwks.json")).unwrap();
    let (_as, issuer) = plain_provider(|iss| {
        let mut doc: Value = serde_json::from_str(&oauth_doc(iss)).unwrap();
        doc["jwks_uri"] = Value::String(format!("{iss}/keys"));
        doc["registration_endpoint"] = Value::String(format!("{iss}/register"));
        routes(vec![(OAUTH.to_string(), 200, doc.to_string()), ("/keys".to_string(), 200, keys)])
    });
    let servers = [issuer.as_str()];
    // Neither well-known location: the challenge names the metadata, over plain http too.
    let (rs, base) = plain_provider(|base| {
        let doc = prm_doc(&format!("{base}/mcp"), &servers);
        let header = format!(r#"Bearer resource_metadata="{base}/meta/prm.json""#);
        reply(move |req, _| match req.path.as_str() {
            "/mcp" => Reply::with_headers(401, &[("WWW-Authenticate", &header)], ""),
            "/meta/prm.json" => Reply::json(200, doc.clone()),
            _ => Reply::json(404, "{}"),
        })
    });
    let resource = format!("{base}/mcp");
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--check-jwks", "--once", "--output", "json"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(rs.paths(), ["/mcp".to_string(), "/meta/prm.json".into()]);
    let accepted =
        "uses plain http: not protected by TLS (accepted because the URL you gave is http, for in-cluster use)";
    let challenge =
        format!("the resource metadata URL named by the resource's challenge {base}/meta/prm.json {accepted}");
    assert_logged(
        &r,
        &[
            "uses plain http: the metadata is not protected by TLS",
            &challenge,
            &format!("authorization server {issuer} {accepted}"),
            &format!("token_endpoint {issuer}/token {accepted}"),
            &format!("jwks_uri {issuer}/keys {accepted}"),
        ],
    );
    let entry = &r.json()["issuers"][0];
    assert_eq!(entry["warnings"].as_array().unwrap().len(), 2, "the resource's own links: {entry}");
    assert_eq!(entry["authorization_servers"][0]["warnings"].as_array().unwrap().len(), 2, "{entry}");
}

/// Both MCP SDKs reject resource metadata with a non-string server (TypeScript: zod's
/// `z.array(SafeUrlSchema)`; Python: `list[AnyHttpUrl]`), so the good server next to it is never
/// used and the gate does not pass on it.
#[test]
fn a_server_entry_that_is_not_a_string_fails_the_resource() {
    let ca = TestCa::new();
    let (good, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    });
    let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let doc = json!({ "resource": res, "authorization_servers": [issuer, 42] });
        protected("/mcp", vec![(format!("{PRM}/mcp"), 200, doc.to_string())])
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_failed(
        &r,
        "resource",
        "resource-metadata",
        &["entry #2 of the protected resource metadata's authorization_servers is a number, not a string"],
    );
    assert_eq!(good.count(), 0, "no server of a rejected document is used");
}

/// What the MCP TypeScript SDK 1.32 rejects (its zod schemas in `discoverAuthorizationServerMetadata`,
/// then `startAuthorization`) fails under `--metadata auto` and along a `--resource` chain, as
/// class `missing-field`; a plain `--issuer` keeps its own rules.
#[test]
fn documents_the_mcp_sdk_rejects_fail_under_auto_and_resource() {
    let ca = TestCa::new();
    type Change = fn(&mut serde_json::Map<String, Value>);
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "no authorization_endpoint",
            |d| drop(d.remove("authorization_endpoint")),
            "MCP clients require authorization_endpoint: the MCP TypeScript SDK's OAuthMetadataSchema rejects",
        ),
        ("no token_endpoint", |d| drop(d.remove("token_endpoint")), "MCP clients require token_endpoint"),
        (
            "no response types",
            |d| drop(d.remove("response_types_supported")),
            "MCP clients require response_types_supported",
        ),
        (
            "no code flow",
            |d| drop(d.insert("response_types_supported".into(), json!(["token"]))),
            "does not list \"code\"",
        ),
        (
            "PKCE without S256",
            |d| drop(d.insert("code_challenge_methods_supported".into(), json!(["plain"]))),
            "does not list \"S256\"",
        ),
        (
            "plain token endpoint",
            |d| drop(d.insert("token_endpoint".into(), json!("http://as.example/token"))),
            "token_endpoint http://as.example/token uses plain http inside a chain given as https",
        ),
    ];
    for (i, (name, change, phrase)) in cases.into_iter().enumerate() {
        let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
            let mut doc: Value = serde_json::from_str(&oauth_doc(iss)).unwrap();
            change(doc.as_object_mut().unwrap());
            routes(vec![(OAUTH.to_string(), 200, doc.to_string())])
        });
        // Alternately as --metadata auto and along a resource chain.
        let r = if i % 2 == 0 {
            run_args(gate_for(&ca, &issuer), &["--metadata", "auto", "--once", "--output", "json"])
        } else {
            let servers = [issuer.as_str()];
            let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
                protected("/mcp", vec![(format!("{PRM}/mcp"), 200, prm_doc(res, &servers))])
            });
            resource_gate(&ca, &resource, &[])
        };
        assert_eq!(r.code, Some(1), "{name}: {}", r.log());
        assert!(r.log().contains(phrase), "{name}: expected {phrase:?} in {}", r.log());
        assert_eq!(r.json()["issuers"][0]["last_failure"]["class"], "missing-field", "{name}");
    }

    // A loopback token endpoint (local development) and a missing PKCE list are warnings.
    let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let mut doc: Value = serde_json::from_str(&oauth_doc(iss)).unwrap();
        doc["token_endpoint"] = json!("http://127.0.0.1:9000/token");
        doc.as_object_mut().unwrap().remove("code_challenge_methods_supported");
        routes(vec![(OAUTH.to_string(), 200, doc.to_string())])
    });
    let r = run_args(gate_for(&ca, &issuer), &["--metadata", "auto", "--once"]);
    assert_exit(&r, 0);
    assert_logged(
        &r,
        &[
            "token_endpoint http://127.0.0.1:9000/token uses plain http on a loopback host",
            "no code_challenge_methods_supported: MCP clients that follow the 2025-11-25 specification refuse",
            "the MCP TypeScript SDK 1.32 checks the list only when it is present",
        ],
    );
}

/// Plain `--issuer` keeps the rules made for the API server's issuer: no authorization_endpoint,
/// no PKCE list, still ready by `oidc` and by `oauth` (with a warning).
#[test]
fn a_plain_issuer_without_authorization_endpoint_still_passes() {
    let ca = TestCa::new();
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let mut doc: Value = serde_json::from_str(&discovery_doc(iss)).unwrap();
        doc.as_object_mut().unwrap().remove("authorization_endpoint");
        let doc = doc.to_string();
        routes(vec![(WELL_KNOWN.to_string(), 200, doc.clone()), (OAUTH.to_string(), 200, doc)])
    });
    for kind in ["oidc", "oauth"] {
        let r = run_args(gate_for(&ca, &iss), &["--metadata", kind, "--once"]);
        assert_exit(&r, 0);
        assert_logged(&r, &["usual member(s) missing: authorization_endpoint"]);
    }
}

/// A 502 (a proxy with no route for the path) passes on to the next URL, for both kinds of
/// metadata (typescript-sdk PR #1632); another 5xx ends the attempt, as SDK 1.32.2 throws on it.
#[test]
fn a_502_passes_on_and_other_server_errors_end_the_attempt() {
    let ca = TestCa::new();
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/t", |iss| {
        routes(vec![
            (format!("{OAUTH}/t"), 502, "bad gateway".into()),
            (format!("{WELL_KNOWN}/t"), 200, discovery_doc(iss)),
        ])
    });
    let r = run_args(gate_for(&ca, &iss), &["--metadata", "auto", "--once"]);
    assert_exit(&r, 0);
    assert_eq!(p.paths(), [format!("{OAUTH}/t"), format!("{WELL_KNOWN}/t")]);
    assert_logged(&r, &[&format!("passed over {} (HTTP 502)", p.issuer(&format!("{OAUTH}/t")))]);

    let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    });
    let servers = [issuer.as_str()];
    for (status, exit) in [(502, 0), (503, 1), (500, 1)] {
        let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
            let root = (PRM.to_string(), 200, prm_doc(res, &servers));
            protected("/mcp", vec![(format!("{PRM}/mcp"), status, "{}".into()), root])
        });
        let r = resource_gate(&ca, &resource, &[]);
        assert_eq!(r.code, Some(exit), "HTTP {status}: {}", r.log());
        let tried = rs.paths().len();
        assert_eq!(tried, if exit == 0 { 3 } else { 2 }, "HTTP {status}: {:?}", rs.paths());
    }
}

/// Challenges the parser used to miss, which the Python SDK finds: one in a second
/// `WWW-Authenticate` field line, several in one field, and a quoted string with obs-text.
#[test]
fn every_challenge_is_found_in_every_field_line() {
    let ca = TestCa::new();
    let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    });
    let servers = [issuer.as_str()];
    let lines: [&[&str]; 3] = [
        &[r#"Basic realm="Zürich""#, r#"Bearer resource_metadata="{named}""#],
        &[r#"Basic realm="x", Bearer error="invalid_token", resource_metadata="{named}""#],
        &[r#"Bearer realm="Zürich", resource_metadata="{named}""#],
    ];
    for challenge in lines {
        let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
            let doc = prm_doc(res, &servers);
            let named = res.replace("/mcp", "/meta/prm.json");
            let values: Vec<String> = challenge.iter().map(|c| c.replace("{named}", &named)).collect();
            reply(move |req, _| match req.path.as_str() {
                "/mcp" => {
                    let headers: Vec<(&str, &str)> = values.iter().map(|v| ("WWW-Authenticate", v.as_str())).collect();
                    Reply::with_headers(401, &headers, "")
                }
                "/meta/prm.json" => Reply::json(200, doc.clone()),
                _ => Reply::json(404, "{}"),
            })
        });
        let r = resource_gate(&ca, &resource, &[]);
        assert_exit(&r, 0);
        assert_eq!(rs.paths(), ["/mcp", "/meta/prm.json"], "{challenge:?}");
    }
}

/// No protected resource metadata anywhere: both SDKs take the server's origin for its
/// authorization server (the 2025-03-26 behaviour); the gate does too, with a warning, unless
/// `--refuse-legacy-auth` (or its variable).
#[test]
fn a_legacy_server_is_its_own_authorization_server_unless_refused() {
    let ca = TestCa::new();
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let origin = res.trim_end_matches("/mcp").to_string();
        protected("/mcp", vec![(OAUTH.to_string(), 200, oauth_doc(&origin))])
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 0);
    assert_eq!(rs.paths(), ["/mcp".to_string(), format!("{PRM}/mcp"), PRM.to_string(), OAUTH.to_string()]);
    assert_logged(&r, &["no protected resource metadata", "using the 2025-03-26 legacy path", "--refuse-legacy-auth"]);
    let origin = resource.trim_end_matches("/mcp");
    assert_eq!(r.json()["issuers"][0]["endpoints"]["token_endpoint"], format!("{origin}/token"));

    let r = resource_gate(&ca, &resource, &["--refuse-legacy-auth"]);
    assert_failed(&r, "resource", "resource-metadata", &["which --refuse-legacy-auth refuses"]);
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once"]);
    cmd.env("WAIT_FOR_IDP_REFUSE_LEGACY_AUTH", "true");
    assert_exit(&run(cmd), 1);
}

/// An MCP server that needs no authorization answers `server/discover` without a token: a
/// modern result, or its SSE stream, which never ends. A client connects; with no metadata
/// anywhere the gate says ready, and why.
#[test]
fn a_server_that_needs_no_authorization_is_ready_with_a_note() {
    let ca = TestCa::new();
    for (stream, what) in [(false, "a server/discover result offering 2026-07-28"), (true, "an event stream")] {
        let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |_| {
            reply(move |req, _| match req.path.as_str() {
                "/mcp" if stream => Reply::EventStream,
                "/mcp" => Reply::json(200, DISCOVERED),
                _ => Reply::json(404, "{}"),
            })
        });
        let r = resource_gate(&ca, &resource, &[]);
        assert_exit(&r, 0);
        assert_within(&r, std::time::Duration::from_secs(3));
        // Still asked for metadata: an open server that publishes some is judged by it.
        assert_eq!(rs.paths(), ["/mcp".to_string(), format!("{PRM}/mcp"), PRM.to_string()]);
        assert_logged(
            &r,
            &[&format!("answered server/discover without a token with {what}: it needs no authorization")],
        );
        assert_eq!(r.json()["issuers"][0]["warnings"].as_array().map(Vec::len), Some(1), "{}", r.stdout);
    }
    // A 200 page that is no MCP server (an ingress's default backend) is no reason to pass.
    let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |_| {
        reply(|req, _| match req.path.as_str() {
            "/mcp" => Reply::text(200, "<h1>Welcome to nginx!</h1>"),
            _ => Reply::json(404, "{}"),
        })
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_failed(&r, "resource", "resource-metadata", &["MCP endpoint: ", "neither JSON nor an event stream"]);
}

/// MCP clients send `MCP-Protocol-Version` (SDK 1.32.2: LATEST_PROTOCOL_VERSION, 2025-11-25) on
/// every metadata request; so does the gate under `auto` and `--resource`, and only there.
#[test]
fn metadata_requests_carry_the_mcp_protocol_version() {
    let ca = TestCa::new();
    let versioned = |iss: &str, doc: String| {
        let (doc, path) = (doc, if iss.ends_with("/mcp") { format!("{PRM}/mcp") } else { OAUTH.to_string() });
        reply(move |req, _| match req.header("mcp-protocol-version") {
            _ if req.path == "/mcp" => Reply::json(401, "{}"),
            Some("2025-11-25") if req.path == path => Reply::json(200, doc.clone()),
            Some("2025-11-25") => Reply::json(404, "{}"),
            _ => Reply::json(400, r#"{"error":"no MCP-Protocol-Version"}"#),
        })
    };
    let (_as, issuer) =
        Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| versioned(iss, oauth_doc(iss)));
    let servers = [issuer.as_str()];
    let (_rs, resource) =
        Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| versioned(res, prm_doc(res, &servers)));
    assert_exit(&resource_gate(&ca, &resource, &[]), 0);
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let doc = discovery_doc(iss);
        reply(move |req, _| match req.header("mcp-protocol-version") {
            None => Reply::json(200, doc.clone()),
            Some(_) => Reply::json(400, "{}"),
        })
    });
    assert_exit(&run_args(gate_for(&ca, &iss), &["--once"]), 0);
}

/// A modern MCP server's answer to the gate's `server/discover`.
const DISCOVERED: &str = r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}"#;

/// An MCP server protected at `endpoint` (a `401` without a challenge to every request there, as
/// a bearer middleware answers one without a token), serving `table` elsewhere.
fn protected(endpoint: &str, mut table: Vec<(String, u16, String)>) -> Handler {
    table.insert(0, (endpoint.to_string(), 401, "{}".into()));
    routes(table)
}
