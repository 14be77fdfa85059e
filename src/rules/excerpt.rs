//! How much of a document's text a message quotes and the rules keep: a member can hold megabytes.

use super::json_value::{Items, Json};
use std::borrow::Cow;

/// How much of a document's text a message quotes.
pub(crate) const SHOWN: usize = 1024;

/// A document's string as a message quotes it: as `{:?}` writes it, the first `max` bytes only,
/// followed by `…` when cut (a member can hold megabytes).
pub(crate) fn shown(text: &str, max: usize) -> String {
    let part = cut(text, max);
    format!("{part:?}{}", if part.len() < text.len() { "…" } else { "" })
}

/// The longest string of a document the rules keep whole: the longest URL the gate takes
/// ([`crate::url::MAX_LEN`]), and so any issuer or resource it is configured with, and a slash.
pub(crate) const KEPT: usize = crate::url::MAX_LEN + 2;

/// A document's string as the rules keep it: whole up to `max` bytes, else cut after more than
/// `max` bytes and marked `…`. A value cut so equals no string of at most `max` bytes and, with
/// `max` at least [`KEPT`], is no URL the gate takes: every judgement on it is the judgement on
/// the whole, and what it costs is bounded (a member can hold megabytes).
pub(crate) fn kept(text: Cow<'_, str>, max: usize) -> String {
    if text.len() <= max {
        return text.into_owned();
    }
    format!("{}…", cut(&text, max + 4))
}

/// The first `max` bytes of `text`, or fewer to end on a character.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A document's list of strings as a message quotes it: as `{:?}` writes a list (`["a", "b"]`),
/// the items after the first [`SHOWN`] bytes left out (`…`).
pub(crate) fn shown_list(items: Option<Items<'_>>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.into_iter().flatten().filter_map(Json::as_str).enumerate() {
        if out.len() > SHOWN {
            out.push_str(", …");
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&shown(&item, SHOWN));
    }
    out.push(']');
    out
}

/// A short, printable excerpt of a body for logs: at most `max` characters, control and
/// non-printable bytes replaced, whitespace runs folded.
pub(crate) fn printable_excerpt(body: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(max * 4)]);
    let mut out = String::new();
    let mut last_space = true;
    for c in text.chars() {
        if out.chars().count() >= max {
            out.push('…');
            break;
        }
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else if c.is_control() || c == '\u{FFFD}' {
            out.push('?');
            last_space = false;
        } else {
            out.push(c);
            last_space = false;
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::body::open_object;

    #[test]
    fn excerpts_are_printable_and_short() {
        assert_eq!(printable_excerpt(b"<h1>Bad\n\n Gateway</h1>\x1b[31m", 40), "<h1>Bad Gateway</h1>?[31m");
        assert_eq!(printable_excerpt(b"abcdef", 3), "abc…");
    }

    /// A document's text in a message: as `{:?}` writes it while short, cut when long.
    #[test]
    fn long_text_is_quoted_in_part_and_kept_cut() {
        let doc = open_object(br#"{"a":["x\"y","\u00e9",""],"b":[]}"#, &[]).unwrap();
        let list = |name: &str| shown_list(doc.get(name).and_then(Json::items));
        assert_eq!(list("a"), format!("{:?}", ["x\"y", "\u{e9}", ""]));
        assert_eq!((list("b"), shown_list(None)), ("[]".into(), "[]".into()));
        let long = format!("[{}\"z\"]", "\"abcdefgh\",".repeat(10_000));
        let body = format!(r#"{{"a":{long}}}"#);
        let doc = open_object(body.as_bytes(), &[]).unwrap();
        let shown = shown_list(doc.get("a").and_then(Json::items));
        assert!(shown.len() < SHOWN + 32 && shown.ends_with(", …]"), "{shown}");
        assert_eq!(kept("é".repeat(10).into(), 20), "é".repeat(10));
        let cut = kept("é".repeat(10).into(), 5);
        assert_eq!(cut, "éééé…", "more than 5 bytes, on a character");
        assert_eq!(super::shown("ab\"c", 2), "\"ab\"…");
    }
}
