//! The MCP endpoint itself, asked as the v2 clients ask it before anything else (MCP
//! specification, revision 2026-07-28: servers MUST implement `server/discover`; the GET stream
//! is gone). The TypeScript client 2.x (`versionNegotiation: 'auto'`: `negotiateEra` and
//! `classifyProbeOutcome` in `client/versionNegotiation.ts` and `probeClassifier.ts`) and the
//! Python `mcp` 2.x (`client/_probe.py`) POST `server/discover` first; on anything that is not
//! modern evidence they POST `initialize`, the 2025 handshake. What they stop at, the gate waits
//! on: a server a client cannot even talk to is not ready, whatever its metadata says.

use super::attempt::Attempt;
use super::failure::{Cause, Failure, FailureClass, Link};
use crate::net::fetch_error::FetchError;
use crate::net::redirect::MCP_MAX_REDIRECTS as MAX_REDIRECTS;
use crate::net::redirect::{self, RedirectKind, Redirects};
use crate::net::response::Fetched;
use crate::rules::Json;
use crate::url;
use std::time::{Instant, SystemTime};

/// The revision `server/discover` announces (`FIRST_MODERN_PROTOCOL_VERSION`, TS 2.4.0).
pub(crate) const MODERN_REVISION: &str = "2026-07-28";
const DISCOVER: &str = concat!(
    r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{"_meta":{"#,
    r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientInfo":{"name":"wait-for-idp","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""},"io.modelcontextprotocol/clientCapabilities":{}}}}"#
);
/// The fallback `initialize`, offering the 2025 revision (`LATEST_PROTOCOL_VERSION`, TS 2.4.0).
const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"#,
    r#""clientInfo":{"name":"wait-for-idp","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""}}}"#
);
const CONTEXT: &str = "MCP endpoint: ";

/// How the endpoint answered a client without a token.
pub(super) enum Endpoint {
    /// It asks for a token: a `401`, or a `403` with `insufficient_scope` (the clients start the
    /// OAuth flow from either); the response carries the challenge, if any.
    Challenged(Fetched),
    /// It answered as an MCP server: a client connects without a token. Says how.
    Open(String),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Discover,
    Initialize,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Discover => "server/discover",
            Method::Initialize => "initialize",
        }
    }

    /// The JSON-RPC request the clients send: TS 2.4.0's `buildProbeRequest` (the `_meta`
    /// envelope of `codecForVersion('2026-07-28').outboundEnvelope`) and its legacy
    /// `initialize`. Constant text: no JSON is built at run time.
    fn body(self) -> &'static [u8] {
        match self {
            Method::Discover => DISCOVER.as_bytes(),
            Method::Initialize => INITIALIZE.as_bytes(),
        }
    }

    /// The transport's headers (`_send`, `_applyBodyDerivedHeaders`): the modern probe names its
    /// revision and method; the legacy `initialize` carries neither.
    fn headers(self) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("content-type", "application/json".to_string()),
            ("accept", "application/json, text/event-stream".to_string()),
        ];
        if self == Method::Discover {
            headers.push(("mcp-protocol-version", MODERN_REVISION.into()));
            headers.push(("mcp-method", "server/discover".into()));
        }
        headers
    }
}

/// What one POST's answer means to the v2 clients.
enum Verdict {
    Challenged,
    /// Not ready: why.
    Stop(Failure),
    /// Not modern evidence: the clients fall back to `initialize`. What it answered.
    Fallback(String),
    Answered(String),
}

/// POSTs `server/discover`, then `initialize` when the clients would, and judges the answers.
pub(super) fn check(at: &Attempt<'_>, target: &str) -> Result<Endpoint, Failure> {
    let mut first = String::new();
    for method in [Method::Discover, Method::Initialize] {
        let fetched = post(at, target, method)?;
        match judge(method, &fetched) {
            Verdict::Challenged => return Ok(Endpoint::Challenged(fetched)),
            Verdict::Answered(how) => return Ok(Endpoint::Open(open_note(target, method, &how))),
            Verdict::Stop(failure) => return Err(failure.at(Link::ResourceMetadata, CONTEXT).about(&fetched.url)),
            Verdict::Fallback(what) if method == Method::Discover => first = what,
            Verdict::Fallback(what) => {
                let detail = format!(
                    "{} answered server/discover with {first} and initialize with {what}: MCP clients fall back \
                     from the one to the other and then stop, so none can connect",
                    url::redact(target)
                );
                let failure = Failure::of(FailureClass::HttpStatus, Cause::ResourceChain, detail);
                return Err(failure.at(Link::ResourceMetadata, CONTEXT).about(target));
            }
        }
    }
    unreachable!("initialize never falls back")
}

/// One POST, following a same-origin `307`/`308` as the clients' `fetchWithinOrigin` does for a
/// POST (a `301`/`302`/`303` would turn it into a GET: the clients hand those back unfollowed).
fn post(at: &Attempt<'_>, target: &str, method: Method) -> Result<Fetched, Failure> {
    let (body, headers) = (method.body(), method.headers());
    let headers: Vec<(&str, String)> = headers.iter().map(|(n, v)| (*n, v.clone())).collect();
    let mut current = target.to_string();
    for _ in 0..=MAX_REDIRECTS {
        at.track.enter(Link::ResourceMetadata, CONTEXT, &current);
        let left = at.deadline.saturating_duration_since(Instant::now());
        let fetched = at.client.post(&current, body, left, &headers, &at.track.progress);
        at.refuse_private(Link::ResourceMetadata, CONTEXT)?;
        let fetched = fetched.map_err(|e| at.failure(Link::ResourceMetadata, CONTEXT, &current, e))?;
        // A 429's `Retry-After` too, though the clients then try `initialize`: the attempt asks for it.
        at.note_retry_after(&fetched);
        match same_origin_hop(&current, &fetched) {
            Some(next) => current = next,
            None => return Ok(fetched),
        }
    }
    let e = FetchError::Redirect(redirect::refused(RedirectKind::TooMany(Redirects::SameOrigin), &current));
    Err(at.failure(Link::ResourceMetadata, CONTEXT, &current, e))
}

fn same_origin_hop(current: &str, fetched: &Fetched) -> Option<String> {
    if !matches!(fetched.status, 307 | 308) {
        return None;
    }
    let next = url::resolve(current, fetched.location.as_deref()?).ok()?;
    let next = next.split('#').next().unwrap_or_default().to_string();
    let same = url::split(&next).ok()?.origin() == url::split(current).ok()?.origin();
    same.then_some(next)
}

/// TS 2.4.0's `classifyHttpError` and `classifyResult`, and its transport's `_send`: a `401`, or
/// a `403` with `insufficient_scope`, starts the OAuth flow; another `403` and any 5xx stop the
/// client (`ERA_NEGOTIATION_FAILED`); any other status (a redirect handed back, `400`, `404`,
/// `405`…) and a result that is no modern `DiscoverResult` fall back to `initialize`. A `2xx`
/// that carries no JSON-RPC answer to the request stops it (an unusable reply, or none: a
/// `202` leaves the request unanswered until `REQUEST_TIMEOUT`).
fn judge(method: Method, fetched: &Fetched) -> Verdict {
    let name = method.name();
    let status = fetched.status;
    let insufficient_scope = fetched.www_authenticate.as_deref().is_some_and(|c| c.contains("insufficient_scope"));
    match status {
        401 => return Verdict::Challenged,
        403 if insufficient_scope => return Verdict::Challenged,
        403 => return Verdict::Stop(status_stop(name, fetched, "MCP clients stop at a 403 that asks for no scope")),
        500.. => {
            let mut failure = status_stop(name, fetched, "MCP clients stop (ERA_NEGOTIATION_FAILED)");
            failure.retry_after =
                fetched.retry_after.as_deref().and_then(|v| crate::net::response::retry_after(v, SystemTime::now()));
            return Verdict::Stop(failure);
        }
        200..=299 => {}
        _ => return Verdict::Fallback(format!("HTTP {status}")),
    }
    if fetched.stream {
        return Verdict::Answered("an event stream".into());
    }
    let answer = json_rpc_answer(method, fetched);
    match (method, answer) {
        (_, Err(why)) => {
            let detail = format!(
                "{} answered {name} with HTTP {status} but {why}: MCP clients get no usable reply and stop",
                url::redact(&fetched.url)
            );
            Verdict::Stop(Failure::of(FailureClass::Resource, Cause::ResourceChain, detail))
        }
        (Method::Discover, Ok(Ok(result))) if modern(result) => {
            Verdict::Answered(format!("a server/discover result offering {MODERN_REVISION}"))
        }
        (Method::Discover, Ok(_)) => Verdict::Fallback(format!("HTTP {status} but no modern result")),
        (Method::Initialize, Ok(Ok(result))) if initialized(result) => Verdict::Answered("an initialize result".into()),
        (Method::Initialize, Ok(result)) => {
            let text = |v: Json<'_>| crate::rules::printable_excerpt(v.raw(), 160);
            let what = result
                .map_or_else(|e| format!("the JSON-RPC error {}", text(e)), |r| format!("the result {}", text(r)));
            let what: String = what.chars().take(160).collect();
            let detail = format!("{} answered initialize with {what}: MCP clients stop", url::redact(&fetched.url));
            Verdict::Stop(Failure::of(FailureClass::Resource, Cause::ResourceChain, detail))
        }
    }
}

fn status_stop(name: &str, fetched: &Fetched, then: &str) -> Failure {
    let detail = format!("{} answered {name} with HTTP {}: {then}", url::redact(&fetched.url), fetched.status);
    Failure::of(FailureClass::HttpStatus, Cause::Status(fetched.status), detail)
}

/// The JSON-RPC response to the request, `Ok(result)` or `Err(error)`, or why there is none.
fn json_rpc_answer(method: Method, fetched: &Fetched) -> Result<Result<Json<'_>, Json<'_>>, String> {
    let json = fetched.content_type.as_deref().is_some_and(|t| {
        let t = t.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        t == "application/json" || t.ends_with("+json")
    });
    if !json {
        return Err(format!(
            "Content-Type {}, neither JSON nor an event stream",
            fetched.content_type.as_deref().unwrap_or("absent")
        ));
    }
    let Ok(doc) = crate::rules::open_object(&fetched.body, &["id"]) else {
        return Err("its body is no JSON object".into());
    };
    // An id is a number only as sent: `0` is the one the request sent, `0.0` or `-0` are not.
    let answers = match (method, doc.get("id")) {
        (Method::Discover, Some(id)) => id.as_str().is_some_and(|id| id == "server-discover-probe-1"),
        (Method::Initialize, Some(id)) => id.raw() == b"0",
        _ => false,
    };
    if !answers {
        return Err("its body is no JSON-RPC response to the request (no matching id)".into());
    }
    match (doc.get("result"), doc.get("error")) {
        (Some(result), None) if result.is_object() => Ok(Ok(result)),
        (None, Some(error)) if error.is_object() => Ok(Err(error)),
        _ => Err("its body holds neither a result nor an error object".into()),
    }
}

/// A `DiscoverResult` (`supportedVersions`, `capabilities`) that offers the client's revision.
fn modern(result: Json<'_>) -> bool {
    let versions = result.get("supportedVersions").and_then(Json::items);
    let offers = versions.is_some_and(|mut v| v.any(|v| v.as_str().is_some_and(|v| v == MODERN_REVISION)));
    offers && result.get("capabilities").is_some_and(Json::is_object)
}

/// An `InitializeResult` as the clients' schema requires it.
fn initialized(result: Json<'_>) -> bool {
    let object = |member: &str| result.get(member).is_some_and(Json::is_object);
    result.get("protocolVersion").is_some_and(Json::is_string) && object("capabilities") && object("serverInfo")
}

fn open_note(target: &str, method: Method, how: &str) -> String {
    let fallback = if method == Method::Initialize { " (after server/discover, as MCP clients fall back)" } else { "" };
    format!(
        "the MCP endpoint {} answered {} without a token with {how}{fallback}: it needs no authorization, so an MCP \
         client connects without one",
        url::redact(target),
        method.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn answer(status: u16, content_type: Option<&str>, body: &str) -> Fetched {
        Fetched {
            status,
            content_type: content_type.map(str::to_string),
            body: body.as_bytes().to_vec(),
            url: "https://h/mcp".into(),
            ..Fetched::default()
        }
    }

    fn verdict(method: Method, fetched: &Fetched) -> &'static str {
        match judge(method, fetched) {
            Verdict::Challenged => "challenged",
            Verdict::Stop(_) => "stop",
            Verdict::Fallback(_) => "fallback",
            Verdict::Answered(_) => "answered",
        }
    }

    /// The v2 clients' verdict table, each row.
    #[test]
    fn each_answer_means_what_it_means_to_the_v2_clients() {
        let json = Some("application/json");
        let discovered = r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}"#;
        let legacy = r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","result":{"supportedVersions":["2025-11-25"],"capabilities":{}}}"#;
        let rpc_error = r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","error":{"code":-32601,"message":"no"}}"#;
        let mut scoped = answer(403, None, "");
        scoped.www_authenticate = Some(r#"Bearer error="insufficient_scope", scope="x""#.into());
        let mut stream = answer(200, Some("text/event-stream"), "");
        stream.stream = true;
        for (fetched, expected) in [
            (answer(401, None, ""), "challenged"),
            (scoped, "challenged"),
            (answer(403, None, ""), "stop"),
            (answer(500, None, ""), "stop"),
            (answer(502, None, ""), "stop"),
            (answer(503, None, ""), "stop"),
            (answer(400, json, rpc_error), "fallback"),
            (answer(404, None, ""), "fallback"),
            (answer(405, None, ""), "fallback"),
            (answer(302, None, ""), "fallback"),
            (answer(200, json, discovered), "answered"),
            (answer(200, json, legacy), "fallback"),
            (answer(200, json, rpc_error), "fallback"),
            (stream, "answered"),
            (answer(202, None, ""), "stop"),
            (answer(200, Some("text/html"), "<html>"), "stop"),
            (answer(200, json, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#), "stop"),
        ] {
            assert_eq!(verdict(Method::Discover, &fetched), expected, "{} {:?}", fetched.status, fetched.body);
        }
        let init = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
        assert_eq!(verdict(Method::Initialize, &answer(200, json, init)), "answered");
        let refused = r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"no"}}"#;
        assert_eq!(verdict(Method::Initialize, &answer(200, json, refused)), "stop");
        // The id the request sent is 0: written so, not 0.0, -0 or a number out of range.
        for id in ["0.0", "-0", "1e400", "\"0\""] {
            let other = init.replacen(r#""id":0"#, &format!(r#""id":{id}"#), 1);
            assert_eq!(verdict(Method::Initialize, &answer(200, json, &other)), "stop", "{id}");
        }
        // What a stopping answer held is quoted as sent, its first 160 characters.
        let big = format!(r#"{{"jsonrpc":"2.0","id":0,"result":{{"x":"{}"}}}}"#, "y".repeat(1 << 20));
        let Verdict::Stop(failure) = judge(Method::Initialize, &answer(200, json, &big)) else { panic!("no result") };
        assert!(
            failure.message.contains(r#"with the result {"x":"yyy"#) && failure.message.len() < 400,
            "{}",
            failure.message
        );
    }

    #[test]
    fn a_5xx_keeps_its_retry_after() {
        let mut fetched = answer(500, None, "");
        fetched.retry_after = Some("7".into());
        let Verdict::Stop(failure) = judge(Method::Discover, &fetched) else { panic!("a 500 stops") };
        assert_eq!(failure.retry_after, Some(std::time::Duration::from_secs(7)));
        assert_eq!(failure.class, FailureClass::HttpStatus);
    }

    #[test]
    fn only_a_same_origin_307_or_308_is_followed() {
        let hop = |status: u16, to: &str| {
            let mut f = answer(status, None, "");
            f.location = Some(to.into());
            same_origin_hop("https://h/mcp", &f)
        };
        assert_eq!(hop(307, "/v2/mcp"), Some("https://h/v2/mcp".into()));
        assert_eq!(hop(308, "https://h/x#frag"), Some("https://h/x".into()));
        assert_eq!(hop(302, "/v2/mcp"), None, "a POST turned into a GET is handed back");
        assert_eq!(hop(307, "https://other/mcp"), None);
        assert_eq!(hop(307, "http://h/mcp"), None);
    }

    #[test]
    fn the_probe_is_what_the_typescript_client_sends() {
        let body: Value = serde_json::from_slice(Method::Discover.body()).unwrap();
        assert_eq!(body["method"], "server/discover");
        assert_eq!(body["id"], "server-discover-probe-1");
        assert_eq!(body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"], "wait-for-idp");
        let init: Value = serde_json::from_slice(Method::Initialize.body()).unwrap();
        assert_eq!((&init["method"], &init["id"]), (&Value::from("initialize"), &Value::from(0)));
        assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
        assert_eq!(body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], MODERN_REVISION);
        assert_eq!(body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"], serde_json::json!({}));
        let headers = Method::Discover.headers();
        assert!(headers.contains(&("mcp-method", "server/discover".into())));
        assert!(headers.contains(&("mcp-protocol-version", "2026-07-28".into())));
        assert!(!Method::Initialize.headers().iter().any(|(n, _)| n.starts_with("mcp-")));
    }
}
