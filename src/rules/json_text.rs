//! JSON text as Go's encoding/json reads it, read where it lies.
//!
//! Go (v1, `json.Unmarshal` into the client's struct) first checks the whole text with its
//! scanner (`checkValid`), then decodes only the members the struct names, skipping the rest
//! unbuilt: invalid UTF-8 in a string becomes U+FFFD, one per byte; a `\u` escape of a lone
//! surrogate becomes U+FFFD; nesting may go 10,000 levels deep ("exceeded max depth" beyond); a
//! number in a member the client does not read is never converted, so `1e400` there is no error.
//!
//! So here: [`check`] scans the body once, without recursion, as Go's scanner does, and hands
//! back the top-level value as a [`Json`], a view of the checked bytes that reads a value where
//! it lies ([`super::json_value`]): a document costs its body and what the rules keep of it,
//! whatever its shape (no tree of values is built).

use super::json_value::{Json, hex4, skip_space};

/// Go's `maxNestingDepth`: 10,000 levels pass, the next fails.
pub(crate) const MAX_DEPTH: usize = 10_000;

/// Why Go's scanner refuses the text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TextProblem {
    /// A syntax error at a byte offset of the body.
    Syntax { offset: usize, why: &'static str },
    /// An invalid UTF-8 byte outside any string, at this offset of the body.
    NotUtf8 { offset: usize },
    /// Deeper than Go's limit, at this offset.
    TooDeep { offset: usize },
}

/// Checks `body` as Go's scanner does; returns its top-level value, or why Go refuses it.
pub(crate) fn check(body: &[u8]) -> Result<Json<'_>, TextProblem> {
    let mut scan = Scan { bytes: body, at: 0, stack: Vec::new() };
    match scan.run() {
        Ok(()) => Ok(Json::at(body, skip_space(body, 0))),
        Err((at, why)) => {
            // Outside a string every byte is ASCII, so an error at a byte that starts no UTF-8
            // character is that byte's.
            let invalid =
                body.get(at..).and_then(|rest| rest.utf8_chunks().next()).is_some_and(|c| c.valid().is_empty());
            Err(match why {
                _ if invalid => TextProblem::NotUtf8 { offset: at },
                TOO_DEEP => TextProblem::TooDeep { offset: at },
                why => TextProblem::Syntax { offset: at, why },
            })
        }
    }
}

const TOO_DEEP: &str = "nested deeper than 10000 levels";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Value,
    /// After `[`: a value or `]`.
    ValueOrEnd,
    /// After `{`: a name or `}`.
    NameOrEnd,
    Name,
    Colon,
    CommaOrEnd,
    Done,
}

struct Scan<'t> {
    bytes: &'t [u8],
    at: usize,
    /// Open containers, `{` or `[`.
    stack: Vec<u8>,
}

type ScanError = (usize, &'static str);

impl Scan<'_> {
    fn run(&mut self) -> Result<(), ScanError> {
        let mut expect = Expect::Value;
        loop {
            self.at = skip_space(self.bytes, self.at);
            let Some(&b) = self.bytes.get(self.at) else {
                return if expect == Expect::Done { Ok(()) } else { Err((self.at, "unexpected end of JSON input")) };
            };
            let open = self.stack.last().copied();
            expect = match (expect, b) {
                (Expect::Done, _) => return Err((self.at, "invalid character after top-level value")),
                (Expect::ValueOrEnd, b']') | (Expect::NameOrEnd, b'}') => self.close(),
                (Expect::Value | Expect::ValueOrEnd, _) => self.value(b)?,
                (Expect::Name | Expect::NameOrEnd, b'"') => {
                    self.string()?;
                    Expect::Colon
                }
                (Expect::Name | Expect::NameOrEnd, _) => {
                    return Err((self.at, "invalid character looking for beginning of object key string"));
                }
                (Expect::Colon, b':') => {
                    self.at += 1;
                    Expect::Value
                }
                (Expect::Colon, _) => return Err((self.at, "invalid character after object key")),
                (Expect::CommaOrEnd, b',') => {
                    self.at += 1;
                    if open == Some(b'{') { Expect::Name } else { Expect::Value }
                }
                (Expect::CommaOrEnd, b']' | b'}') if open.is_some_and(|c| c + 2 == b) => self.close(),
                (Expect::CommaOrEnd, _) => return Err((self.at, "invalid character after a value")),
            };
        }
    }

    fn after_value(&self) -> Expect {
        if self.stack.is_empty() { Expect::Done } else { Expect::CommaOrEnd }
    }

    fn value(&mut self, b: u8) -> Result<Expect, ScanError> {
        match b {
            b'{' | b'[' => {
                self.stack.push(b);
                if self.stack.len() > MAX_DEPTH {
                    return Err((self.at, TOO_DEEP));
                }
                self.at += 1;
                return Ok(if b == b'{' { Expect::NameOrEnd } else { Expect::ValueOrEnd });
            }
            b'"' => self.string()?,
            b't' | b'f' | b'n' => {
                let word: &[u8] = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                if !self.bytes[self.at..].starts_with(word) {
                    return Err((self.at, "invalid literal"));
                }
                self.at += word.len();
            }
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return Err((self.at, "invalid character looking for beginning of value")),
        }
        Ok(self.after_value())
    }

    fn close(&mut self) -> Expect {
        self.stack.pop();
        self.at += 1;
        self.after_value()
    }

    /// A string from the opening quote at `at`: any byte but a control character, escapes as
    /// JSON has them (invalid UTF-8 is Go's U+FFFD, decoded later if read).
    fn string(&mut self) -> Result<(), ScanError> {
        let mut i = self.at + 1;
        loop {
            let Some(&b) = self.bytes.get(i) else {
                return Err((i, "unexpected end of JSON input in a string"));
            };
            match b {
                b'"' => break,
                b'\\' => match self.bytes.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                    Some(b'u') if hex4(self.bytes, i + 2).is_some() => i += 6,
                    Some(b'u') => return Err((i, "invalid \\u escape in a string")),
                    _ => return Err((i, "invalid escape in a string")),
                },
                0..0x20 => return Err((i, "invalid control character in a string")),
                _ => i += 1,
            }
        }
        self.at = i + 1;
        Ok(())
    }

    /// A number as RFC 8259 (and Go's scanner) has it; never converted here.
    fn number(&mut self) -> Result<(), ScanError> {
        let digits = |s: &Self, from: usize| s.bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
        let mut i = self.at + usize::from(self.bytes[self.at] == b'-');
        match self.bytes.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i += digits(self, i),
            _ => return Err((i, "invalid character in numeric literal")),
        }
        if self.bytes.get(i) == Some(&b'.') {
            let n = digits(self, i + 1);
            if n == 0 {
                return Err((i + 1, "invalid character after decimal point in numeric literal"));
            }
            i += 1 + n;
        }
        if matches!(self.bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(self.bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let n = digits(self, i);
            if n == 0 {
                return Err((i, "invalid character in exponent of numeric literal"));
            }
            i += n;
        }
        self.at = i;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_as_deep_as_go_allows_and_no_deeper() {
        let nested = |depth: usize| format!("{{\"a\":{}1{}}}", "[".repeat(depth - 1), "]".repeat(depth - 1));
        let body = nested(MAX_DEPTH);
        assert!(check(body.as_bytes()).unwrap().get("a").unwrap().items().is_some());
        assert!(matches!(check(nested(MAX_DEPTH + 1).as_bytes()), Err(TextProblem::TooDeep { .. })));
        let broken = format!("{{\"a\":{}1,]{}}}", "[".repeat(100), "]".repeat(99));
        assert!(matches!(check(broken.as_bytes()), Err(TextProblem::Syntax { .. })));
    }

    #[test]
    fn go_scanner_errors() {
        for bad in [
            &b""[..],
            b"{",
            b"{\"a\" 1}",
            b"{\"a\":01}",
            b"{\"a\":1.}",
            b"{\"a\":-}",
            b"{\"a\":1e}",
            b"[1,]",
            b"{\"a\":1,}",
            b"{} {}",
            b"{\"a\":tru}",
            b"\"\\x\"",
            b"\"\\u12g4\"",
            b"\"a\nb\"",
            b"[1}",
            b"{]",
        ] {
            assert!(matches!(check(bad), Err(TextProblem::Syntax { .. })), "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(check(b" \xff{}").unwrap_err(), TextProblem::NotUtf8 { offset: 1 });
        assert_eq!(check(b"{\"a\":\"\xff\"} \xfe").unwrap_err(), TextProblem::NotUtf8 { offset: 10 });
        assert_eq!(check(b"{\"a\":1\xe2\x82}").unwrap_err(), TextProblem::NotUtf8 { offset: 6 });
        assert!(matches!(check("{\"a\":1é}".as_bytes()), Err(TextProblem::Syntax { offset: 6, .. })));
        for good in [&b" {} "[..], b"[]", b"0", b"-0.5e+3", b"\"\\/\"", b"[true,false,null]", b"{\"a\":{\"b\":[]}}"] {
            assert!(check(good).is_ok(), "{:?}", String::from_utf8_lossy(good));
        }
        assert!(matches!(check(b"{\"a\":\"\xff\"} x"), Err(TextProblem::Syntax { offset: 10, .. })));
    }
}
