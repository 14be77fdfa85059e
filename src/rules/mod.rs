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
pub(crate) mod jwk_set;
pub(crate) mod protected_resource;

use json_text::{Repair, TextProblem};
use serde_json::{Map, Value};
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

/// Opens a body as a JSON object as Go's encoding/json reads it ([`json_text`]); returns the
/// text serde_json read too (for the duplicate-member scan). `checked` names the top-level
/// members the caller's rules read: one that held invalid UTF-8 or a lone surrogate fails the
/// body (Go would read U+FFFD into it), matched as Go matches member names (case folded).
pub(crate) fn open_object<'a>(
    body: &'a [u8],
    checked: &[&str],
) -> Result<(Cow<'a, str>, Map<String, Value>), BodyProblem> {
    let text = json_text::read(body).map_err(|problem| match problem {
        TextProblem::NotUtf8 { offset } => BodyProblem::NotUtf8 { valid_up_to: offset },
        TextProblem::Syntax { offset, why } => BodyProblem::NotJson(format!("{why} (at byte {offset})")),
        TextProblem::TooDeep { offset } => BodyProblem::NotJson(format!(
            "nested deeper than {} levels (at byte {offset}; Go's encoding/json stops there)",
            json_text::MAX_DEPTH
        )),
    })?;
    let bad = |name: &str| checked.iter().any(|c| json_text::go_fold(c) == json_text::go_fold(name));
    if let Some((member, repair)) = text.repaired.iter().find(|(name, _)| bad(name)) {
        return Err(BodyProblem::Repaired { member: member.clone(), repair: *repair });
    }
    match serde_json::from_str(&text.text).map_err(|e| BodyProblem::NotJson(e.to_string()))? {
        Value::Object(object) => Ok((text.text, object)),
        other => Err(BodyProblem::NotAnObject(json_type_name(&other))),
    }
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

/// A JSON value's type, as a message names it.
pub(crate) fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
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
        assert_eq!(open_object(body, &["issuer"]).unwrap().1["name"], "\u{fffd} \u{fffd}");
        let bad = b"{\"ISSUER\":\"https://h\xff\"}";
        let problem = open_object(bad, &["issuer"]).unwrap_err();
        assert_eq!(problem, BodyProblem::Repaired { member: "ISSUER".into(), repair: Repair::InvalidUtf8 });
        assert!(problem.to_string().contains("not UTF-8"), "{problem}");
        let lone = open_object(br#"{"jwks_uri":"https://h/\udfff"}"#, &["jwks_uri"]).unwrap_err();
        assert!(matches!(lone, BodyProblem::Repaired { repair: Repair::LoneSurrogate, .. }));
    }
}
