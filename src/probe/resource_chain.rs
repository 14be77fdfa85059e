//! A protected resource, end to end as an MCP client discovers it (RFC 9728 and the MCP
//! authorization specification): its metadata, that the metadata names it exactly and lists
//! authorization servers, and that every one of them is ready by `auto` discovery.
//!
//! The order is the clients': the resource itself first, as a client meets it; the metadata URL
//! its `401` challenge names (the MCP specification: clients MUST use it), then the well-known
//! path form, then the root. Without any metadata the server's origin is its authorization server
//! (the 2025-03-26 behaviour both SDKs keep), unless `--refuse-legacy-auth`.

use super::{Answer, Attempt, Failure, FailureClass, Link, Ready, issuer, moves_on, usable_body};
use crate::net::http::Fetched;
use crate::rules::authorization_server::MetadataKind;
use crate::rules::protected_resource::{self, ResourceMetadata};
use crate::url;

const CONTEXT: &str = "protected resource metadata: ";

pub(super) fn discover(at: &Attempt<'_>, target: &str) -> Result<Ready, Failure> {
    let (metadata_url, mut metadata) = match find_metadata(at, target)? {
        Found::Metadata(url, metadata) => (url, metadata),
        Found::Open(note) => {
            return Ok(Ready {
                resource_metadata: None,
                servers: Vec::new(),
                warnings: vec![note],
                addresses: Vec::new(),
            });
        }
        Found::Nothing(declined) => return legacy(at, target, &declined),
    };
    let mut servers = Vec::with_capacity(metadata.authorization_servers.len());
    for server in &metadata.authorization_servers {
        let context = format!("authorization server {}: ", url::redact(server));
        servers.push(issuer::discover(at, server, MetadataKind::Auto, None, &context)?);
    }
    let warnings = std::mem::take(&mut metadata.warnings);
    Ok(Ready { resource_metadata: Some(metadata_url), servers, warnings, addresses: Vec::new() })
}

enum Found {
    Metadata(String, ResourceMetadata),
    /// The resource answered without asking for a token: a client connects. The note says so.
    Open(String),
    /// No metadata anywhere: what each URL answered.
    Nothing(Vec<String>),
}

/// The resource itself, then the URL its challenge names, the path form and the root, passing
/// over an unfollowed redirect or a client error, and a 502 but at the root (typescript-sdk PR
/// #1632), as MCP clients do; any other answer ends the search.
fn find_metadata(at: &Attempt<'_>, target: &str) -> Result<Found, Failure> {
    let mut declined = Vec::new();
    let mut candidates = Vec::new();
    let mut warnings = Vec::new();
    match at.fetch_candidate(Link::ResourceMetadata, CONTEXT, target)? {
        Answer::Skipped(why) => declined.push(format!("the resource {} ({why})", url::redact(target))),
        Answer::Got(fetched) if open(&fetched) => return Ok(Found::Open(open_note(&fetched))),
        Answer::Got(fetched) => match challenged(at, &fetched)? {
            Some((named, plain)) => {
                warnings.extend(plain);
                candidates.push(named);
            }
            None => declined.push(format!(
                "the resource itself answered HTTP {} without a `WWW-Authenticate: Bearer resource_metadata=...` \
                 challenge",
                fetched.status
            )),
        },
    }
    for well_known in protected_resource::metadata_urls(target) {
        if !candidates.contains(&well_known) {
            candidates.push(well_known);
        }
    }
    let mut passed_over = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let last = i + 1 == candidates.len();
        let skipped = match at.fetch_candidate(Link::ResourceMetadata, CONTEXT, candidate)? {
            Answer::Got(fetched) if fetched.status == 200 || !moves_on(fetched.status, last) => {
                let (url, mut metadata) = judge(at, &fetched, target)?;
                warnings.extend(passed_over.iter().map(|p| format!("protected resource metadata: passed over {p}")));
                metadata.warnings.splice(0..0, warnings);
                return Ok(Found::Metadata(url, metadata));
            }
            Answer::Got(fetched) if fetched.status < 500 => {
                declined.push(format!("{} answered HTTP {}", url::redact(candidate), fetched.status));
                continue;
            }
            Answer::Got(fetched) => format!("{} (HTTP {})", url::redact(candidate), fetched.status),
            Answer::Skipped(why) => format!("{} ({why})", url::redact(candidate)),
        };
        declined.push(skipped.clone());
        passed_over.push(skipped);
    }
    Ok(Found::Nothing(declined))
}

/// The metadata URL a `401` challenge names, checked as a link of the chain, with the warning a
/// plain-http one earns when the user's URL is http.
fn challenged(at: &Attempt<'_>, fetched: &Fetched) -> Result<Option<(String, Option<String>)>, Failure> {
    let named = fetched.www_authenticate.as_deref().filter(|_| fetched.status == 401);
    let Some(named) = named.and_then(protected_resource::challenge_metadata_url) else { return Ok(None) };
    let fail = |detail: String| Failure::new(FailureClass::Resource, detail).at(Link::ResourceMetadata, "");
    if let Err(problem) = url::split(&named) {
        let name = url::redact(&named);
        return Err(fail(format!("the resource's challenge names resource_metadata {name:?}, which {problem}")));
    }
    // The challenge is the one place the resource names a URL of another scheme (§5.1).
    let what = "the resource metadata URL named by the resource's challenge";
    let plain = at.transport.judge(what, &named).map_err(|why| fail(format!("protected resource metadata: {why}")))?;
    Ok(Some((named, plain.map(|w| format!("protected resource metadata: {w}")))))
}

/// Whether the resource answered as an MCP server that needs no token does: `200` with its SSE
/// stream or a JSON body. A `200` of anything else (an ingress's default page) is no MCP server,
/// so it only means no challenge: the search goes on, and a false pass is avoided.
fn open(fetched: &Fetched) -> bool {
    let json = fetched.content_type.as_deref().is_some_and(|t| {
        let t = t.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        t == "application/json" || t.ends_with("+json")
    });
    fetched.status == 200 && (fetched.stream || json)
}

/// What to say of a resource that answers a client with no token: it needs no authorization, and
/// a client connects (an MCP server's SSE stream counts: its body is never read to the end).
fn open_note(fetched: &Fetched) -> String {
    let what = if fetched.stream { "an event stream" } else { "HTTP 200" };
    format!(
        "the resource {} answered a request without a token with {what}: it needs no authorization, so an MCP \
         client connects without one (no protected resource metadata or authorization server was checked)",
        url::redact(&fetched.url)
    )
}

/// No protected resource metadata: the MCP TypeScript SDK 1.32.2's `discoverOAuthServerInfo`
/// catches the failure and falls back to "the legacy MCP spec behavior: MCP server base URL acts
/// as the authorization server" (`new URL('/', serverUrl)`), discovered by
/// `discoverAuthorizationServerMetadata`; the Python SDK does the same. So does the gate, with a
/// warning, unless `--refuse-legacy-auth`.
fn legacy(at: &Attempt<'_>, target: &str, declined: &[String]) -> Result<Ready, Failure> {
    let none = format!("no protected resource metadata: {}", declined.join(", "));
    if at.checks.refuse_legacy_auth {
        let detail = format!(
            "{none}; MCP clients would fall back to the 2025-03-26 behaviour (the server's origin as its \
             authorization server), which --refuse-legacy-auth refuses"
        );
        return Err(Failure::new(FailureClass::Resource, detail).at(Link::ResourceMetadata, ""));
    }
    let origin = url::split(target).map(|p| p.origin()).unwrap_or_default();
    let context = format!("legacy authorization server {origin} (no protected resource metadata): ");
    let mut server = issuer::discover(at, &origin, MetadataKind::Auto, None, &context)?;
    server.document.warnings.insert(
        0,
        format!(
            "{none}; using the 2025-03-26 legacy path, as MCP clients do: the server's origin {origin} is its \
             authorization server (--refuse-legacy-auth refuses this)"
        ),
    );
    Ok(Ready { resource_metadata: None, servers: vec![server], warnings: Vec::new(), addresses: Vec::new() })
}

fn judge(at: &Attempt<'_>, fetched: &Fetched, target: &str) -> Result<(String, ResourceMetadata), Failure> {
    let body = usable_body(fetched).map_err(|f| f.at(Link::ResourceMetadata, CONTEXT))?;
    let metadata = protected_resource::validate(body, target, at.transport).map_err(|problem| {
        // The problem names the metadata itself; no prefix needed.
        Failure::new(FailureClass::Resource, format!("{problem} (from {})", url::redact(&fetched.url)))
            .at(Link::ResourceMetadata, "")
    })?;
    Ok((fetched.url.clone(), metadata))
}
