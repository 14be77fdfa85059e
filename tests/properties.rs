//! Property tests, run on stable in the ordinary suite (the cargo-fuzz targets stay for long
//! manual runs): reference resolution (RFC 3986 §5.2) against the `url` crate as oracle, and
//! document validation over generated documents and bytes.
//!
//! Resolution:
//! The `url` crate follows the WHATWG URL standard, which agrees with RFC 3986 on resolution for
//! everything generated here. The generators stay inside that common ground, and say why where
//! the two standards part: WHATWG also normalises (an empty path becomes `/`, a base's dot
//! segments are removed when it is parsed, `\` is a `/`, `https:foo` is relative), and accepts
//! references RFC 3986 forbids (a first segment with `:`).

use proptest::prelude::*;
use wait_for_idp::rules::authorization_server::{MetadataKind, Rules, validate_document};
use wait_for_idp::url as ours;

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9]{1,3}",
        1 => Just(String::new()),
        2 => Just(".".to_string()),
        2 => Just("..".to_string()),
        1 => "[a-z]{0,2}\\.[a-z.]{0,2}",
    ]
}

/// A path without dot segments: bases are URLs the gate requested, which are already resolved.
fn clean_path() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z0-9]{0,3}", 0..5).prop_map(|s| format!("/{}", s.join("/")))
}

/// An absolute path; `//` at its start would make it a network-path reference instead.
fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 0..6)
        .prop_map(|s| format!("/{}", s.join("/")))
        .prop_filter("not a network path", |p| !p.starts_with("//"))
}

/// A relative path whose first segment has no `:` (RFC 3986 §4.2 forbids one).
fn relative_path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..6)
        .prop_map(|s| s.join("/"))
        .prop_filter("relative, not empty", |p| !p.is_empty() && !p.starts_with('/'))
}

fn query() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "\\?[a-z0-9=&/:?.]{0,12}".prop_map(String::from)]
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "#[a-z0-9/.:?]{0,6}".prop_map(String::from)]
}

/// Lower-case hosts and no default port: WHATWG would normalise those, RFC 3986 keeps them.
fn authority() -> impl Strategy<Value = String> {
    (prop::sample::select(vec!["h", "a.example", "idp-1.test", "127.0.0.1", "[::1]"]), prop::option::of(1u16..9999))
        .prop_map(|(h, p)| match p {
            Some(p) if p != 443 && p != 80 => format!("{h}:{p}"),
            _ => h.to_string(),
        })
}

fn base() -> impl Strategy<Value = String> {
    (prop::sample::select(vec!["https", "http"]), authority(), clean_path(), query())
        .prop_map(|(s, a, p, q)| format!("{s}://{a}{p}{q}"))
}

fn reference() -> impl Strategy<Value = String> {
    prop_oneof![
        (prop::sample::select(vec!["https", "HTTPS", "Http"]), authority(), path(), query(), fragment())
            .prop_map(|(s, a, p, q, f)| format!("{s}://{a}{p}{q}{f}")),
        (authority(), path(), query(), fragment()).prop_map(|(a, p, q, f)| format!("//{a}{p}{q}{f}")),
        (path(), query(), fragment()).prop_map(|(p, q, f)| format!("{p}{q}{f}")),
        (relative_path(), query(), fragment()).prop_map(|(p, q, f)| format!("{p}{q}{f}")),
        (query(), fragment()).prop_map(|(q, f)| format!("{q}{f}")),
    ]
    // An empty Location is refused (a redirect to itself is a loop); RFC 3986 would resolve it.
    .prop_filter("not empty", |r| !r.is_empty())
}

/// WHATWG writes an empty path after an authority as `/` for http(s); RFC 3986 keeps it empty.
fn with_root_path(resolved: &str) -> String {
    let (scheme, rest) = resolved.split_once("://").expect("absolute");
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if rest[end..].starts_with('/') {
        resolved.to_string()
    } else {
        format!("{scheme}://{}/{}", &rest[..end], &rest[end..])
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn resolution_agrees_with_the_url_crate(base in base(), reference in reference()) {
        let theirs = url::Url::parse(&base).unwrap().join(&reference).unwrap();
        let resolved = ours::resolve(&base, &reference).unwrap();
        prop_assert_eq!(with_root_path(&resolved), theirs.as_str(), "base {} reference {}", base, reference);
    }

    #[test]
    fn resolved_http_urls_split_and_keep_the_query(base in base(), reference in reference()) {
        let resolved = ours::resolve(&base, &reference).unwrap();
        let without_fragment = resolved.split('#').next().unwrap();
        let parts = ours::split(without_fragment).unwrap();
        prop_assert!(parts.scheme == "https" || parts.scheme == "http");
        let before_fragment = reference.split('#').next().unwrap();
        if let Some((_, q)) = before_fragment.split_once('?') {
            prop_assert_eq!(parts.query, Some(q));
        }
    }

    #[test]
    fn resolution_never_panics(base in "\\PC{0,40}", reference in "\\PC{0,40}") {
        let _ = ours::resolve(&base, &reference);
    }
}

const ISSUER: &str = "https://idp.test/realms/x";

/// Member names: the ones the rules read, case and Unicode variants Go would fold onto `issuer`,
/// and unknown ones.
fn member_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "issuer",
        "Issuer",
        "ISSUER",
        "iſſuer",
        "jwks_uri",
        "authorization_endpoint",
        "token_endpoint",
        "response_types_supported",
        "subject_types_supported",
        "id_token_signing_alg_values_supported",
        "grant_types_supported",
        "x-vendor",
    ])
}

fn member_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(format!("{ISSUER:?}")),
        1 => Just(format!("\"{ISSUER}/\"")),
        1 => Just("\"https://other.test/realms/x\"".to_string()),
        1 => Just("\"HTTPS://IDP.TEST/realms/x\"".to_string()),
        2 => Just("[\"code\",\"id_token\"]".to_string()),
        1 => Just("[\"RS256\"]".to_string()),
        1 => Just("null".to_string()),
        1 => Just("42".to_string()),
        1 => Just("{}".to_string()),
        1 => Just("[1,[2]]".to_string()),
    ]
}

/// A JSON object written out by hand, so that duplicate members survive into the bytes.
fn document() -> impl Strategy<Value = (String, Vec<&'static str>)> {
    prop::collection::vec((member_name(), member_value()), 0..12).prop_map(|members| {
        let body = members.iter().map(|(k, v)| format!("{k:?}:{v}")).collect::<Vec<_>>().join(",");
        (format!("{{{body}}}"), members.iter().map(|(k, _)| *k).collect())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Whatever the document, a passing one announces exactly the configured issuer (once),
    /// and an OIDC one has a jwks_uri.
    #[test]
    fn documents_never_pass_for_another_issuer_or_without_keys((body, names) in document(), strict in any::<bool>()) {
        for kind in [MetadataKind::Oidc, MetadataKind::OAuth] {
            let rules = Rules { kind, strict, skip_issuer_check: false, client: Default::default() };
            if let Ok(doc) = validate_document(body.as_bytes(), ISSUER, rules) {
                prop_assert_eq!(&doc.issuer, ISSUER, "{}", body);
                let issuers = names.iter().filter(|n| ["issuer", "Issuer", "ISSUER", "iſſuer"].contains(n)).count();
                prop_assert_eq!(issuers, 1, "passed with duplicate issuer members: {}", body);
                if kind == MetadataKind::Oidc {
                    prop_assert!(doc.jwks_uri.is_some(), "OIDC document without jwks_uri passed: {}", body);
                }
            }
        }
    }

    #[test]
    fn document_validation_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        for kind in [MetadataKind::Oidc, MetadataKind::OAuth] {
            let _ = validate_document(&bytes, ISSUER, Rules { kind, strict: true, skip_issuer_check: false, client: Default::default() });
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Protected resource metadata and challenges: never a panic, never another resource.
    #[test]
    fn resource_metadata_and_challenges_never_pass_falsely(
        header in "(Bearer|DPoP|bearer)?[ ,=\"a-z_:/.\\\\]{0,60}",
        body in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        wait_for_idp::fuzz_checks::resource(header.as_bytes());
        wait_for_idp::fuzz_checks::resource(&body);
        let doc = format!("https://mcp.test/mcp\n{{\"resource\":\"https://mcp.test/mcp\",\"authorization_servers\":[{header:?}]}}");
        wait_for_idp::fuzz_checks::resource(doc.as_bytes());
    }
}
