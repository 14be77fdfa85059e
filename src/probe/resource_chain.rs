//! A protected resource, end to end as an MCP client discovers it (RFC 9728 and the MCP
//! authorization specification): its metadata, that the metadata names it exactly and lists
//! authorization servers, and that every one of them is ready by `auto` discovery.
//!
//! The order is the clients': the resource itself first, as a client meets it; the metadata URL
//! its `401` challenge names (the MCP specification: clients MUST use it), then the well-known
//! path form, then the root. Without any metadata the server's origin is its authorization server
//! (the 2025-03-26 behaviour both SDKs keep), unless `--refuse-legacy-auth`.

use super::attempt::{Answer, Attempt};
use super::classify::{moves_on, usable_body};
use super::failure::{Cause, Failure, FailureClass, Link};
use super::issuer;
use super::mcp_endpoint::{self, Endpoint};
use super::ready::Ready;
use crate::net::response::Fetched;
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

/// The MCP endpoint itself ([`mcp_endpoint::check`]), then the URL its challenge names, the
/// path form and the root, passing over an unfollowed redirect or a client error, and a 502 but
/// at the root (typescript-sdk PR #1632), as MCP clients do; any other answer ends the search.
/// An endpoint that answers without a token is open unless it publishes metadata: then the
/// chain behind it must serve too.
fn find_metadata(at: &Attempt<'_>, target: &str) -> Result<Found, Failure> {
    let mut declined = Vec::new();
    let mut candidates = Vec::new();
    let mut warnings = Vec::new();
    let open = match mcp_endpoint::check(at, target)? {
        Endpoint::Open(note) => Some(note),
        Endpoint::Challenged(fetched) => {
            match challenged(at, &fetched)? {
                Some((named, plain)) => {
                    warnings.extend(plain);
                    candidates.push(named);
                }
                None => declined.push(format!(
                    "the MCP endpoint answered HTTP {} without a `WWW-Authenticate: Bearer resource_metadata=...` \
                     challenge",
                    fetched.status
                )),
            }
            None
        }
    };
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
                let (url, mut metadata) = judge(at, &fetched, candidate, target)?;
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
    Ok(open.map_or(Found::Nothing(declined), Found::Open))
}

/// The metadata URL a challenge (a `401`, or a `403` with `insufficient_scope`) names, checked as
/// a link of the chain, with the warning a plain-http one earns when the user's URL is http.
fn challenged(at: &Attempt<'_>, fetched: &Fetched) -> Result<Option<(String, Option<String>)>, Failure> {
    let named = fetched.www_authenticate.as_deref();
    let Some(named) = named.and_then(protected_resource::challenge_metadata_url) else { return Ok(None) };
    let fail = |message: String| {
        Failure::of(FailureClass::Resource, Cause::ResourceChain, message).at(Link::ResourceMetadata, "").about(&named)
    };
    if let Err(problem) = url::split(&named) {
        let name = url::redact(&named);
        return Err(fail(format!("the resource's challenge names resource_metadata {name:?}, which {problem}")));
    }
    // The challenge is the one place the resource names a URL of another scheme (§5.1).
    let what = "the resource metadata URL named by the resource's challenge";
    let plain = at.transport.judge(what, &named).map_err(|why| fail(format!("protected resource metadata: {why}")))?;
    Ok(Some((named, plain.map(|w| format!("protected resource metadata: {w}")))))
}

/// No protected resource metadata: the MCP TypeScript SDK 1.32.2's `discoverOAuthServerInfo`
/// catches the failure and falls back to "the legacy MCP spec behavior: MCP server base URL acts
/// as the authorization server" (`new URL('/', serverUrl)`), discovered by
/// `discoverAuthorizationServerMetadata`; the Python SDK does the same. So does the gate, with a
/// warning, unless `--refuse-legacy-auth`. The issuer is the origin as both SDKs take it: TS
/// 2.4.0 expects `https://h:p/` and accepts it without its `/`; Python renders both forms as
/// `https://h:p/` (`_origin_issuer`). The well-known URLs are the same for both forms, so the
/// second is asked for only when the document names it.
fn legacy(at: &Attempt<'_>, target: &str, declined: &[String]) -> Result<Ready, Failure> {
    let none = format!("no protected resource metadata: {}", declined.join(", "));
    if at.checks.refuse_legacy_auth {
        let detail = format!(
            "{none}; MCP clients would fall back to the 2025-03-26 behaviour (the server's origin as its \
             authorization server), which --refuse-legacy-auth refuses"
        );
        let failure = Failure::of(FailureClass::Resource, Cause::ResourceChain, detail);
        return Err(failure.at(Link::ResourceMetadata, "").about(target));
    }
    let origin = url::root_well_known(target, "");
    let context = format!("legacy authorization server {origin} (no protected resource metadata): ");
    let slash = format!("{origin}/");
    let mut server = match issuer::discover(at, &origin, MetadataKind::Auto, None, &context) {
        Err(f) if matches!(&f.cause, Cause::Document { found: Some(found), .. } if *found == slash) => {
            issuer::discover(at, &slash, MetadataKind::Auto, None, &context)?
        }
        outcome => outcome?,
    };
    server.document.warnings.insert(
        0,
        format!(
            "{none}; using the 2025-03-26 legacy path, as MCP clients do: the server's origin {origin} is its \
             authorization server (--refuse-legacy-auth refuses this)"
        ),
    );
    Ok(Ready { resource_metadata: None, servers: vec![server], warnings: Vec::new(), addresses: Vec::new() })
}

/// Judges the metadata fetched from `candidate` for `target`.
fn judge(
    at: &Attempt<'_>,
    fetched: &Fetched,
    candidate: &str,
    target: &str,
) -> Result<(String, ResourceMetadata), Failure> {
    let body = usable_body(fetched).map_err(|f| f.at(Link::ResourceMetadata, CONTEXT))?;
    let accepted = protected_resource::accepted_resources(target, candidate);
    let metadata = protected_resource::validate(body, &accepted, at.transport).map_err(|problem| {
        // The problem names the metadata itself; no prefix needed.
        let message = format!("{problem} (from {})", url::redact(&fetched.url));
        Failure::of(FailureClass::Resource, Cause::ResourceChain, message)
            .at(Link::ResourceMetadata, "")
            .about(&fetched.url)
    })?;
    Ok((fetched.url.clone(), metadata))
}
