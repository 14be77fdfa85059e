//! OAuth 2.0 Protected Resource Metadata (RFC 9728): where an MCP server's metadata lives, when
//! it counts, and how its `401` challenge points at it. Pure, like `discovery`: strings in,
//! verdicts out.

use super::{BodyProblem, Json, KEPT, kept, open_object};
use crate::url;
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

/// The `resource` values that name `target` in metadata served at `metadata_url`; the first is
/// the one a mismatch names. RFC 9728 §3.3: the value is the identifier the well-known URL was
/// built from, so metadata at the root (`/.well-known/oauth-protected-resource`, no path) names
/// the origin, with or without its `/`; both MCP SDKs take the origin there too
/// (`checkResourceAllowed`, Python `check_resource_allowed`: a path prefix on the same origin),
/// and the resource's own URL stays accepted.
pub(crate) fn accepted_resources(target: &str, metadata_url: &str) -> Vec<String> {
    let root = url::root_well_known(target, SUFFIX);
    if metadata_url != root || !url::has_path(target) {
        return vec![target.to_string()];
    }
    let origin = url::root_well_known(target, "");
    vec![origin.clone(), format!("{origin}/"), target.to_string()]
}

/// A protected resource's metadata, as far as a client needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourceMetadata {
    pub(crate) resource: String,
    /// Issuer identifiers, each checked to be one.
    pub(crate) authorization_servers: Vec<String>,
    /// Plain-http servers accepted because the user's own URL is http ([`url::Transport`]).
    pub(crate) warnings: Vec<String>,
}

/// Why a fetched body is not usable protected resource metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ResourceProblem {
    Body(BodyProblem),
    NoResource,
    /// §3.3: the `resource` must be identical to the URL the metadata was looked up for.
    Mismatch {
        expected: String,
        found: String,
    },
    NoServers,
    /// `authorization_servers` is not an array: its JSON type.
    ServersNotArray(&'static str),
    /// Entry number `index` (from 1) of `authorization_servers` is not a string: its JSON type.
    ServerNotString {
        index: usize,
        json_type: &'static str,
    },
    /// A plain-http server in a chain given as https: why.
    PlainServer(String),
    BadServer {
        server: String,
        problem: url::Problem,
    },
}

impl fmt::Display for ResourceProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceProblem::Body(problem) => write!(f, "protected resource metadata: {problem}"),
            ResourceProblem::NoResource => write!(f, "protected resource metadata has no \"resource\" string"),
            ResourceProblem::Mismatch { expected, found } => write!(
                f,
                "protected resource metadata says resource {}, expected {expected:?}; RFC 9728 §3.3 requires \
                 them identical, byte for byte{}",
                super::shown(found, KEPT),
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
            ResourceProblem::ServersNotArray(json_type) => write!(
                f,
                "protected resource metadata's authorization_servers is {json_type}, not an array of issuer URLs; the \
                 MCP SDKs' schemas (TypeScript OAuthProtectedResourceMetadataSchema, Python ProtectedResourceMetadata) \
                 reject the whole document"
            ),
            ResourceProblem::ServerNotString { index, json_type } => write!(
                f,
                "entry #{index} of the protected resource metadata's authorization_servers is {json_type}, not a \
                 string; the MCP SDKs' schemas (TypeScript OAuthProtectedResourceMetadataSchema, Python \
                 ProtectedResourceMetadata) reject the whole document, so a client uses none of its servers"
            ),
            ResourceProblem::PlainServer(why) => write!(f, "protected resource metadata: {why}"),
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

/// Judges a fetched body; `transport` says whether a plain-http server may be listed. Never
/// panics, whatever the bytes.
///
/// `authorization_servers` must be an array of strings: the MCP TypeScript SDK 1.32.2 parses the
/// metadata with `OAuthProtectedResourceMetadataSchema` (`authorization_servers:
/// z.array(SafeUrlSchema).optional()`), whose failure makes `discoverOAuthServerInfo` drop the
/// whole document (it falls back to the MCP server's own origin, never to the servers listed),
/// and the Python SDK's `ProtectedResourceMetadata` (`list[AnyHttpUrl]`) refuses it too.
///
/// `accepted` are the `resource` values that name the resource ([`accepted_resources`]). Clients
/// use the first authorization server listed (TypeScript `discoverOAuthServerInfo`:
/// `authorization_servers[0]`; Python `_select_authorization_server`), so only it must be a
/// usable issuer; what is wrong with another is a warning.
pub(crate) fn validate(
    body: &[u8],
    accepted: &[String],
    transport: url::Transport,
) -> Result<ResourceMetadata, ResourceProblem> {
    let doc = open_object(body, &["resource", "authorization_servers"]).map_err(ResourceProblem::Body)?;
    let Some(resource) = doc.get("resource").and_then(Json::as_str) else {
        return Err(ResourceProblem::NoResource);
    };
    if !accepted.iter().any(|a| *a == resource) {
        let expected = accepted.first().cloned().unwrap_or_default();
        return Err(ResourceProblem::Mismatch { expected, found: kept(resource, KEPT) });
    }
    let servers = server_strings(doc.get("authorization_servers"))?;
    let Some(first) = servers.clone().next() else { return Err(ResourceProblem::NoServers) };
    let first = kept(first, KEPT);
    url::check_issuer(&first).map_err(|problem| ResourceProblem::BadServer { server: first.clone(), problem })?;
    let listed = transport.judge("authorization server", &first).map_err(ResourceProblem::PlainServer)?;
    let mut warnings: Vec<String> = listed.into_iter().map(|w| format!("protected resource metadata: {w}")).collect();
    let count = servers.clone().count();
    if count > 1 {
        // The others as a message can show them: a list can hold a million.
        let mut others = String::new();
        for (i, server) in servers.skip(1).enumerate() {
            if others.len() > OTHERS_SHOWN {
                break;
            }
            others.push_str(if i == 0 { "" } else { ", " });
            others.push_str(&url::redact(super::cut(&server, OTHERS_SHOWN)));
        }
        warnings.push(format!(
            "protected resource metadata lists {count} authorization servers; MCP clients use the first, {}, so the \
             gate waited for it only (not checked: {})",
            url::redact(&first),
            crate::screen_text::quoted(&others, OTHERS_SHOWN)
        ));
    }
    Ok(ResourceMetadata { resource: resource.into_owned(), authorization_servers: vec![first], warnings })
}

/// How much of the servers not checked a warning names.
const OTHERS_SHOWN: usize = 1024;

/// `authorization_servers` as strings, decoded as they are read; absent or null is none, anything
/// but an array of strings spoils the document.
fn server_strings(
    value: Option<Json<'_>>,
) -> Result<impl Iterator<Item = std::borrow::Cow<'_, str>> + Clone, ResourceProblem> {
    let items = match value {
        Some(value) if !value.is_null() => value.items().ok_or(ResourceProblem::ServersNotArray(value.type_name()))?,
        _ => return Ok(None.into_iter().flatten().filter_map(Json::as_str)),
    };
    if let Some((i, item)) = items.clone().enumerate().find(|(_, item)| !item.is_string()) {
        return Err(ResourceProblem::ServerNotString { index: i + 1, json_type: item.type_name() });
    }
    Ok(Some(items).into_iter().flatten().filter_map(Json::as_str))
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
        let validate = |body: &[u8], expected: &str| validate(body, &[expected.to_string()], url::Transport::TlsOnly);
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
        assert!(matches!(validate(b"[]", "https://h"), Err(ResourceProblem::Body(BodyProblem::NotAnObject(_)))));
        assert_eq!(validate(b"\xff", "https://h"), Err(ResourceProblem::Body(BodyProblem::NotUtf8 { valid_up_to: 0 })));
    }

    /// Both MCP SDKs reject the whole document for one entry that is not a string; the gate
    /// names the entry rather than dropping it and passing on the rest.
    #[test]
    fn a_server_that_is_not_a_string_spoils_the_document() {
        let tls = url::Transport::TlsOnly;
        let body = br#"{"resource":"https://h","authorization_servers":["https://as.example",{"issuer":"x"}]}"#;
        let e = validate(body, &["https://h".to_string()], tls).unwrap_err();
        assert_eq!(e, ResourceProblem::ServerNotString { index: 2, json_type: "an object" });
        assert!(
            e.to_string()
                .starts_with("entry #2 of the protected resource metadata's authorization_servers is an object")
        );
        let body = br#"{"resource":"https://h","authorization_servers":[7,"https://as.example"]}"#;
        assert_eq!(
            validate(body, &["https://h".to_string()], tls),
            Err(ResourceProblem::ServerNotString { index: 1, json_type: "a number" })
        );
        let body = br#"{"resource":"https://h","authorization_servers":"https://as.example"}"#;
        assert_eq!(validate(body, &["https://h".to_string()], tls), Err(ResourceProblem::ServersNotArray("a string")));
        let body = br#"{"resource":"https://h","authorization_servers":null}"#;
        assert_eq!(validate(body, &["https://h".to_string()], tls), Err(ResourceProblem::NoServers));
    }

    #[test]
    fn a_plain_server_fails_a_chain_given_as_https_and_is_a_warning_otherwise() {
        let body = br#"{"resource":"https://h","authorization_servers":["http://as.plain","https://as.example"]}"#;
        let e = validate(body, &["https://h".to_string()], url::Transport::TlsOnly).unwrap_err();
        assert!(
            matches!(&e, ResourceProblem::PlainServer(m) if m.starts_with("authorization server http://as.plain uses plain http inside a chain given as https")),
            "{e}"
        );
        let body = br#"{"resource":"http://h","authorization_servers":["http://as.plain"]}"#;
        let ok = validate(body, &["http://h".to_string()], url::Transport::PlainAllowed).unwrap();
        assert_eq!(ok.authorization_servers, ["http://as.plain"]);
        assert!(
            ok.warnings.len() == 1 && ok.warnings[0].contains("http://as.plain uses plain http"),
            "{:?}",
            ok.warnings
        );
    }

    /// RFC 9728 §3.3: metadata at the root names the origin, as both MCP SDKs accept it; the
    /// path form and a challenge's URL name the resource exactly.
    #[test]
    fn root_form_metadata_names_the_origin() {
        let target = "https://h:8443/tenant/mcp";
        let root = "https://h:8443/.well-known/oauth-protected-resource";
        assert_eq!(accepted_resources(target, root), ["https://h:8443", "https://h:8443/", target]);
        let path_form = "https://h:8443/.well-known/oauth-protected-resource/tenant/mcp";
        assert_eq!(accepted_resources(target, path_form), [target]);
        assert_eq!(accepted_resources(target, "https://h:8443/meta/prm.json"), [target]);
        assert_eq!(accepted_resources("https://h", "https://h/.well-known/oauth-protected-resource"), ["https://h"]);
        let accepted = accepted_resources(target, root);
        for resource in ["https://h:8443", "https://h:8443/", target] {
            let body = format!(r#"{{"resource":"{resource}","authorization_servers":["https://as.example"]}}"#);
            assert!(validate(body.as_bytes(), &accepted, url::Transport::TlsOnly).is_ok(), "{resource}");
        }
        let body = br#"{"resource":"https://h:8443/tenant","authorization_servers":["https://as.example"]}"#;
        let e = validate(body, &accepted, url::Transport::TlsOnly).unwrap_err();
        assert!(matches!(&e, ResourceProblem::Mismatch { expected, .. } if expected == "https://h:8443"), "{e}");
    }

    /// Clients use the first authorization server: only it must be usable; the others earn a
    /// warning, whatever is wrong with them, and are never waited for.
    #[test]
    fn the_first_server_is_required_and_the_others_are_a_warning() {
        let tls = url::Transport::TlsOnly;
        let h = ["https://h".to_string()];
        let body = br#"{"resource":"https://h","authorization_servers":["https://as.example","http://as.plain","https://x/?q"]}"#;
        let ok = validate(body, &h, tls).unwrap();
        assert_eq!(ok.authorization_servers, ["https://as.example"]);
        assert!(ok.warnings.len() == 1 && ok.warnings[0].contains("MCP clients use the first, https://as.example"));
        assert!(ok.warnings[0].contains("not checked: http://as.plain, https://x/?q"), "{:?}", ok.warnings);
        let body = br#"{"resource":"https://h","authorization_servers":["https://x/?q","https://as.example"]}"#;
        assert!(matches!(validate(body, &h, tls), Err(ResourceProblem::BadServer { .. })));
    }

    #[test]
    fn challenges_are_parsed_as_rfc_9110_writes_them() {
        let url = Some("https://h/.well-known/oauth-protected-resource/mcp".to_string());
        for header in [
            r#"Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
            r#"Bearer error="invalid_token", error_description="No token, \"really\"", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
            r#"DPoP algs="ES256", Bearer realm="x",resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
            "bearer resource_metadata=https://h/.well-known/oauth-protected-resource/mcp",
            // Several challenges in one field, and two field lines as the client joins them (RFC
            // 9110 §5.3); a quoted string with obs-text, a non-ASCII realm (§5.6.4, §11.6.1).
            r#"Basic realm="x", Bearer realm="y", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
            r#"Basic realm="x", Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
            r#"Bearer realm="Zürich, \"Ost\"", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
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

    /// The servers not checked are named as the document lists them (an empty one too), the
    /// first kilobyte of them when it lists a hundred thousand.
    #[test]
    fn the_servers_not_checked_are_named_in_part() {
        let tls = url::Transport::TlsOnly;
        let body = br#"{"resource":"https://h","authorization_servers":["https://as.example","","https://b"]}"#;
        let warning = &validate(body, &["https://h".to_string()], tls).unwrap().warnings[0];
        assert!(warning.ends_with("(not checked: , https://b)"), "{warning}");
        let many = format!(
            r#"{{"resource":"https://h","authorization_servers":["https://as.example",{}"https://b"]}}"#,
            r#""https://other.example","#.repeat(100_000)
        );
        let warning = &validate(many.as_bytes(), &["https://h".to_string()], tls).unwrap().warnings[0];
        assert!(warning.starts_with("protected resource metadata lists 100002 authorization servers"), "{warning}");
        assert!(warning.len() < 1500, "{}", warning.len());
    }
}
