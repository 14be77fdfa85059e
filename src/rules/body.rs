//! The first step of every document rule: a body opened as a JSON object, as Go decodes it into
//! the client's struct ([`open_object`]), or why it is not one ([`BodyProblem`]).

use super::json_text::{self, TextProblem};
use super::json_value::{self, Json, Repair};
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
