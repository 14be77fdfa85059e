//! The properties the fuzz targets check, kept here so that the same checks also run over the
//! seed inputs in the ordinary test suite (tests/fuzz_seeds.rs) without a nightly toolchain.
//! Each function panics when a property fails, which is what a fuzzer looks for.

use crate::rules::authorization_server::{MetadataKind, Rules, validate_document, well_known_url};
use crate::rules::printable_excerpt;
use crate::url;

/// Document validation over arbitrary bytes: never panics (nor overflows its stack, however deep
/// the nesting), never accepts a document for another issuer, an OIDC document without
/// `jwks_uri`, or one whose checked members held invalid UTF-8 or a lone surrogate; and JSON text
/// serde_json reads is read in place as serde_json reads it. The first line, if any, is the
/// configured issuer; the rest is the body.
pub fn document(data: &[u8]) {
    let (issuer, body) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (String::from_utf8_lossy(&data[..i]).into_owned(), &data[i + 1..]),
        None => ("https://issuer.example".to_string(), data),
    };
    // JSON text as Go reads it: what serde_json reads (valid UTF-8, no lone surrogate, numbers in
    // range, 128 levels) Go's scanner accepts, and the members and strings read in place are
    // serde_json's; read in place, every value of any accepted text is walked without recursion.
    let read = crate::rules::json_text::check(body);
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        let json = read.as_ref().expect("serde_json reads it, Go's scanner refuses it");
        agrees(*json, &value);
    }
    if let Ok(json) = read {
        walk(json);
    }
    let repaired = |name: &str| {
        let Ok(top) = read else { return false };
        let mut members = top.members().into_iter().flatten();
        members.any(|(n, v)| n.fold().eq_ignore_ascii_case(name) && v.repair().is_some())
    };
    for kind in [MetadataKind::Oidc, MetadataKind::OAuth] {
        for strict in [false, true] {
            let client = if strict { crate::rules::client::Client::ToolHive } else { Default::default() };
            let rules = Rules { kind, strict, skip_issuer_check: false, client };
            if let Ok(doc) = validate_document(body, &issuer, rules) {
                assert_eq!(doc.issuer, issuer, "accepted a document for another issuer");
                if kind == MetadataKind::Oidc {
                    assert!(doc.jwks_uri.is_some(), "accepted an OIDC document without jwks_uri");
                }
                for member in ["issuer", "jwks_uri", "authorization_endpoint", "token_endpoint"] {
                    assert!(!repaired(member), "accepted {member} holding text Go reads as U+FFFD");
                }
            }
        }
    }
    let _ = printable_excerpt(body, 100);
}

/// A value read in place against serde_json's reading of the same text.
fn agrees(json: crate::rules::Json<'_>, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            for (name, member) in map {
                let found = json.get(name).unwrap_or_else(|| panic!("member {name:?} not found in place"));
                agrees(found, member);
            }
        }
        Value::Array(items) => {
            let read: Vec<_> = json.items().expect("an array").collect();
            assert_eq!(read.len(), items.len(), "items counted in place");
            read.into_iter().zip(items).for_each(|(j, v)| agrees(j, v));
        }
        Value::String(s) => assert_eq!(json.as_str().as_deref(), Some(s.as_str()), "a string decoded in place"),
        Value::Bool(b) => assert_eq!(json.as_bool(), Some(*b)),
        Value::Null => assert!(json.is_null()),
        Value::Number(_) => assert_eq!(json.type_name(), "a number"),
    }
}

/// Every value of a checked text, read in place, depth first without recursion.
fn walk(top: crate::rules::Json<'_>) {
    let mut stack = vec![top];
    while let Some(json) = stack.pop() {
        let _ = (json.type_name(), json.as_str(), json.repair());
        if let Some(items) = json.items() {
            stack.extend(items);
        }
        if let Some(members) = json.members() {
            stack.extend(members.map(|(name, value)| {
                let _ = (name.decoded(), name.fold());
                value
            }));
        }
    }
}

/// URL handling over arbitrary text: splitting, issuer checks, well-known derivation, redirect
/// resolution and redaction never panic; derived URLs stay on the issuer's origin; redaction is
/// stable and leaves no userinfo. The first line is a URL, the second a Location header.
pub fn urls(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (first, second) = text.split_once('\n').unwrap_or((text, "/"));
    let _ = url::split(first);
    if let Ok(parts) = url::check_issuer(first) {
        let origin = parts.origin();
        for kind in [MetadataKind::Oidc, MetadataKind::OAuth] {
            let url = well_known_url(first, kind);
            let derived = url::split(&url).expect("a derived URL parses");
            assert_eq!(derived.origin(), origin, "derivation left the issuer's origin: {url}");
        }
        if let Ok(next) = url::resolve(first, second) {
            let _ = url::split(&next);
        }
    }
    let redacted = url::redact(text);
    assert_eq!(url::redact(&redacted), redacted, "redaction is stable");
    if let Ok(parts) = url::split(first)
        && parts.has_userinfo
    {
        let r = url::redact(first);
        let (_, after_scheme) = r.split_once("://").expect("a URL keeps its scheme");
        assert!(after_scheme.starts_with("***@"), "credentials left in {r}");
    }
}

/// Protected resource metadata and `WWW-Authenticate` challenges over arbitrary bytes: never
/// panics, never accepts metadata for another resource or without an authorization server. The
/// first line is the expected resource; the rest is the body, also read as a header.
pub fn resource(data: &[u8]) {
    let (expected, body) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (String::from_utf8_lossy(&data[..i]).into_owned(), &data[i + 1..]),
        None => ("https://mcp.example/mcp".to_string(), data),
    };
    if let Ok(metadata) =
        crate::rules::protected_resource::validate(body, std::slice::from_ref(&expected), url::Transport::TlsOnly)
    {
        assert_eq!(metadata.resource, expected, "accepted metadata for another resource");
        assert!(!metadata.authorization_servers.is_empty(), "accepted metadata without a server");
        for server in &metadata.authorization_servers {
            assert!(url::check_issuer(server).is_ok(), "accepted an unusable server {server:?}");
            assert!(server.starts_with("https://"), "accepted a plain server {server:?} in a chain given as https");
        }
    }
    let _ = crate::rules::protected_resource::challenge_metadata_url(&String::from_utf8_lossy(body));
}
