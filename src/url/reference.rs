//! Redirect targets: a `Location` resolved against the URL that sent it, as RFC 3986 §5.2 says,
//! strictly and without normalising anything else.

use super::syntax::{is_scheme, split_query_fragment};
use std::fmt;

/// A URI reference split as RFC 3986 Appendix B does, borrowed from the raw string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reference<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

impl<'a> Reference<'a> {
    /// `^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?`
    fn parse(raw: &'a str) -> Reference<'a> {
        let (rest, query, fragment) = split_query_fragment(raw);
        let (scheme, rest) = match rest.find([':', '/']) {
            Some(i) if rest.as_bytes()[i] == b':' && i > 0 => (Some(&rest[..i]), &rest[i + 1..]),
            _ => (None, rest),
        };
        let (authority, path) = match rest.strip_prefix("//") {
            Some(after) => {
                let end = after.find('/').unwrap_or(after.len());
                (Some(&after[..end]), &after[end..])
            }
            None => (None, rest),
        };
        Reference { scheme, authority, path, query, fragment }
    }
}

/// Why a `Location` could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReferenceProblem {
    Empty,
    /// The text before the first `:` is not a scheme, so the reference is not RFC 3986.
    BadScheme,
    /// The base is not an absolute URL with an authority.
    BadBase,
    /// A `%` not followed by two hexadecimal digits in the path, which Go's `url.Parse` refuses.
    BadEscape,
}

impl fmt::Display for ReferenceProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReferenceProblem::Empty => "empty Location",
            ReferenceProblem::BadScheme => "not a URI reference (the part before ':' is not a scheme)",
            ReferenceProblem::BadBase => "the URL it came from is not absolute",
            ReferenceProblem::BadEscape => "a '%' in its path is not followed by two hexadecimal digits",
        })
    }
}

/// Resolves `reference` (a `Location` header) against `base` (the URL that sent it): RFC 3986
/// §5.2, strictly, with `remove_dot_segments`. The scheme is case-insensitive (§3.1), so it comes
/// back in lower case; nothing else is normalised. The result keeps the reference's fragment; the
/// caller does not send it.
pub(crate) fn resolve(base: &str, reference: &str) -> Result<String, ReferenceProblem> {
    if reference.is_empty() {
        return Err(ReferenceProblem::Empty);
    }
    let b = Reference::parse(base);
    let (Some(b_scheme), Some(b_authority)) = (b.scheme, b.authority) else {
        return Err(ReferenceProblem::BadBase);
    };
    let r = Reference::parse(reference);
    if r.scheme.is_some_and(|s| !is_scheme(s)) {
        return Err(ReferenceProblem::BadScheme);
    }
    // §5.2.2, "strict": a scheme in the reference makes it absolute, even when equal to the base's.
    let (scheme, authority, path, query) = match (r.scheme, r.authority) {
        (Some(s), _) => (s.to_string(), r.authority, remove_dot_segments(r.path), r.query),
        (None, Some(a)) => (b_scheme.to_string(), Some(a), remove_dot_segments(r.path), r.query),
        (None, None) if r.path.is_empty() => {
            (b_scheme.to_string(), Some(b_authority), b.path.to_string(), r.query.or(b.query))
        }
        (None, None) if r.path.starts_with('/') => {
            (b_scheme.to_string(), Some(b_authority), remove_dot_segments(r.path), r.query)
        }
        (None, None) => (b_scheme.to_string(), Some(b_authority), remove_dot_segments(&merge(&b, r.path)), r.query),
    };
    let path = go_escaped_path(&path).ok_or(ReferenceProblem::BadEscape)?;
    // §5.3: recomposition.
    let mut out = scheme.to_ascii_lowercase();
    out.push(':');
    if let Some(a) = authority {
        out.push_str("//");
        out.push_str(a);
    }
    out.push_str(&path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = r.fragment {
        out.push('#');
        out.push_str(f);
    }
    Ok(out)
}

/// The path as Go's `net/http` sends it (`URL.EscapedPath`), so that a `Location` Go follows is
/// followed to the same place: as written when every byte may stand in a path (`validEncoded`),
/// else decoded and escaped again (`escape(path, encodePath)`): `/d oc` is sent `/d%20oc`,
/// `/déoc` `/d%C3%A9oc`, `/a|b` `/a%7Cb`. None for a `%` without two hexadecimal digits after
/// it, which `url.Parse` refuses.
fn go_escaped_path(path: &str) -> Option<String> {
    // shouldEscape(c, encodePath): all but unreserved characters and `$&+,/:;=@`.
    let escapes = |b: u8| !(b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b));
    let mut decoded = Vec::with_capacity(path.len());
    let mut bytes = path.bytes();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            decoded.push(b);
            continue;
        }
        let hex = |d: Option<u8>| char::from(d?).to_digit(16);
        decoded.push(u8::try_from(hex(bytes.next())? * 16 + hex(bytes.next())?).ok()?);
    }
    if path.bytes().all(|b| b"!$&'()*+,;=:@[]%".contains(&b) || !escapes(b)) {
        return Some(path.to_string());
    }
    let mut out = String::with_capacity(path.len() + 8);
    for b in decoded {
        if escapes(b) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    Some(out)
}

/// §5.2.3: a relative path against the base's.
fn merge(base: &Reference<'_>, path: &str) -> String {
    if base.authority.is_some() && base.path.is_empty() {
        return format!("/{path}");
    }
    match base.path.rfind('/') {
        Some(i) => format!("{}{path}", &base.path[..=i]),
        None => path.to_string(),
    }
}

/// §5.2.4, step by step as the RFC writes it.
fn remove_dot_segments(path: &str) -> String {
    let mut input = path;
    let mut output = String::with_capacity(path.len());
    while !input.is_empty() {
        if let Some(rest) = input.strip_prefix("../").or_else(|| input.strip_prefix("./")) {
            // A: drop a leading "../" or "./".
            input = rest;
        } else if input.starts_with("/./") || input == "/." {
            // B: "/./" or a final "/." becomes "/".
            input = if input == "/." { &input[..1] } else { &input[2..] };
        } else if input.starts_with("/../") || input == "/.." {
            // C: the same, and the last output segment goes too.
            input = if input == "/.." { &input[..1] } else { &input[3..] };
            output.truncate(output.rfind('/').unwrap_or(0));
        } else if input == "." || input == ".." {
            // D
            input = "";
        } else {
            // E: move the first segment, with its leading "/", to the output.
            let first = input.chars().next().map_or(0, char::len_utf8);
            let end = input[first..].find('/').map_or(input.len(), |i| i + first);
            output.push_str(&input[..end]);
            input = &input[end..];
        }
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Go 1.26's `(*url.URL).Parse` then `RequestURI` give for these, against
    /// `https://a.example/x/y` (printed by a Go program, issue 35 §6).
    #[test]
    fn a_location_beyond_what_a_path_may_hold_is_escaped_as_go_sends_it() {
        let base = "https://a.example/x/y";
        for (location, sent) in [
            ("/d oc", "https://a.example/d%20oc"),
            ("/d\u{e9}oc", "https://a.example/d%C3%A9oc"),
            ("/a%2Fb c", "https://a.example/a/b%20c"),
            ("d oc", "https://a.example/x/d%20oc"),
            ("/ok%20x", "https://a.example/ok%20x"),
            ("/a[b]", "https://a.example/a[b]"),
            ("/a|b", "https://a.example/a%7Cb"),
            ("/a\"b", "https://a.example/a%22b"),
            ("/a{b}", "https://a.example/a%7Bb%7D"),
            ("/a%2Fb", "https://a.example/a%2Fb"),
        ] {
            assert_eq!(resolve(base, location).as_deref(), Ok(sent), "{location:?}");
        }
        assert_eq!(resolve(base, "/a%zz"), Err(ReferenceProblem::BadEscape));
        assert_eq!(resolve(base, "/a%2"), Err(ReferenceProblem::BadEscape));
    }

    #[test]
    fn rfc_3986_examples_resolve() {
        let base = "http://a/b/c/d;p?q";
        for (reference, target) in [
            ("g:h", "g:h"),
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("g#s", "http://a/b/c/g#s"),
            ("g?y#s", "http://a/b/c/g?y#s"),
            (";x", "http://a/b/c/;x"),
            ("g;x", "http://a/b/c/g;x"),
            ("g;x?y#s", "http://a/b/c/g;x?y#s"),
            ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"),
            ("./", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../", "http://a/"),
            ("../../g", "http://a/g"),
            ("../../../g", "http://a/g"),
            ("../../../../g", "http://a/g"),
            ("/./g", "http://a/g"),
            ("/../g", "http://a/g"),
            ("g.", "http://a/b/c/g."),
            (".g", "http://a/b/c/.g"),
            ("g..", "http://a/b/c/g.."),
            ("..g", "http://a/b/c/..g"),
            ("./../g", "http://a/b/g"),
            ("./g/.", "http://a/b/c/g/"),
            ("g/./h", "http://a/b/c/g/h"),
            ("g/../h", "http://a/b/c/h"),
            ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
            ("g;x=1/../y", "http://a/b/c/y"),
            ("g?y/./x", "http://a/b/c/g?y/./x"),
            ("g?y/../x", "http://a/b/c/g?y/../x"),
            ("g#s/./x", "http://a/b/c/g#s/./x"),
            ("g#s/../x", "http://a/b/c/g#s/../x"),
            ("http:g", "http:g"),
        ] {
            if reference.is_empty() {
                assert_eq!(resolve(base, reference), Err(ReferenceProblem::Empty));
                continue;
            }
            assert_eq!(resolve(base, reference).as_deref(), Ok(target), "{reference:?}");
        }
    }

    #[test]
    fn locations_seen_in_the_field_resolve() {
        let base = "https://h:8443/realms/x/.well-known/openid-configuration";
        assert_eq!(resolve(base, "../x").unwrap(), "https://h:8443/realms/x/x");
        assert_eq!(resolve(base, "../../y/.well-known/c").unwrap(), "https://h:8443/realms/y/.well-known/c");
        assert_eq!(resolve(base, "/login?next=https://other/x").unwrap(), "https://h:8443/login?next=https://other/x");
        assert_eq!(resolve(base, "HTTPS://h:8443/a").unwrap(), "https://h:8443/a");
        assert_eq!(resolve(base, "//o/p").unwrap(), "https://o/p");
        assert_eq!(resolve("https://h", "b").unwrap(), "https://h/b");
        assert_eq!(resolve(base, "1a b:c"), Err(ReferenceProblem::BadScheme));
    }
}
