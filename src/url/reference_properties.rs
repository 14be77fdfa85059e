//! Reference resolution (RFC 3986 §5.2) against the `url` crate as oracle, over generated bases
//! and references (proptest, on stable, in the ordinary unit tests).
//!
//! The `url` crate follows the WHATWG URL standard, which agrees with RFC 3986 on resolution for
//! everything generated here. The generators stay inside that common ground, and say why where
//! the two standards part: WHATWG also normalises (an empty path becomes `/`, a base's dot
//! segments are removed when it is parsed, `\` is a `/`, `https:foo` is relative), and accepts
//! references RFC 3986 forbids (a first segment with `:`).

use super::reference::resolve;
use super::syntax::split;
use proptest::prelude::*;

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
        let theirs = ::url::Url::parse(&base).unwrap().join(&reference).unwrap();
        let resolved = resolve(&base, &reference).unwrap();
        prop_assert_eq!(with_root_path(&resolved), theirs.as_str(), "base {} reference {}", base, reference);
    }

    #[test]
    fn resolved_http_urls_split_and_keep_the_query(base in base(), reference in reference()) {
        let resolved = resolve(&base, &reference).unwrap();
        let without_fragment = resolved.split('#').next().unwrap();
        let parts = split(without_fragment).unwrap();
        prop_assert!(parts.scheme == "https" || parts.scheme == "http");
        let before_fragment = reference.split('#').next().unwrap();
        if let Some((_, q)) = before_fragment.split_once('?') {
            prop_assert_eq!(parts.query, Some(q));
        }
    }

    #[test]
    fn resolution_never_panics(base in "\\PC{0,40}", reference in "\\PC{0,40}") {
        let _ = resolve(&base, &reference);
    }
}
