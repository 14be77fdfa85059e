//! OAuth 2.0 Protected Resource Metadata (RFC 9728): where an MCP server's metadata lives, when
//! it counts, and how its `401` challenge points at it. Pure, like `discovery`: strings in,
//! verdicts out.

use crate::url;
use serde_json::Value;
use std::fmt;

const SUFFIX: &str = "/.well-known/oauth-protected-resource";

/// Where to look for a resource's metadata before asking the resource itself, in order: the
/// well-known suffix inserted before the resource's path (§3.1), then at the root, as MCP clients
/// fall back when the first answers with a client error.
pub(crate) fn metadata_urls(resource: &str) -> Vec<String> {
    let inserted = url::insert_well_known(resource, SUFFIX);
    let root = url::root_well_known(resource, SUFFIX);
    if inserted == root { vec![inserted] } else { vec![inserted, root] }
}

/// A protected resource's metadata, as far as a client needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourceMetadata {
    pub(crate) resource: String,
    /// Issuer identifiers, each checked to be one.
    pub(crate) authorization_servers: Vec<String>,
}

/// Why a fetched body is not usable protected resource metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ResourceProblem {
    NotUtf8,
    Json(String),
    NoResource,
    /// §3.3: the `resource` must be identical to the URL the metadata was looked up for.
    Mismatch {
        expected: String,
        found: String,
    },
    NoServers,
    BadServer {
        server: String,
        problem: url::Problem,
    },
}

impl fmt::Display for ResourceProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceProblem::NotUtf8 => write!(f, "protected resource metadata is not UTF-8"),
            ResourceProblem::Json(e) => write!(f, "protected resource metadata is not a JSON object: {e}"),
            ResourceProblem::NoResource => write!(f, "protected resource metadata has no \"resource\" string"),
            ResourceProblem::Mismatch { expected, found } => write!(
                f,
                "protected resource metadata says resource {found:?}, expected {expected:?}; RFC 9728 §3.3 requires \
                 them identical, byte for byte{}",
                if same_origin_prefix(expected, found) {
                    " (the MCP TypeScript SDK accepts a resource that is a path prefix on the same origin; RFC 9728 \
                     clients do not: serve the exact URL clients are given)"
                } else {
                    ""
                }
            ),
            ResourceProblem::NoServers => write!(
                f,
                "protected resource metadata lists no authorization_servers, so a client has nowhere to get a token"
            ),
            ResourceProblem::BadServer { server, problem } => {
                write!(f, "authorization server {:?} in the resource metadata {problem}", url::redact(server))
            }
        }
    }
}

fn same_origin_prefix(expected: &str, found: &str) -> bool {
    match (url::split(expected), url::split(found)) {
        (Ok(e), Ok(f)) => e.origin() == f.origin() && e.path.starts_with(f.path.trim_end_matches('/')),
        _ => false,
    }
}

/// Judges a fetched body. Never panics, whatever the bytes.
pub(crate) fn validate(body: &[u8], expected_resource: &str) -> Result<ResourceMetadata, ResourceProblem> {
    let text = std::str::from_utf8(body).map_err(|_| ResourceProblem::NotUtf8)?;
    let value: Value = serde_json::from_str(text).map_err(|e| ResourceProblem::Json(e.to_string()))?;
    let Value::Object(doc) = value else {
        return Err(ResourceProblem::Json("a JSON value that is not an object".into()));
    };
    let Some(Value::String(resource)) = doc.get("resource") else {
        return Err(ResourceProblem::NoResource);
    };
    if resource != expected_resource {
        return Err(ResourceProblem::Mismatch { expected: expected_resource.to_string(), found: resource.clone() });
    }
    let servers: Vec<String> = match doc.get("authorization_servers") {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    };
    if servers.is_empty() {
        return Err(ResourceProblem::NoServers);
    }
    for server in &servers {
        url::check_issuer(server).map_err(|problem| ResourceProblem::BadServer { server: server.clone(), problem })?;
    }
    Ok(ResourceMetadata { resource: resource.clone(), authorization_servers: servers })
}

/// The `resource_metadata` parameter of a `Bearer` challenge in a `WWW-Authenticate` header
/// (RFC 9728 §5.1), if there is one. The header may hold several challenges; parameters are
/// tokens or quoted strings (RFC 9110 §11.2).
pub(crate) fn challenge_metadata_url(header: &str) -> Option<String> {
    let mut rest = header;
    let mut in_bearer = false;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return None;
        }
        let word_end = rest.find([' ', '\t', ',', '=']).unwrap_or(rest.len());
        if word_end == 0 {
            // A stray '=' (the padding of a token68): skip it.
            rest = &rest[1..];
            continue;
        }
        let word = &rest[..word_end];
        let after = rest[word_end..].trim_start_matches([' ', '\t']);
        if let Some(value_start) = after.strip_prefix('=').filter(|v| !v.starts_with('=')) {
            // name=value: a parameter of the current challenge.
            let (value, remaining) = parameter_value(value_start.trim_start_matches([' ', '\t']));
            if in_bearer && word.eq_ignore_ascii_case("resource_metadata") {
                return Some(value);
            }
            rest = remaining;
        } else {
            // A scheme starts a new challenge (a token68 after it is skipped as a word).
            in_bearer = word.eq_ignore_ascii_case("bearer");
            rest = &rest[word_end..];
        }
    }
}

/// A token or a quoted string, and what follows it.
fn parameter_value(text: &str) -> (String, &str) {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                _ => value.push(c),
            }
        }
        return (value, "");
    }
    let end = text.find([',', ' ', '\t']).unwrap_or(text.len());
    (text[..end].to_string(), &text[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lives_inserted_then_at_the_root() {
        assert_eq!(
            metadata_urls("https://h/tenant/mcp"),
            [
                "https://h/.well-known/oauth-protected-resource/tenant/mcp",
                "https://h/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(metadata_urls("https://h"), ["https://h/.well-known/oauth-protected-resource"]);
        assert_eq!(metadata_urls("https://h/"), ["https://h/.well-known/oauth-protected-resource"]);
    }

    #[test]
    fn the_resource_must_be_identical_and_name_servers() {
        let ok = br#"{"resource":"https://h/mcp","authorization_servers":["https://as.example"]}"#;
        assert_eq!(validate(ok, "https://h/mcp").unwrap().authorization_servers, ["https://as.example"]);
        let e = validate(ok, "https://h/mcp/").unwrap_err();
        assert!(matches!(e, ResourceProblem::Mismatch { .. }), "{e}");
        let prefix = br#"{"resource":"https://h/","authorization_servers":["https://as.example"]}"#;
        assert!(validate(prefix, "https://h/tenant/mcp").unwrap_err().to_string().contains("TypeScript SDK"));
        assert_eq!(validate(br#"{"resource":"https://h"}"#, "https://h"), Err(ResourceProblem::NoServers));
        assert_eq!(
            validate(br#"{"resource":"https://h","authorization_servers":[]}"#, "https://h"),
            Err(ResourceProblem::NoServers)
        );
        assert!(matches!(
            validate(br#"{"resource":"https://h","authorization_servers":["https://as/?q"]}"#, "https://h"),
            Err(ResourceProblem::BadServer { .. })
        ));
        assert_eq!(validate(b"{}", "https://h"), Err(ResourceProblem::NoResource));
        assert!(matches!(validate(b"[]", "https://h"), Err(ResourceProblem::Json(_))));
        assert_eq!(validate(b"\xff", "https://h"), Err(ResourceProblem::NotUtf8));
    }

    #[test]
    fn challenges_are_parsed_as_rfc_9110_writes_them() {
        let url = Some("https://h/.well-known/oauth-protected-resource/mcp".to_string());
        for header in [
            r#"Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
            r#"Bearer error="invalid_token", error_description="No token, \"really\"", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
            r#"DPoP algs="ES256", Bearer realm="x",resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
            "bearer resource_metadata=https://h/.well-known/oauth-protected-resource/mcp",
        ] {
            assert_eq!(challenge_metadata_url(header), url, "{header}");
        }
        for header in [
            "",
            "Basic realm=\"x\"",
            r#"DPoP resource_metadata="https://elsewhere""#,
            "Bearer",
            "Bearer realm=\"unterminated",
            "Bearer abc==, resource_metadata",
        ] {
            assert_eq!(challenge_metadata_url(header), None, "{header}");
        }
    }
}
