//! Redirects, as the client decides. OIDC discovery and JWK Sets as Go's `http.Client`: 301, 302,
//! 303, 307 and 308 (absolute or relative, resolved as RFC 3986 §5.2 says, dot segments and queries
//! holding URLs included) to any origin, nine of them, the tenth failing as Go's does; the token
//! and every `--header-file` header stay behind once a hop leaves the origin; https to plain http
//! is refused. Under `--metadata auto` and along a `--resource` chain as the MCP SDK: within the
//! origin only, an unfollowed redirect passed over to the next URL, with a hint naming the flag
//! that reaches the link. The fault matrix (`network_faults.rs`) holds the rows for a redirect
//! loop, too many redirects and a downgrade; reference resolution is also a property test against
//! the `url` crate (`properties.rs`) and unit tests in `src/url/reference.rs`.

use crate::support::*;
use std::sync::Arc;

#[test]
fn same_origin_redirects_are_followed() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let (iss, port) = (slot.issuer(""), slot.port);
    let doc = discovery_doc(&iss);
    let handler = reply(move |req, _| match req.path.as_str() {
        WELL_KNOWN => Reply::redirect(301, "/r1"),
        "/r1" => Reply::redirect(302, &format!("https://localhost:{port}/r2")),
        "/r2" => Reply::redirect(307, "r3"),
        "/r3" => Reply::redirect(303, "/r4"),
        "/r4" => Reply::redirect(308, "/final"),
        "/final" => Reply::json(200, doc.clone()),
        _ => Reply::json(404, "{}"),
    });
    let p = slot.listen(tls_mode(ca.leaf(&["localhost"])), handler);
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(p.count(), 6);
    assert!(r.stdout.contains(&format!("metadata                https://localhost:{port}/final")), "{}", r.stdout);
}

/// Issue 35 §6: Go follows a `Location` with a space or a character beyond ASCII, escaped in the
/// request it sends (`/d%20oc`, `/d%C3%A9oc`); the gate refused both, and took the second for no
/// `Location` at all.
#[test]
fn a_location_with_a_space_or_beyond_ascii_is_followed_escaped_as_go_does() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let doc = discovery_doc(&iss);
    let handler = reply(move |req, _| match req.path.as_str() {
        WELL_KNOWN => Reply::redirect(302, "/d oc"),
        "/d%20oc" => Reply::redirect(302, "/d\u{e9}oc"),
        "/d%C3%A9oc" => Reply::json(200, doc.clone()),
        _ => Reply::json(404, "{}"),
    });
    let p = slot.listen(tls_mode(ca.leaf(&["localhost"])), handler);
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(p.count(), 3);
}

#[test]
fn relative_redirects_resolve_with_dot_segments_and_queries_holding_urls() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let (port, iss) = (slot.port, slot.issuer("/realms/x"));
    let doc = discovery_doc(&iss);
    let handler: Handler = Arc::new(move |req, _| match req.path.as_str() {
        "/realms/x/.well-known/openid-configuration" => Reply::redirect(302, "../../y/./doc?next=https://other/x"),
        "/realms/y/doc?next=https://other/x" => Reply::redirect(307, &format!("HTTPS://localhost:{port}/final#top")),
        "/final" => Reply::json(200, doc.clone()),
        _ => Reply::json(404, "{}"),
    });
    let p = slot.listen(tls_mode(ca.leaf(&["localhost"])), handler);
    let mut cmd = gate_for(&ca, &iss);
    cmd.arg("--once");
    let r = run(cmd);
    assert_exit(&r, 0);
    let paths: Vec<String> = p.seen.lock().unwrap().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/realms/x/.well-known/openid-configuration", "/realms/y/doc?next=https://other/x", "/final"]);
}

/// Go's `defaultCheckRedirect` stops at `len(via) >= 10`: ten requests, so a chain of nine
/// redirects passes and one of ten fails, in Go's words.
#[test]
fn nine_redirects_pass_and_the_tenth_fails_as_in_go() {
    let ca = TestCa::new();
    for (hops, passes) in [(9, true), (10, false)] {
        let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
            let doc = discovery_doc(iss);
            reply(move |req, _| {
                let n: usize = req.path.strip_prefix("/hop").map_or(0, |n| n.parse().unwrap());
                if n == hops { Reply::json(200, doc.clone()) } else { Reply::redirect(302, &format!("/hop{}", n + 1)) }
            })
        });
        let r = run_args(gate_for(&ca, &iss), &["--once"]);
        assert_eq!(p.count(), 10, "{hops} redirects: ten requests either way");
        if passes {
            assert_exit(&r, 0);
        } else {
            assert_exit(&r, 1);
            assert_logged(&r, &["http-status", "stopped after 10 redirects (Go's http.Client follows no more)"]);
        }
    }
}

/// Go follows a redirect to another origin; so does the gate, but the token and every
/// `--header-file` header stay behind from the first hop off the origin on (Go drops only
/// Authorization, and keeps it for a subdomain: a listed difference), while the agent's own
/// headers go along. Here the document moved from `localhost` to `127.0.0.1` (another origin),
/// which sends the client back home for the keys.
#[test]
fn a_redirect_to_another_origin_is_followed_without_the_secrets() {
    let ca = TestCa::new();
    let token = ca.path("token");
    std::fs::write(&token, "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln\n").unwrap();
    let key = ca.path("api-key");
    std::fs::write(&key, "k-0123456789abcdef\n").unwrap();
    let slot = Reserved::new();
    let (iss, port) = (slot.issuer(""), slot.port);
    let mut doc: serde_json::Value = serde_json::from_str(&discovery_doc(&iss)).unwrap();
    doc["jwks_uri"] = format!("{iss}/keys").into();
    let doc = doc.to_string();
    let p = slot.listen(
        tls_mode(ca.leaf(&["localhost", "127.0.0.1"])),
        reply(move |req, _| match (req.header("host").unwrap_or_default(), req.path.as_str()) {
            (h, WELL_KNOWN) if h.starts_with("localhost") => {
                Reply::redirect(302, &format!("https://127.0.0.1:{port}/moved"))
            }
            (_, "/moved") => Reply::redirect(303, &format!("https://localhost:{port}/home")),
            (_, "/home") => Reply::json(200, doc.clone()),
            (_, "/keys") => Reply::json(200, std::fs::read_to_string(fixture("keycloak-mafiasi.jwks.json")).unwrap()),
            _ => Reply::json(404, "{}"),
        }),
    );
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--once", "--check-jwks", "--header-file"]).arg(format!("X-Api-Key={}", key.display()));
    cmd.arg("--token-file").arg(&token);
    let r = run(cmd);
    assert_exit(&r, 0);
    let seen = p.seen.lock().unwrap().clone();
    let secrets = |path: &str| {
        let req = seen.iter().find(|r| r.path == path).unwrap();
        assert!(req.header("user-agent").is_some() && req.header("accept").is_none(), "{req:?}");
        (req.header("authorization").is_some(), req.header("x-api-key").is_some())
    };
    assert_eq!(secrets(WELL_KNOWN), (true, true));
    assert_eq!(secrets("/moved"), (false, false), "off the origin: none");
    assert_eq!(secrets("/home"), (false, false), "back home, still none (Go's rule too)");
    assert_eq!(secrets("/keys"), (true, true), "a new fetch on the token's origin carries them again");
}

/// Under MCP's rule a cross-origin redirect is refused, and the hint names the flag that reaches
/// the link: `--discovery-url` for one issuer, none for several or along `--resource`. Go's rule
/// follows it (JWK Sets, plain OIDC discovery): no refusal, no hint.
#[test]
fn cross_origin_redirect_hints_name_the_flag_that_applies() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let (iss, port) = (slot.issuer(""), slot.port);
    let base = iss.trim_end_matches('/').to_string();
    let (doc, resource) = (discovery_doc(&iss), format!("{base}/mcp"));
    let away = format!("https://127.0.0.1:{port}/away");
    let p = slot.listen(
        tls_mode(ca.leaf(&["localhost", "127.0.0.1"])),
        reply(move |req, _| match req.path.as_str() {
            WELL_KNOWN => Reply::json(200, doc.clone()),
            "/mcp" => Reply::json(401, "{}"),
            p if p.starts_with("/moved/.well-known/")
                || p.starts_with("/.well-known/oauth-authorization-server/moved") =>
            {
                Reply::redirect(301, &away)
            }
            p if p.starts_with("/.well-known/openid-configuration/moved") => Reply::redirect(301, &away),
            p if p.starts_with("/.well-known/oauth-protected-resource") => Reply::redirect(302, &away),
            _ => Reply::json(404, "{}"),
        }),
    );
    let moved = p.issuer("/moved");
    for (args, named, not_named) in [
        (vec!["--issuer", &moved, "--metadata", "auto"], "point --discovery-url at the final location", "--jwks-url"),
        (
            vec!["--issuer", &iss, "--issuer", &moved, "--metadata", "auto"],
            "--discovery-url takes a single --issuer",
            "point --",
        ),
    ] {
        let r = run_args(gate(), &[args.as_slice(), &["--ca-file", &ca.ca_arg(), "--once"]].concat());
        assert_exit(&r, 1);
        assert_logged(&r, &["refused redirect to another origin", named]);
        assert!(!r.log().contains(not_named), "{args:?}: {}", r.log());
    }
    // Go's rule: followed (to a 404 here), so nothing is refused.
    let r = run_args(gate(), &["--issuer", &moved, "--ca-file", &ca.ca_arg(), "--once"]);
    assert_exit(&r, 1);
    assert!(!r.log().contains("refused redirect"), "{}", r.log());
    assert!(p.paths().iter().any(|path| path == "/away"), "{:?}", p.paths());
    // A resource's metadata URLs are candidates in the MCP clients' order: a redirect the gate
    // does not follow is passed over, as the SDKs do, here down to the legacy path; refused, the
    // failure names what was passed over, and no flag is advised.
    let args = ["--resource", resource.as_str(), "--ca-file", &ca.ca_arg(), "--once"];
    let r = run_args(gate(), &args);
    assert_exit(&r, 0);
    assert_logged(&r, &["refused redirect to another origin", "2025-03-26 legacy path"]);
    let r = run_args(gate(), &[&args[..], &["--refuse-legacy-auth"]].concat());
    assert_exit(&r, 1);
    assert_logged(&r, &["refused redirect to another origin"]);
    assert!(!r.log().contains("--discovery-url"), "{}", r.log());
}

/// A redirect the gate does not follow (another origin, https to http) is passed
/// over, as the MCP TypeScript SDK 1.32.2 does: `fetchWithinOrigin` hands the 3xx back and
/// `discoverAuthorizationServerMetadata` / `shouldAttemptFallback` go on for any status below 500.
#[test]
fn an_unfollowed_redirect_passes_on_to_the_next_url() {
    let ca = TestCa::new();
    let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    });
    let servers = [issuer.as_str()];
    let elsewhere = format!("{issuer}/somewhere");
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let doc = prm_doc(res, &servers);
        reply(move |req, _| match req.path.as_str() {
            "/mcp" => Reply::json(401, "{}"),
            p if p == format!("{PRM}/mcp") => Reply::redirect(302, &elsewhere),
            PRM => Reply::json(200, doc.clone()),
            _ => Reply::json(404, "{}"),
        })
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 0);
    assert_eq!(rs.paths(), ["/mcp".to_string(), format!("{PRM}/mcp"), PRM.to_string()]);
    assert_logged(&r, &["protected resource metadata: passed over", "refused redirect to another origin"]);

    // Under auto: RFC 8414 redirects to plain http, the OIDC document at the root passes.
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let (plain, doc) = (iss.replace("https://", "http://"), discovery_doc(iss));
        reply(move |req, _| match req.path.as_str() {
            OAUTH => Reply::redirect(301, &format!("{plain}{OAUTH}")),
            WELL_KNOWN => Reply::json(200, doc.clone()),
            _ => Reply::json(404, "{}"),
        })
    });
    let r = run_args(gate_for(&ca, &iss), &["--metadata", "auto", "--once"]);
    assert_exit(&r, 0);
    assert_eq!(p.paths(), [OAUTH, WELL_KNOWN]);
    assert_logged(&r, &["passed over", "refused redirect from https to plain http"]);
}
