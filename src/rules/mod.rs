//! The document rules: when a fetched body counts, by specification. Pure: bytes and strings in,
//! verdicts out, no I/O, so that they can be fuzzed and checked against the real clients'
//! behaviour on their own.
//!
//! - [`authorization_server`]: OpenID Connect Discovery 1.0 and RFC 8414 (where an issuer's
//!   metadata lives, when it counts, what an MCP client needs of it);
//! - `protected_resource`: RFC 9728 (an MCP server's metadata and its `401` challenge);
//! - `jwk_set`: RFC 7517 (the keys a client needs to verify an ID token).
//!
//! Each opens a body the same way (`open_object`), so a body that is not a JSON object fails
//! with the same words whichever document it was meant to be.

pub mod authorization_server;
pub(crate) mod jwk_set;
pub(crate) mod protected_resource;

use serde_json::{Map, Value};
use std::fmt;

/// Why a body is not a JSON object: the first step of every document rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyProblem {
    /// Not valid UTF-8 (RFC 8259 §8.1 requires it).
    NotUtf8 { valid_up_to: usize },
    /// Not JSON: serde_json's reason.
    NotJson(String),
    /// JSON, but not an object: its type.
    NotAnObject(&'static str),
}

impl fmt::Display for BodyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyProblem::NotUtf8 { valid_up_to } => {
                write!(f, "body is not UTF-8 (invalid byte at offset {valid_up_to})")
            }
            BodyProblem::NotJson(e) => write!(f, "body is not valid JSON: {e}"),
            BodyProblem::NotAnObject(json_type) => write!(f, "body is JSON {json_type}, not an object"),
        }
    }
}

/// Opens a body as a JSON object; returns its text too (for the duplicate-member scan).
pub(crate) fn open_object(body: &[u8]) -> Result<(&str, Map<String, Value>), BodyProblem> {
    let text = std::str::from_utf8(body).map_err(|e| BodyProblem::NotUtf8 { valid_up_to: e.valid_up_to() })?;
    match serde_json::from_str(text).map_err(|e| BodyProblem::NotJson(e.to_string()))? {
        Value::Object(object) => Ok((text, object)),
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
        assert!(open_object(br#"{"a": 1}"#).is_ok());
        assert_eq!(open_object(b"\xff").unwrap_err(), BodyProblem::NotUtf8 { valid_up_to: 0 });
        assert!(matches!(open_object(b"<html>").unwrap_err(), BodyProblem::NotJson(_)));
        assert_eq!(open_object(b"[]").unwrap_err(), BodyProblem::NotAnObject("an array"));
        assert_eq!(open_object(b"[]").unwrap_err().to_string(), "body is JSON an array, not an object");
    }
}
