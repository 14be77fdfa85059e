//! The document rules: when a fetched body counts, by specification. Pure: bytes and strings in,
//! verdicts out, no I/O, so that they can be fuzzed and checked against the real clients'
//! behaviour on their own.
//!
//! - [`authorization_server`]: OpenID Connect Discovery 1.0 and RFC 8414 (where an issuer's
//!   metadata lives, when it counts, what an MCP client needs of it);
//! - `protected_resource`: RFC 9728 (an MCP server's metadata and its `401` challenge);
//! - `jwk_set`: RFC 7517 (the keys a client needs to verify an ID token);
//! - [`client`]: the guarded client's own rules on top (`--client`).
//!
//! Each opens a body the same way (`open_object`), so a body that is not a JSON object fails
//! with the same words whichever document it was meant to be.

pub mod authorization_server;
pub mod client;
pub(crate) mod json_text;
pub(crate) mod json_value;
pub(crate) mod jwk_set;
pub(crate) mod protected_resource;

use json_text::{Repair, TextProblem};
pub(crate) use json_value::Json;
use std::borrow::Cow;
use std::fmt;

/// Why a body is not a JSON object: the first step of every document rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyProblem {
    /// An invalid UTF-8 byte outside any string (inside one, Go reads U+FFFD).
    NotUtf8 { valid_up_to: usize },
    /// Not JSON as Go's encoding/json reads it: the reason.
    NotJson(String),
    /// JSON, but not an object: its type.
    NotAnObject(&'static str),
    /// A member the rules check held text Go reads as U+FFFD.
    Repaired { member: String, repair: Repair },
}

impl fmt::Display for BodyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyProblem::NotUtf8 { valid_up_to } => {
                write!(f, "body is not UTF-8 (invalid byte at offset {valid_up_to})")
            }
            BodyProblem::NotJson(e) => write!(f, "body is not valid JSON: {e}"),
            BodyProblem::NotAnObject(json_type) => write!(f, "body is JSON {json_type}, not an object"),
            BodyProblem::Repaired { member, repair } => {
                let what = match repair {
                    Repair::InvalidUtf8 => "bytes that are not UTF-8",
                    Repair::LoneSurrogate => "a lone UTF-16 surrogate (\\uD800-\\uDFFF)",
                };
                write!(f, "member {member:?} holds {what}: a client reads U+FFFD there, so it cannot be right")
            }
        }
    }
}

/// A body opened as a JSON object ([`json_text`]): its members are read where they lie, and
/// nothing is built for those no rule reads.
#[derive(Debug)]
pub(crate) struct Object<'a> {
    members: json_value::Members<'a>,
    /// The last member named exactly as each checked name, found while checking.
    found: Vec<(&'static str, Option<Json<'a>>)>,
}

impl<'a> Object<'a> {
    /// The member named exactly `name`, the last if several (matched as a map built from the
    /// text matches it: case and all).
    pub(crate) fn get(&self, name: &str) -> Option<Json<'a>> {
        match self.found.iter().find(|(n, _)| *n == name) {
            Some(&(_, found)) => found,
            None => self.members().filter(|(n, _)| n.is(name)).last().map(|(_, value)| value),
        }
    }

    /// Every member, in order, duplicates kept.
    pub(crate) fn members(&self) -> json_value::Members<'a> {
        self.members.clone()
    }
}

/// Opens a body as a JSON object as Go's encoding/json reads it ([`json_text`]). `checked` names
/// the top-level members the caller's rules read (ASCII names): one that held invalid UTF-8 or a
/// lone surrogate fails the body (Go would read U+FFFD into it), matched as Go matches member
/// names (case folded).
pub(crate) fn open_object<'a>(body: &'a [u8], checked: &[&'static str]) -> Result<Object<'a>, BodyProblem> {
    let json = json_text::check(body).map_err(|problem| match problem {
        TextProblem::NotUtf8 { offset } => BodyProblem::NotUtf8 { valid_up_to: offset },
        TextProblem::Syntax { offset, why } => BodyProblem::NotJson(format!("{why} (at byte {offset})")),
        TextProblem::TooDeep { offset } => BodyProblem::NotJson(format!(
            "nested deeper than {} levels (at byte {offset}; Go's encoding/json stops there)",
            json_text::MAX_DEPTH
        )),
    })?;
    let Some(members) = json.members() else { return Err(BodyProblem::NotAnObject(json.type_name())) };
    let mut found: Vec<_> = checked.iter().map(|&name| (name, None)).collect();
    for (name, value) in members.clone() {
        let fold = name.fold();
        if !checked.iter().any(|c| fold.eq_ignore_ascii_case(c)) {
            continue;
        }
        if let Some(repair) = value.repair() {
            return Err(BodyProblem::Repaired { member: name.decoded().into_owned(), repair });
        }
        if let Some(slot) = found.iter_mut().find(|(n, _)| name.is(n)) {
            slot.1 = Some(value);
        }
    }
    Ok(Object { members, found })
}

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
pub(crate) fn shown_list(items: Option<json_value::Items<'_>>) -> String {
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

    #[test]
    fn excerpts_are_printable_and_short() {
        assert_eq!(printable_excerpt(b"<h1>Bad\n\n Gateway</h1>\x1b[31m", 40), "<h1>Bad Gateway</h1>?[31m");
        assert_eq!(printable_excerpt(b"abcdef", 3), "abc…");
    }

    #[test]
    fn a_body_opens_only_as_an_object() {
        assert!(open_object(br#"{"a": 1}"#, &[]).is_ok());
        assert_eq!(open_object(b"\xff", &[]).unwrap_err(), BodyProblem::NotUtf8 { valid_up_to: 0 });
        assert!(matches!(open_object(b"<html>", &[]).unwrap_err(), BodyProblem::NotJson(_)));
        assert_eq!(open_object(b"[]", &[]).unwrap_err(), BodyProblem::NotAnObject("an array"));
        assert_eq!(open_object(b"[]", &[]).unwrap_err().to_string(), "body is JSON an array, not an object");
    }

    /// Outside the members the rules check, text is read as Go reads it; inside them, text Go
    /// reads as U+FFFD fails, whatever the case of the member's name.
    #[test]
    fn text_go_reads_as_u_fffd_fails_only_in_a_checked_member() {
        let body = b"{\"issuer\":\"https://h\",\"name\":\"\xff \\ud800\"}";
        assert_eq!(open_object(body, &["issuer"]).unwrap().get("name").unwrap().as_str().unwrap(), "\u{fffd} \u{fffd}");
        let bad = b"{\"ISSUER\":\"https://h\xff\"}";
        let problem = open_object(bad, &["issuer"]).unwrap_err();
        assert_eq!(problem, BodyProblem::Repaired { member: "ISSUER".into(), repair: Repair::InvalidUtf8 });
        assert!(problem.to_string().contains("not UTF-8"), "{problem}");
        let lone = open_object(br#"{"jwks_uri":"https://h/\udfff"}"#, &["jwks_uri"]).unwrap_err();
        assert!(matches!(lone, BodyProblem::Repaired { repair: Repair::LoneSurrogate, .. }));
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
