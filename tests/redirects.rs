//! Redirects: a same-origin one (301, 302, 307, 308; absolute or relative, resolved as RFC 3986
//! §5.2 says, dot segments and queries holding URLs included) is followed; one to another origin
//! or from https to plain http is refused, with a hint naming the flag that reaches the link; under
//! `--metadata auto` and along a `--resource` chain an unfollowed redirect is passed over to the
//! next URL, as MCP clients do. The fault matrix (`network_faults.rs`) holds the rows for a
//! redirect loop, more than 5 redirects and the refused ones; reference resolution is also a
//! property test against the `url` crate (`properties.rs`) and unit tests in `src/url/reference.rs`.

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
        "/r3" => Reply::redirect(308, "/final"),
        "/final" => Reply::json(200, doc.clone()),
        _ => Reply::json(404, "{}"),
    });
    let p = slot.listen(tls_mode(ca.leaf(&["localhost"])), handler);
    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(p.count(), 5);
    assert!(r.stdout.contains(&format!("metadata                https://localhost:{port}/final")), "{}", r.stdout);
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

    // The same-origin rule applies to the resolved URL: `//other` leaves the origin.
    let away =
        Provider::start(tls_mode(ca.leaf(&["localhost"])), Arc::new(|_, _| Reply::redirect(302, "//other.test/x")));
    let mut cmd = gate_for(&ca, &away.issuer(""));
    cmd.arg("--once");
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["refused redirect to another origin (https://other.test/x)"]);
}

/// A refused cross-origin redirect's hint names the flag that reaches the
/// link: `--discovery-url` exits 2 with `--resource` or several issuers, and redirects nothing
/// but the issuer's metadata.
#[test]
fn cross_origin_redirect_hints_name_the_flag_that_applies() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let base = iss.trim_end_matches('/').to_string();
    let (doc, resource) = (discovery_doc(&iss), format!("{base}/mcp"));
    let p = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        reply(move |req, _| match req.path.as_str() {
            WELL_KNOWN => Reply::json(200, doc.clone()),
            "/mcp" => Reply::json(401, "{}"),
            "/protocol/openid-connect/certs" => Reply::redirect(302, "https://elsewhere.test/certs"),
            "/moved/.well-known/openid-configuration" => Reply::redirect(301, "https://elsewhere.test/x"),
            p if p.starts_with("/.well-known/oauth-protected-resource") => {
                Reply::redirect(302, "https://elsewhere.test/prm")
            }
            _ => Reply::json(404, "{}"),
        }),
    );
    let moved = p.issuer("/moved");
    for (args, named, not_named) in [
        (vec!["--issuer", &iss, "--check-jwks"], "point --jwks-url at the final location", "--discovery-url"),
        (vec!["--issuer", &moved], "point --discovery-url at the final location", "--jwks-url"),
        (vec!["--issuer", &iss, "--issuer", &moved], "--discovery-url takes a single --issuer", "point --"),
    ] {
        let r = run_args(gate(), &[args.as_slice(), &["--ca-file", &ca.ca_arg(), "--once"]].concat());
        assert_exit(&r, 1);
        assert_logged(&r, &["refused redirect to another origin", named]);
        assert!(!r.log().contains(not_named), "{args:?}: {}", r.log());
    }
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
