//! JSON text as Go's encoding/json reads it, turned into text serde_json reads the same way.
//!
//! Go (v1, `json.Unmarshal`) first checks the whole text with its scanner (`checkValid`), then
//! decodes: invalid UTF-8 in a string becomes U+FFFD, one per byte; a `\u` escape of a lone
//! surrogate becomes U+FFFD; nesting may go 10,000 levels deep ("exceeded max depth" beyond); a
//! number in a member the client does not read is never converted, so `1e400` there is no error.
//! serde_json refuses all four (and recurses on the stack, 128 levels by default). So the text is
//! scanned here, without recursion, as Go's scanner does, and rewritten for serde_json: U+FFFD
//! for the invalid bytes and `\uFFFD` for the lone surrogates, as Go decodes them; `0` for a
//! number out of range; `null` for a value nested deeper than [`KEPT_DEPTH`], which no rule reads.
//!
//! The members the rules check stay strict: each top-level member whose name or value held
//! invalid UTF-8 or a lone surrogate is named in [`Text::repaired`], and [`super::open_object`]
//! fails a body where one of those is a member its caller checks.

use std::borrow::Cow;

/// Go's `maxNestingDepth`: 10,000 levels pass, the next fails.
pub(crate) const MAX_DEPTH: usize = 10_000;
/// Values nested deeper are checked here and handed to serde_json as `null`.
const KEPT_DEPTH: usize = 64;

/// What a repair replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    InvalidUtf8,
    LoneSurrogate,
}

/// A body's text, ready for serde_json.
#[derive(Debug)]
pub(crate) struct Text<'a> {
    pub(crate) text: Cow<'a, str>,
    /// Top-level members (named as the body spells them, Go-decoded) that held a repair.
    pub(crate) repaired: Vec<(String, Repair)>,
}

/// Why Go's scanner refuses the text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TextProblem {
    /// A syntax error at a byte offset of the original body.
    Syntax { offset: usize, why: &'static str },
    /// An invalid UTF-8 byte outside any string, at this offset of the original body.
    NotUtf8 { offset: usize },
    /// Deeper than Go's limit, at this offset.
    TooDeep { offset: usize },
}

/// Reads `body` as Go would, or says why Go's scanner refuses it.
pub(crate) fn read(body: &[u8]) -> Result<Text<'_>, TextProblem> {
    let (text, fixes) = match std::str::from_utf8(body) {
        Ok(text) => (Cow::Borrowed(text), Vec::new()),
        Err(_) => repair_utf8(body),
    };
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
        stack: Vec::new(),
        edits: Vec::new(),
        repaired: Vec::new(),
        fixes: fixes.iter().map(|&(at, _)| at).collect(),
        next_fix: 0,
        member: String::new(),
    };
    let original = |at: usize| match fixes.binary_search_by_key(&at, |&(new, _)| new) {
        Ok(i) => Err(fixes[i].1),
        Err(i) => Ok(i.checked_sub(1).map_or(at, |j| fixes[j].1 + 1 + (at - fixes[j].0 - 3))),
    };
    match scan.run() {
        Ok(()) => {}
        Err((at, why)) => {
            return Err(match (why, original(at)) {
                (_, Err(offset)) => TextProblem::NotUtf8 { offset },
                (TOO_DEEP, Ok(offset)) => TextProblem::TooDeep { offset },
                (why, Ok(offset)) => TextProblem::Syntax { offset, why },
            });
        }
    }
    let Scan { edits, repaired, .. } = scan;
    let text = if edits.is_empty() { text } else { Cow::Owned(apply(&text, &edits)) };
    Ok(Text { text, repaired })
}

const TOO_DEEP: &str = "nested deeper than 10000 levels";

/// The text with each invalid byte replaced by U+FFFD (Go replaces byte by byte), and where each
/// replacement went: (offset in the text, offset in the body).
fn repair_utf8(body: &[u8]) -> (Cow<'_, str>, Vec<(usize, usize)>) {
    let mut text = String::with_capacity(body.len() + 16);
    let mut fixes = Vec::new();
    let mut from = 0;
    for chunk in body.utf8_chunks() {
        text.push_str(chunk.valid());
        from += chunk.valid().len();
        for _ in chunk.invalid() {
            fixes.push((text.len(), from));
            text.push(char::REPLACEMENT_CHARACTER);
            from += 1;
        }
    }
    (Cow::Owned(text), fixes)
}

fn apply(text: &str, edits: &[(usize, usize, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for &(start, end, with) in edits {
        out.push_str(&text[from..start]);
        out.push_str(with);
        from = end;
    }
    out.push_str(&text[from..]);
    out
}

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
    /// Open containers, `{` or `[`, with where each began.
    stack: Vec<(u8, usize)>,
    /// Replacements for serde_json: (start, end, text), in order, none inside another.
    edits: Vec<(usize, usize, &'static str)>,
    repaired: Vec<(String, Repair)>,
    /// Where U+FFFD stands for an invalid byte, in order.
    fixes: Vec<usize>,
    next_fix: usize,
    /// The top-level member being read.
    member: String,
}

type ScanError = (usize, &'static str);

impl Scan<'_> {
    fn run(&mut self) -> Result<(), ScanError> {
        let mut expect = Expect::Value;
        loop {
            while self.at < self.bytes.len() && matches!(self.bytes[self.at], b' ' | b'\t' | b'\n' | b'\r') {
                self.at += 1;
            }
            let Some(&b) = self.bytes.get(self.at) else {
                return if expect == Expect::Done { Ok(()) } else { Err((self.at, "unexpected end of JSON input")) };
            };
            expect = match (expect, b) {
                (Expect::Done, _) => return Err((self.at, "invalid character after top-level value")),
                (Expect::ValueOrEnd, b']') | (Expect::NameOrEnd, b'}') => self.close(),
                (Expect::Value | Expect::ValueOrEnd, _) => self.value(b)?,
                (Expect::Name | Expect::NameOrEnd, b'"') => {
                    self.string(true)?;
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
                    if self.stack.last().is_some_and(|&(c, _)| c == b'{') { Expect::Name } else { Expect::Value }
                }
                (Expect::CommaOrEnd, b']' | b'}') if self.stack.last().is_some_and(|&(c, _)| c + 2 == b) => {
                    self.close()
                }
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
                self.stack.push((b, self.at));
                if self.stack.len() > MAX_DEPTH {
                    return Err((self.at, TOO_DEEP));
                }
                self.at += 1;
                return Ok(if b == b'{' { Expect::NameOrEnd } else { Expect::ValueOrEnd });
            }
            b'"' => self.string(false)?,
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
        if let Some((_, start)) = self.stack.pop()
            && self.stack.len() == KEPT_DEPTH
        {
            // Edits inside were not recorded (see `edit`): this one covers them.
            self.edits.push((start, self.at + 1, "null"));
        }
        self.at += 1;
        self.after_value()
    }

    /// Records a replacement for serde_json, unless the value around it is cut as a whole.
    fn edit(&mut self, start: usize, end: usize, with: &'static str) {
        if self.stack.len() <= KEPT_DEPTH {
            self.edits.push((start, end, with));
        }
    }

    fn repaired(&mut self, repair: Repair) {
        if !self.stack.is_empty() && !self.repaired.iter().any(|(m, r)| *m == self.member && *r == repair) {
            self.repaired.push((self.member.clone(), repair));
        }
    }

    /// A string from the opening quote at `at`; a top-level member's name when `name`.
    fn string(&mut self, name: bool) -> Result<(), ScanError> {
        let start = self.at;
        let mut i = start + 1;
        let mut repairs = Vec::new();
        loop {
            let Some(&b) = self.bytes.get(i) else {
                return Err((i, "unexpected end of JSON input in a string"));
            };
            match b {
                b'"' => break,
                b'\\' => match self.bytes.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                    Some(b'u') => {
                        let unit = hex4(self.bytes, i + 2).ok_or((i, "invalid \\u escape in a string"))?;
                        if (0xd800..0xe000).contains(&unit) {
                            let low = (unit < 0xdc00 && self.bytes.get(i + 6..i + 8) == Some(b"\\u"))
                                .then(|| hex4(self.bytes, i + 8))
                                .flatten();
                            if low.is_some_and(|l| (0xdc00..0xe000).contains(&l)) {
                                i += 12;
                                continue;
                            }
                            self.edit(i, i + 6, "\\uFFFD");
                            repairs.push(Repair::LoneSurrogate);
                        }
                        i += 6;
                    }
                    _ => return Err((i, "invalid escape in a string")),
                },
                0..0x20 => return Err((i, "invalid control character in a string")),
                _ => {
                    while self.fixes.get(self.next_fix).is_some_and(|&f| f < i) {
                        self.next_fix += 1;
                    }
                    if self.fixes.get(self.next_fix) == Some(&i) {
                        repairs.push(Repair::InvalidUtf8);
                    }
                    i += 1;
                }
            }
        }
        self.at = i + 1;
        if name && self.stack.len() == 1 {
            let raw = &self.bytes[start..=i];
            let plain = std::str::from_utf8(&raw[1..raw.len() - 1]).unwrap_or_default();
            // Escapes decoded as Go decodes them (serde_json agrees once surrogates are whole).
            self.member = serde_json::from_slice(raw).unwrap_or_else(|_| plain.to_string());
        }
        for repair in repairs {
            self.repaired(repair);
        }
        Ok(())
    }

    /// A number as RFC 8259 (and Go's scanner) has it; `0` for serde_json when out of range.
    fn number(&mut self) -> Result<(), ScanError> {
        let start = self.at;
        let digits = |s: &Self, from: usize| s.bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
        let mut i = start + usize::from(self.bytes[start] == b'-');
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
        // serde_json's own number reading says whether it is out of range (no other float
        // parser linked in for it).
        if serde_json::from_slice::<f64>(&self.bytes[start..i]).is_err() {
            self.edit(start, i, "0");
        }
        Ok(())
    }
}

/// Four hex digits at `at`, as a UTF-16 code unit.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits.iter().try_fold(0, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
}

/// Go's encoding/json name folding: each character to lower case, then to upper case, by the
/// simple (one-character) Unicode mappings, so `ſ` (long s) is an `S` and `ı` an `I`.
pub(crate) fn go_fold(name: &str) -> String {
    name.chars()
        .map(|c| {
            let lower = c.to_lowercase().next().unwrap_or(c);
            let mut upper = lower.to_uppercase();
            match (upper.next(), upper.next()) {
                (Some(u), None) => u,
                _ => lower,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(body: &[u8]) -> String {
        read(body).unwrap().text.into_owned()
    }

    #[test]
    fn invalid_utf8_and_lone_surrogates_read_as_go_reads_them() {
        let read_as = |body: &[u8]| serde_json::from_str::<serde_json::Value>(&text(body)).unwrap();
        assert_eq!(read_as(b"{\"a\":\"x\xff\xfey\"}")["a"], "x\u{fffd}\u{fffd}y", "one U+FFFD a byte");
        assert_eq!(read_as(br#"{"a":"\ud800"}"#)["a"], "\u{fffd}");
        assert_eq!(read_as(br#"{"a":"\udc00\ud800x"}"#)["a"], "\u{fffd}\u{fffd}x");
        assert_eq!(read_as(br#"{"a":"\ud800\u0041"}"#)["a"], "\u{fffd}A");
        assert_eq!(read_as(br#"{"a":"\ud83d\ude00"}"#)["a"], "😀", "a pair stays a pair");
        assert_eq!(read_as(br#"{"a":[1e400,-1e999,1e-999]}"#)["a"], serde_json::json!([0, 0, 0.0]));
        let repaired = read(b"{\"issuer\":\"\xff\",\"b\":\"\\udfff\",\"c\":{\"d\":[\"\xff\"]}}").unwrap().repaired;
        assert_eq!(
            repaired,
            [
                ("issuer".to_string(), Repair::InvalidUtf8),
                ("b".to_string(), Repair::LoneSurrogate),
                ("c".to_string(), Repair::InvalidUtf8)
            ]
        );
        assert!(read(br#"{"\u0069ssuer":"\ud800"}"#).unwrap().repaired[0].0 == "issuer", "names decoded");
    }

    #[test]
    fn nesting_as_deep_as_go_allows_and_no_deeper() {
        let nested = |depth: usize| format!("{{\"a\":{}1{}}}", "[".repeat(depth - 1), "]".repeat(depth - 1));
        let body = nested(MAX_DEPTH);
        let deep = read(body.as_bytes()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&deep.text).unwrap();
        assert!(value["a"].is_array());
        assert!(matches!(read(nested(MAX_DEPTH + 1).as_bytes()), Err(TextProblem::TooDeep { .. })));
        // A cut value is still checked.
        let broken = format!("{{\"a\":{}1,]{}}}", "[".repeat(100), "]".repeat(99));
        assert!(matches!(read(broken.as_bytes()), Err(TextProblem::Syntax { .. })));
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
            assert!(matches!(read(bad), Err(TextProblem::Syntax { .. })), "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(read(b" \xff{}").unwrap_err(), TextProblem::NotUtf8 { offset: 1 });
        assert_eq!(read(b"{\"a\":\"\xff\"} \xfe").unwrap_err(), TextProblem::NotUtf8 { offset: 10 });
        for good in [&b" {} "[..], b"[]", b"0", b"-0.5e+3", b"\"\\/\"", b"[true,false,null]", b"{\"a\":{\"b\":[]}}"] {
            assert!(read(good).is_ok(), "{:?}", String::from_utf8_lossy(good));
        }
        assert!(matches!(read(b"{\"a\":\"\xff\"} x"), Err(TextProblem::Syntax { offset: 10, .. })));
    }
}
