//! A protected resource, end to end as an MCP client discovers it (RFC 9728 and the MCP
//! authorization specification): its metadata, that the metadata names it exactly and lists
//! authorization servers, and that every one of them is ready by `auto` discovery.

use super::{Attempt, Failure, FailureClass, Link, Ready, issuer, usable_body};
use crate::config::MetadataKind;
use crate::http::Fetched;
use crate::resource::{self, ResourceMetadata};
use crate::url;

const CONTEXT: &str = "protected resource metadata: ";

pub(super) fn discover(at: &Attempt<'_>, target: &str) -> Result<Ready, Failure> {
    let (metadata_url, mut metadata) = find_metadata(at, target)?;
    let mut servers = Vec::with_capacity(metadata.authorization_servers.len());
    for server in &metadata.authorization_servers {
        let context = format!("authorization server {}: ", url::redact(server));
        servers.push(issuer::discover(at, server, MetadataKind::Auto, None, &context)?);
    }
    let warnings = std::mem::take(&mut metadata.warnings);
    Ok(Ready { resource_metadata: Some(metadata_url), servers, warnings, addresses: Vec::new() })
}

/// The well-known locations in order, moving on after a client error; then, when neither has
/// it, the resource itself, whose `401` challenge may name the metadata (§5.1).
fn find_metadata(at: &Attempt<'_>, target: &str) -> Result<(String, ResourceMetadata), Failure> {
    let mut declined = Vec::new();
    for candidate in resource::metadata_urls(target) {
        let fetched = at.fetch(Link::ResourceMetadata, CONTEXT, &candidate)?;
        if (300..500).contains(&fetched.status) {
            declined.push(format!("{} answered HTTP {}", url::redact(&candidate), fetched.status));
            continue;
        }
        return judge(at, &fetched, target);
    }
    let challenge = at.fetch(Link::ResourceMetadata, CONTEXT, target)?;
    let named = challenge
        .www_authenticate
        .as_deref()
        .filter(|_| challenge.status == 401)
        .and_then(resource::challenge_metadata_url);
    let Some(named) = named else {
        return Err(Failure::new(
            FailureClass::Resource,
            format!(
                "no protected resource metadata: {}, and the resource itself answered HTTP {} without a \
                 `WWW-Authenticate: Bearer resource_metadata=...` challenge",
                declined.join(", "),
                challenge.status
            ),
        )
        .at(Link::ResourceMetadata, ""));
    };
    if let Err(problem) = url::split(&named) {
        let detail =
            format!("the resource's challenge names resource_metadata {:?}, which {problem}", url::redact(&named));
        return Err(Failure::new(FailureClass::Resource, detail).at(Link::ResourceMetadata, ""));
    }
    // The challenge is the one place the resource names a URL of another scheme (§5.1).
    let what = "the resource metadata URL named by the resource's challenge";
    let plain = at.transport.judge(what, &named).map_err(|why| {
        Failure::new(FailureClass::Resource, format!("protected resource metadata: {why}"))
            .at(Link::ResourceMetadata, "")
    })?;
    let (url, mut metadata) = judge(at, &at.fetch(Link::ResourceMetadata, CONTEXT, &named)?, target)?;
    metadata.warnings.splice(0..0, plain.map(|w| format!("protected resource metadata: {w}")));
    Ok((url, metadata))
}

fn judge(at: &Attempt<'_>, fetched: &Fetched, target: &str) -> Result<(String, ResourceMetadata), Failure> {
    let body = usable_body(fetched).map_err(|f| f.at(Link::ResourceMetadata, CONTEXT))?;
    let metadata = resource::validate(body, target, at.transport).map_err(|problem| {
        // The problem names the metadata itself; no prefix needed.
        Failure::new(FailureClass::Resource, format!("{problem} (from {})", url::redact(&fetched.url)))
            .at(Link::ResourceMetadata, "")
    })?;
    Ok((fetched.url.clone(), metadata))
}
