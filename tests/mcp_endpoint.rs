//! The MCP endpoint under `--resource`, asked as the v2 clients ask it (MCP specification,
//! revision 2026-07-28; TypeScript `@modelcontextprotocol/client` 2.x, Python `mcp` 2.x): a
//! POST of `server/discover`, then `initialize` when the answer is no modern evidence; what
//! stops those clients (a 403 without `insufficient_scope`, a 5xx, no answer, an unusable
//! reply, both methods refused) stops the gate, and a challenge only the POST returns starts the
//! chain. Then the chain's smaller rules the v2 differential showed: root-form metadata names
//! the origin, the legacy issuer with or without its `/`, the first authorization server only,
//! and members of the wrong type.

use crate::support::*;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A modern MCP server's answer to the gate's `server/discover`.
const DISCOVERED: &str = r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;

/// How a test's MCP endpoint answers, given the JSON-RPC method (or `GET`) and its own URL.
type Endpoint = fn(&str, &str) -> Reply;

/// The JSON-RPC method a request's body names, `GET` for a GET.
fn rpc_method(req: &Request) -> String {
    if req.method != "POST" {
        return req.method.clone();
    }
    let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
    body["method"].as_str().unwrap_or("").to_string()
}

/// A resource at `/mcp` whose endpoint answers by `endpoint` (given the JSON-RPC method, or
/// `GET`), with metadata at the path form naming `server`: a chain the gate passed before, when
/// it only GETs.
fn mcp_server(
    ca: &TestCa,
    server: &str,
    endpoint: impl Fn(&str, &str) -> Reply + Send + Sync + 'static,
) -> (Provider, String) {
    let servers = [server];
    Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let (doc, res) = (prm_doc(res, &servers), res.to_string());
        reply(move |req, _| match req.path.as_str() {
            "/mcp" => endpoint(&rpc_method(req), &res),
            p if p == format!("{PRM}/mcp") => Reply::json(200, doc.clone()),
            _ => Reply::json(404, "{}"),
        })
    })
}

fn authorization_server(ca: &TestCa) -> (Provider, String) {
    Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        routes(vec![(OAUTH.to_string(), 200, oauth_doc(iss))])
    })
}

/// What the TypeScript client's probe sends, and the fallback it makes after a 405.
#[test]
fn the_endpoint_is_asked_as_the_v2_clients_ask_it() {
    let ca = TestCa::new();
    let (_as, issuer) = authorization_server(&ca);
    let seen: Arc<Mutex<Vec<Request>>> = Arc::default();
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let doc = prm_doc(res, &[&issuer]);
        let seen = seen.clone();
        reply(move |req, _| {
            seen.lock().unwrap().push(req.clone());
            match (req.path.as_str(), rpc_method(req).as_str()) {
                ("/mcp", "server/discover") => Reply::json(405, "{}"),
                ("/mcp", _) => Reply::json(401, "{}"),
                (p, _) if p.ends_with("/mcp") => Reply::json(200, doc.clone()),
                _ => Reply::json(404, "{}"),
            }
        })
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 0);
    assert_eq!(rs.paths(), ["/mcp".to_string(), "/mcp".into(), format!("{PRM}/mcp")]);
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|r| r.method == "POST" || r.path != "/mcp"), "no GET of the endpoint: {seen:?}");
    let (discover, initialize) = (&seen[0], &seen[1]);
    assert_eq!(discover.method, "POST");
    assert_eq!(discover.header("content-type"), Some("application/json"));
    assert_eq!(discover.header("accept"), Some("application/json, text/event-stream"));
    assert_eq!(discover.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(discover.header("mcp-method"), Some("server/discover"));
    let body: Value = serde_json::from_slice(&discover.body).unwrap();
    assert_eq!(body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    assert_eq!(initialize.method, "POST");
    assert_eq!(rpc_method(initialize), "initialize");
    assert_eq!(initialize.header("mcp-method"), None, "the legacy handshake carries no 2026 header");
    assert_eq!(initialize.header("authorization"), None, "no token along a resource chain");
}

/// Every answer the v2 clients stop at stops the gate, although the metadata chain behind the
/// endpoint serves (the gate that only GETs said ready to each).
#[test]
fn what_stops_the_v2_clients_stops_the_gate() {
    let ca = TestCa::new();
    let (_as, issuer) = authorization_server(&ca);
    let cases: [(&str, Endpoint, &str, &str); 6] = [
        (
            "403",
            |_, _| Reply::json(403, "{}"),
            "http-status",
            "answered server/discover with HTTP 403: MCP clients stop",
        ),
        (
            "503 to everything",
            |_, _| Reply::json(503, "{}"),
            "http-status",
            "answered server/discover with HTTP 503: MCP clients stop (ERA_NEGOTIATION_FAILED)",
        ),
        (
            "404 to both",
            |_, _| Reply::json(404, "{}"),
            "http-status",
            "answered server/discover with HTTP 404 and initialize with HTTP 404",
        ),
        (
            "405 to both POSTs, GET open",
            |m, _| if m == "GET" { Reply::EventStream } else { Reply::json(405, "{}") },
            "http-status",
            "answered server/discover with HTTP 405 and initialize with HTTP 405: MCP clients fall back",
        ),
        ("202, no answer", |_, _| Reply::with_headers(202, &[], ""), "resource", "MCP clients get no usable reply"),
        (
            "302 turns the POST into a GET",
            |_, res| Reply::redirect(302, &format!("{res}/elsewhere")),
            "http-status",
            "with HTTP 302 and initialize with HTTP 302",
        ),
    ];
    for (name, endpoint, class, phrase) in cases {
        let (_rs, resource) = mcp_server(&ca, &issuer, endpoint);
        let r = resource_gate(&ca, &resource, &[]);
        assert_eq!(r.code, Some(1), "{name}: {}", r.log());
        assert!(r.log().contains(phrase), "{name}: expected {phrase:?} in {}", r.log());
        let failure = &r.json()["issuers"][0]["last_failure"];
        assert_eq!(failure["class"], class, "{name}");
        assert_eq!(failure["link"], "resource-metadata", "{name}");
    }
}

/// A 5xx is retried, honouring its `Retry-After` (here longer than the deadline, which comes
/// first); no answer at all is a timeout.
#[test]
fn a_5xx_is_retried_honouring_retry_after_and_no_answer_times_out() {
    let ca = TestCa::new();
    let (_as, issuer) = authorization_server(&ca);
    // A 429 falls back to initialize, as the clients do; its Retry-After is asked for all the same.
    for (status, posts) in [(500, 1), (429, 2)] {
        let (rs, resource) =
            mcp_server(&ca, &issuer, move |_, _| Reply::with_headers(status, &[("Retry-After", "3600")], ""));
        let mut cmd = gate();
        cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--timeout", "2s", "--fail-closed"]);
        let r = run(cmd);
        assert_exit(&r, 1);
        assert!(r.log().contains("Retry-After 1h0m0s not honoured: the deadline comes first"), "{}", r.log());
        assert_eq!(rs.paths().len(), 2 * posts, "HTTP {status}: the last attempt still made: {:?}", rs.paths());
    }

    let (_rs, resource) = mcp_server(&ca, &issuer, |_, _| Reply::Hang);
    let r = resource_gate(&ca, &resource, &["--timeout", "2s", "--fail-closed"]);
    assert_exit(&r, 1);
    assert_eq!(r.json()["issuers"][0]["last_failure"]["class"], "timeout", "{}", r.stdout);
}

/// A challenge only the POST returns (the GET is refused with 405, as a modern server may), and
/// a 403 asking for `insufficient_scope`, both start the chain.
#[test]
fn a_challenge_only_the_post_returns_starts_the_chain() {
    let ca = TestCa::new();
    let (_as, issuer) = authorization_server(&ca);
    let cases: [(&str, Endpoint); 2] = [
        ("401 on POST, 405 on GET", |m, res| match m {
            "GET" => Reply::json(405, "{}"),
            _ => {
                let named = format!(r#"Bearer resource_metadata="{}{PRM}/mcp""#, res.trim_end_matches("/mcp"));
                Reply::with_headers(401, &[("WWW-Authenticate", &named)], "")
            }
        }),
        ("403 insufficient_scope", |_, _| {
            Reply::with_headers(403, &[("WWW-Authenticate", r#"Bearer error="insufficient_scope", scope="tools""#)], "")
        }),
    ];
    for (name, endpoint) in cases {
        let (rs, resource) = mcp_server(&ca, &issuer, endpoint);
        let r = resource_gate(&ca, &resource, &[]);
        assert_exit(&r, 0);
        assert_eq!(r.json()["issuers"][0]["authorization_servers"][0]["issuer"], issuer.as_str(), "{name}");
        assert_eq!(rs.paths(), ["/mcp".to_string(), format!("{PRM}/mcp"), PRM.to_string()][..rs.paths().len()]);
    }
}

/// A same-origin 307 keeps the POST, as the clients' `fetchWithinOrigin` follows it.
#[test]
fn a_same_origin_307_keeps_the_post() {
    let ca = TestCa::new();
    let (_as, issuer) = authorization_server(&ca);
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let doc = prm_doc(res, &[&issuer]);
        reply(move |req, _| match (req.path.as_str(), req.method.as_str()) {
            ("/mcp", _) => Reply::redirect(307, "/v2/mcp"),
            ("/v2/mcp", "POST") => Reply::json(401, "{}"),
            (p, _) if p == format!("{PRM}/mcp") => Reply::json(200, doc.clone()),
            _ => Reply::json(404, "{}"),
        })
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 0);
    assert_eq!(rs.paths(), ["/mcp".to_string(), "/v2/mcp".into(), format!("{PRM}/mcp")]);
}

/// An open server that answers only POST (`initialize` after a legacy `server/discover`, GET 405)
/// is ready with the note; one that also publishes metadata is judged by its chain.
#[test]
fn an_open_post_only_server_is_ready_unless_its_published_chain_is_broken() {
    let ca = TestCa::new();
    let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |_| {
        reply(|req, _| match (req.path.as_str(), rpc_method(req).as_str()) {
            ("/mcp", "initialize") => Reply::json(200, INITIALIZED),
            ("/mcp", "server/discover") => Reply::json(400, r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600}}"#),
            ("/mcp", _) => Reply::json(405, "{}"),
            _ => Reply::json(404, "{}"),
        })
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 0);
    assert_logged(&r, &["answered initialize without a token with an initialize result (after server/discover"]);

    let (_broken, broken) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |_| routes(vec![]));
    let (_rs, resource) = mcp_server(&ca, &broken, |_, _| Reply::json(200, DISCOVERED));
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 1);
    assert!(r.log().contains(&format!("authorization server {broken}")), "{}", r.log());
}

/// RFC 9728 §3.3: metadata at the root names the origin, as both SDKs accept it.
#[test]
fn root_form_metadata_names_the_origin() {
    let ca = TestCa::new();
    let (_as, issuer) = authorization_server(&ca);
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/tenant/mcp", |res| {
        let origin = res.trim_end_matches("/tenant/mcp");
        routes(vec![("/tenant/mcp".into(), 401, "{}".into()), (PRM.to_string(), 200, prm_doc(origin, &[&issuer]))])
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 0);
    assert_eq!(rs.paths(), ["/tenant/mcp".to_string(), format!("{PRM}/tenant/mcp"), PRM.to_string()]);
    // The path form still names the resource exactly.
    let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/tenant/mcp", |res| {
        let origin = res.trim_end_matches("/tenant/mcp");
        let doc = prm_doc(origin, &[&issuer]);
        routes(vec![("/tenant/mcp".into(), 401, "{}".into()), (format!("{PRM}/tenant/mcp"), 200, doc)])
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 1);
    assert_eq!(r.json()["issuers"][0]["last_failure"]["class"], "resource");
}

/// The legacy path's issuer is the origin, with or without its `/`, as both SDKs take it.
#[test]
fn the_legacy_issuer_is_the_origin_with_or_without_its_slash() {
    let ca = TestCa::new();
    let (rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let origin = format!("{}/", res.trim_end_matches("/mcp"));
        routes(vec![("/mcp".into(), 401, "{}".into()), (OAUTH.to_string(), 200, oauth_doc(&origin))])
    });
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 0);
    assert_logged(&r, &["using the 2025-03-26 legacy path"]);
    assert_eq!(rs.paths().iter().filter(|p| *p == OAUTH).count(), 2, "asked again for the slash form only");
}

/// Clients use the first authorization server: it must be ready; the others are never waited for.
#[test]
fn the_first_authorization_server_is_the_one_required() {
    let ca = TestCa::new();
    let (_as, good) = authorization_server(&ca);
    let (broken, bad) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |_| routes(vec![]));
    for (servers, exit) in [([good.as_str(), bad.as_str()], 0), ([bad.as_str(), good.as_str()], 1)] {
        let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
            routes(vec![("/mcp".into(), 401, "{}".into()), (format!("{PRM}/mcp"), 200, prm_doc(res, &servers))])
        });
        let before = broken.count();
        let r = resource_gate(&ca, &resource, &[]);
        assert_eq!(r.code, Some(exit), "{servers:?}: {}", r.log());
        if exit == 0 {
            assert_eq!(broken.count(), before, "the second server is not asked");
            assert_logged(&r, &[&format!("not checked: {bad}")]);
        }
    }
}

/// `client_id_metadata_document_supported: "true"` is no boolean: the TypeScript schema rejects
/// the document, and so does the gate under `--resource` (a plain `--issuer` keeps its rules).
#[test]
fn a_wrongly_typed_member_fails_the_document() {
    let ca = TestCa::new();
    let (_as, issuer) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let mut doc: Value = serde_json::from_str(&oauth_doc(iss)).unwrap();
        doc["client_id_metadata_document_supported"] = Value::from("true");
        routes(vec![(OAUTH.to_string(), 200, doc.to_string())])
    });
    let (_rs, resource) = mcp_server(&ca, &issuer, |_, _| Reply::json(401, "{}"));
    let r = resource_gate(&ca, &resource, &[]);
    assert_exit(&r, 1);
    let failure = &r.json()["issuers"][0]["last_failure"];
    assert_eq!(failure["class"], "json", "{failure}");
    assert!(r.log().contains(r#""client_id_metadata_document_supported" is a string, not a boolean"#), "{}", r.log());
    assert_exit(&run_args(gate_for(&ca, &issuer), &["--metadata", "oauth", "--once"]), 0);
}
