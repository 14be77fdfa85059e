//! A value of a checked JSON text ([`super::json_text::check`]), read where it lies in the body,
//! as Go's encoding/json decodes into a struct: a member is found by skipping the others unbuilt,
//! a string decoded (escapes, and U+FFFD for each invalid UTF-8 byte and each lone surrogate)
//! only when a rule reads it.
//!
//! The members the rules check stay strict: [`Json::repair`] says whether a value held text Go
//! reads as U+FFFD, and [`super::open_object`] fails a body where a member its caller checks did.

use std::borrow::Cow;

/// What a repair replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    InvalidUtf8,
    LoneSurrogate,
}

/// Four hex digits at `at`, as a UTF-16 code unit.
pub(super) fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits.iter().try_fold(0, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
}

/// Past JSON's four whitespace bytes from `at`.
pub(super) fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Where the string starting at `at` ends (after its closing quote), in checked text.
fn string_end(bytes: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Where the value starting at `at` ends, in checked text: skipped, not built.
fn value_end(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(b'"') => string_end(bytes, at),
        Some(b'{' | b'[') => {
            let (mut depth, mut i) = (0usize, at);
            while let Some(&b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = string_end(bytes, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            bytes.len()
        }
        _ => {
            let word = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.');
            at + bytes.get(at..).unwrap_or_default().iter().take_while(|b| word(b)).count()
        }
    }
}

/// One value of a checked text, as the bytes it spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Json<'a>(&'a [u8]);

impl<'a> Json<'a> {
    /// The value starting at `at` of a checked text.
    pub(super) fn at(text: &'a [u8], at: usize) -> Json<'a> {
        Json(text.get(at..value_end(text, at)).unwrap_or_default())
    }

    /// Its JSON type, as a message names it.
    pub(crate) fn type_name(self) -> &'static str {
        match self.0.first() {
            Some(b'n') => "null",
            Some(b't' | b'f') => "a boolean",
            Some(b'"') => "a string",
            Some(b'[') => "an array",
            Some(b'{') => "an object",
            _ => "a number",
        }
    }

    pub(crate) fn is_null(self) -> bool {
        self.0.first() == Some(&b'n')
    }

    pub(crate) fn as_bool(self) -> Option<bool> {
        match self.0.first() {
            Some(b't') => Some(true),
            Some(b'f') => Some(false),
            _ => None,
        }
    }

    pub(crate) fn is_string(self) -> bool {
        self.0.first() == Some(&b'"')
    }

    pub(crate) fn is_object(self) -> bool {
        self.0.first() == Some(&b'{')
    }

    /// The text as sent.
    pub(crate) fn raw(self) -> &'a [u8] {
        self.0
    }

    /// A string, decoded as Go decodes it.
    pub(crate) fn as_str(self) -> Option<Cow<'a, str>> {
        self.is_string().then(|| decode(self.0))
    }

    /// An array's items.
    pub(crate) fn items(self) -> Option<Items<'a>> {
        (self.0.first() == Some(&b'[')).then_some(Items { bytes: self.0, at: 1 })
    }

    /// An object's members, in order, duplicates kept.
    pub(crate) fn members(self) -> Option<Members<'a>> {
        self.is_object().then_some(Members(Items { bytes: self.0, at: 1 }))
    }

    /// An object's member named exactly `name`, the last if several (as a map built from the
    /// text keeps it); `None` for anything but an object.
    pub(crate) fn get(self, name: &str) -> Option<Json<'a>> {
        self.members()?.filter(|(n, _)| n.is(name)).last().map(|(_, v)| v)
    }

    /// The first text in the value that Go reads as U+FFFD: an invalid UTF-8 byte, or a `\u`
    /// escape of a lone surrogate (in a string, a member's name included).
    pub(crate) fn repair(self) -> Option<Repair> {
        let bytes = self.0;
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            match b {
                b'\\' if bytes.get(i + 1) == Some(&b'u') => {
                    let (unit, len) = escaped_unit(bytes, i);
                    if unit.is_none() {
                        return Some(Repair::LoneSurrogate);
                    }
                    i += len;
                }
                b'\\' => i += 2,
                0x80.. => match char_len(bytes, i) {
                    0 => return Some(Repair::InvalidUtf8),
                    len => i += len,
                },
                _ => i += 1,
            }
        }
        None
    }
}

/// A member's name as sent (quotes included).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Name<'a>(&'a [u8]);

impl<'a> Name<'a> {
    /// Decoded as Go decodes it.
    pub(crate) fn decoded(self) -> Cow<'a, str> {
        decode(self.0)
    }

    /// Whether it decodes to exactly `name`.
    pub(crate) fn is(self, name: &str) -> bool {
        let inner = &self.0[1..self.0.len() - 1];
        if inner.iter().any(|&b| b == b'\\' || b >= 0x80) { self.decoded() == name } else { inner == name.as_bytes() }
    }

    /// Folded as Go's encoding/json matches a name to a struct field ([`go_fold`]), up to ASCII
    /// case: Go reads it as the ASCII field `f` when `fold().eq_ignore_ascii_case(f)`.
    pub(crate) fn fold(self) -> Cow<'a, str> {
        let name = self.decoded();
        if name.is_ascii() { name } else { Cow::Owned(go_fold(&name)) }
    }
}

/// An array's items, in order.
#[derive(Clone, Debug)]
pub(crate) struct Items<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Json<'a>;

    fn next(&mut self) -> Option<Json<'a>> {
        let start = skip_space(self.bytes, self.at);
        if matches!(self.bytes.get(start), None | Some(b']' | b'}')) {
            return None;
        }
        let end = value_end(self.bytes, start);
        self.at = skip_space(self.bytes, end);
        if self.bytes.get(self.at) == Some(&b',') {
            self.at += 1;
        }
        Some(Json(self.bytes.get(start..end).unwrap_or_default()))
    }
}

/// An object's members, in order.
#[derive(Clone, Debug)]
pub(crate) struct Members<'a>(Items<'a>);

impl<'a> Iterator for Members<'a> {
    type Item = (Name<'a>, Json<'a>);

    fn next(&mut self) -> Option<(Name<'a>, Json<'a>)> {
        let name = self.0.next()?;
        // The colon, then the value.
        self.0.at = skip_space(self.0.bytes, self.0.at) + 1;
        let value = self.0.next()?;
        (name.0.len() >= 2).then_some((Name(name.0), value))
    }
}

/// The UTF-16 unit of the `\u` escape at `at` and how many bytes it takes: a pair of surrogate
/// escapes is one character of 12 bytes, a lone surrogate `None`.
fn escaped_unit(bytes: &[u8], at: usize) -> (Option<char>, usize) {
    let unit = hex4(bytes, at + 2).unwrap_or(0xfffd);
    if !(0xd800..0xe000).contains(&unit) {
        return (char::from_u32(unit), 6);
    }
    let low = (unit < 0xdc00 && bytes.get(at + 6..at + 8) == Some(b"\\u")).then(|| hex4(bytes, at + 8)).flatten();
    match low {
        Some(low) if (0xdc00..0xe000).contains(&low) => {
            (char::from_u32(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)), 12)
        }
        _ => (None, 6),
    }
}

/// The length of the UTF-8 character at `at`, or 0 if the byte there starts none.
fn char_len(bytes: &[u8], at: usize) -> usize {
    let window = bytes.get(at..bytes.len().min(at + 4)).unwrap_or_default();
    window.utf8_chunks().next().and_then(|c| c.valid().chars().next()).map_or(0, char::len_utf8)
}

/// A string (quotes included) as Go decodes it: escapes, a lone surrogate and each invalid
/// UTF-8 byte as U+FFFD. Borrowed when it holds neither an escape nor an invalid byte.
fn decode(quoted: &[u8]) -> Cow<'_, str> {
    let inner = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default();
    if !inner.contains(&b'\\')
        && let Ok(text) = std::str::from_utf8(inner)
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let run = inner[i..].iter().position(|&b| b == b'\\').map_or(inner.len(), |n| i + n);
        for chunk in inner[i..run].utf8_chunks() {
            out.push_str(chunk.valid());
            out.extend(chunk.invalid().iter().map(|_| char::REPLACEMENT_CHARACTER));
        }
        i = run;
        let Some(&escape) = inner.get(i + 1) else { break };
        let (c, len) = match escape {
            b'u' => escaped_unit(inner, i),
            b'b' => (Some('\u{8}'), 2),
            b'f' => (Some('\u{c}'), 2),
            b'n' => (Some('\n'), 2),
            b'r' => (Some('\r'), 2),
            b't' => (Some('\t'), 2),
            other => (Some(char::from(other)), 2),
        };
        out.push(c.unwrap_or(char::REPLACEMENT_CHARACTER));
        i += len;
    }
    Cow::Owned(out)
}

/// Go's encoding/json name folding: each character to lower case, then to upper case, by the
/// simple (one-character) Unicode mappings, so `ſ` (long s) is an `S` and `ı` an `I`.
fn go_fold(name: &str) -> String {
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
    use crate::rules::json_text::check;

    fn member(body: &[u8], name: &str) -> String {
        check(body).unwrap().get(name).unwrap().as_str().unwrap().into_owned()
    }

    #[test]
    fn invalid_utf8_and_lone_surrogates_read_as_go_reads_them() {
        assert_eq!(member(b"{\"a\":\"x\xff\xfey\"}", "a"), "x\u{fffd}\u{fffd}y", "one U+FFFD a byte");
        assert_eq!(member(b"{\"a\":\"\xe2\x82A\"}", "a"), "\u{fffd}\u{fffd}A", "a cut character too");
        assert_eq!(member(br#"{"a":"\ud800"}"#, "a"), "\u{fffd}");
        assert_eq!(member(br#"{"a":"\udc00\ud800x"}"#, "a"), "\u{fffd}\u{fffd}x");
        assert_eq!(member(br#"{"a":"\ud800\u0041"}"#, "a"), "\u{fffd}A");
        assert_eq!(member(br#"{"a":"\ud83d\ude00"}"#, "a"), "😀", "a pair stays a pair");
        assert_eq!(member(br#"{"a":"\"\\\/\b\f\n\r\t\u00e9"}"#, "a"), "\"\\/\u{8}\u{c}\n\r\t\u{e9}");
        assert_eq!(member(br#"{"\u0061":"1","a":"2"}"#, "a"), "2", "names decoded, the last kept");
        assert_eq!(member(br#"{"\\u0061":"1","\u0061":"2"}"#, "\\u0061"), "1", "an escape is no text");
        let repair = |body: &[u8], name: &str| check(body).unwrap().get(name).unwrap().repair();
        assert_eq!(repair(b"{\"a\":[1e400,{\"k\\ud800\":\"\xff\"}]}", "a"), Some(Repair::LoneSurrogate));
        assert_eq!(repair(b"{\"a\":{\"b\":[\"\xff\",\"\\udfff\"]}}", "a"), Some(Repair::InvalidUtf8));
        assert_eq!(repair("{\"a\":\"\\\\ud800 \\ud83d\\ude00 é\"}".as_bytes(), "a"), None);
    }

    #[test]
    fn values_are_read_in_place_and_skipped_whole() {
        let doc = check(br#" {"a" : [1, {"b":"]}"}, [[]], -0.5e+3, "x\"]"] , "c":{"d":null,"e":true}} "#).unwrap();
        let items: Vec<&[u8]> = doc.get("a").unwrap().items().unwrap().map(Json::raw).collect();
        assert_eq!(items, [&b"1"[..], br#"{"b":"]}"}"#, b"[[]]", b"-0.5e+3", br#""x\"]""#]);
        let c = doc.get("c").unwrap();
        assert!(c.get("d").unwrap().is_null() && c.get("e").unwrap().as_bool() == Some(true));
        assert_eq!(c.members().unwrap().count(), 2);
        assert_eq!((doc.get("x"), doc.get("a").unwrap().get("b")), (None, None));
        assert_eq!(check(b"[]").unwrap().items().unwrap().count(), 0);
        assert_eq!(check(b"{ }").unwrap().members().unwrap().count(), 0);
    }
}
