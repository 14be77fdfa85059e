//! The forms in which a server may echo a secret back, found in any text or body: a server
//! quotes the request it refused in a JSON error (`\/`, `\u002f`), a `Location` or a form
//! (`%2F`, `%252F`, `+`), a dump of an `Authorization: Basic` header or a wrapped envelope
//! (base64, standard or URL-safe, at any of the three alignments a secret inside a longer
//! string takes), and wraps long lines. Each secret is turned once into a few byte patterns (its
//! own bytes, and the base64 characters that depend on its bytes alone); each pattern is then
//! matched leniently: every byte may appear as itself or in any of those escapes, and a line
//! break (raw or escaped, with the indentation after it) may come between any two. The text is
//! never decoded, so there is nothing to map back: a match is a byte range of the text itself.

/// Base64 forms are looked for only for a secret this long: a shorter one's characters would
/// match unrelated text.
const BASE64_MIN: usize = 8;

/// The patterns to look for in place of `secret`: the secret itself, and for a long enough one
/// its base64 cores (standard and URL-safe alphabets, after 0, 1 and 2 bytes of something else).
/// A core holds only the characters that the secret's bits alone decide, so the padding and the
/// characters shared with a neighbour are not part of it; they carry at most 4 bits of the secret
/// at each end.
pub(crate) fn patterns(secret: &str) -> Vec<Vec<u8>> {
    let mut forms = vec![secret.as_bytes().to_vec()];
    if secret.len() >= BASE64_MIN {
        for k in 0..3 {
            let mut bytes = vec![0; k];
            bytes.extend_from_slice(secret.as_bytes());
            let encoded = crate::base64::encode(&bytes);
            let core = encoded[(8 * k).div_ceil(6)..8 * bytes.len() / 6].to_vec();
            let url_safe = core
                .iter()
                .map(|&b| match b {
                    b'+' => b'-',
                    b'/' => b'_',
                    b => b,
                })
                .collect();
            forms.extend([core, url_safe]);
        }
    }
    forms
}

/// The byte ranges of `text` where one of `patterns` appears in any form, left to right, not
/// overlapping.
pub(crate) fn find(text: &[u8], patterns: &[Vec<u8>]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match patterns.iter().find_map(|p| match_at(text, i, p)) {
            Some(end) => {
                found.push((i, end));
                i = end;
            }
            None => i += 1,
        }
    }
    found
}

/// Where `pattern` ends if it starts at `text[i]`.
fn match_at(text: &[u8], i: usize, pattern: &[u8]) -> Option<usize> {
    let first = *pattern.first()?;
    if !matches!(text.get(i), Some(&b) if b == first || b == b'%' || b == b'\\' || b == b'+') {
        return None;
    }
    let mut j = i;
    for (n, &c) in pattern.iter().enumerate() {
        if n > 0 {
            j = skip_breaks(text, j);
        }
        j = one_byte(text, j, c)?;
    }
    Some(j)
}

/// Past the byte `c` in any of its escapes at `text[j]`.
fn one_byte(text: &[u8], j: usize, c: u8) -> Option<usize> {
    let at = |k: usize| text.get(j + k).copied();
    let hex = |from: usize, len: usize| -> Option<u32> {
        let digits = text.get(j + from..j + from + len)?;
        let digits = std::str::from_utf8(digits).ok()?;
        u32::from_str_radix(digits, 16).ok().filter(|_| digits.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let is = |v: Option<u32>| v == Some(u32::from(c));
    match at(0)? {
        b if b == c => Some(j + 1),
        b'+' if c == b' ' => Some(j + 1),
        b'%' if is(hex(1, 2)) => Some(j + 3),
        b'%' if text.get(j + 1..j + 3) == Some(b"25") && is(hex(3, 2)) => Some(j + 5),
        b'\\' => match at(1)? {
            b if b == c && matches!(c, b'/' | b'"' | b'\\' | b'\'') => Some(j + 2),
            b'u' if at(2) == Some(b'{') => {
                let close = (3..10).find(|&k| at(k) == Some(b'}'))?;
                is(hex(3, close - 3)).then_some(j + close + 1)
            }
            b'u' if is(hex(2, 4)) => Some(j + 6),
            b'x' if is(hex(2, 2)) => Some(j + 4),
            _ => None,
        },
        _ => None,
    }
}

/// Past the line breaks at `text[j]`, raw or escaped (`\n`, `\r`, `\u000a`), with the spaces
/// and tabs that indent the next line.
fn skip_breaks(text: &[u8], mut j: usize) -> usize {
    loop {
        let rest = &text[j.min(text.len())..];
        let len = if rest.starts_with(b"\r") || rest.starts_with(b"\n") {
            1
        } else if rest.starts_with(b"\\n") || rest.starts_with(b"\\r") {
            2
        } else if rest.starts_with(b"\\u000a") || rest.starts_with(b"\\u000d") {
            6
        } else if rest.starts_with(b"\\u{a}") || rest.starts_with(b"\\u{d}") {
            5
        } else {
            return j;
        };
        j += len;
        while matches!(text.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "s3cr3t/tok+en=value";

    fn hidden(text: &str) -> String {
        let ranges = find(text.as_bytes(), &patterns(SECRET));
        let mut out = String::new();
        let mut at = 0;
        for (from, to) in ranges {
            out.push_str(&text[at..from]);
            out.push('#');
            at = to;
        }
        out.push_str(&text[at..]);
        out
    }

    /// Standard base64 with padding, as a server would echo it.
    fn b64(bytes: &[u8]) -> String {
        let mut s = String::from_utf8(crate::base64::encode(bytes)).unwrap();
        while !s.len().is_multiple_of(4) {
            s.push('=');
        }
        s
    }

    #[test]
    fn the_base64_encoder_is_rfc_4648() {
        for (plain, encoded) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(b64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn every_escape_and_line_break_is_found() {
        let percent = SECRET.replace('/', "%2F").replace('+', "%2b").replace('=', "%3D");
        let twice = SECRET.replace('/', "%252F");
        let json = SECRET.replace('/', "\\/").replace('+', "\\u002B");
        let rust = SECRET.replace('/', "\\u{2f}").replace('=', "\\x3d");
        let wrapped = format!("{}\n  {}", &SECRET[..7], &SECRET[7..]);
        let escaped_wrap = format!("{}\\r\\n{}", &SECRET[..3], &SECRET[3..]);
        for form in [SECRET.to_string(), percent, twice, json, rust, wrapped, escaped_wrap] {
            assert_eq!(hidden(&format!("echo: {form}!")), "echo: #!", "{form}");
        }
        assert_eq!(hidden("nothing here % \\ +"), "nothing here % \\ +");
        assert_eq!(hidden(&SECRET[..SECRET.len() - 1]), SECRET[..SECRET.len() - 1], "a part is no match");
    }

    #[test]
    fn base64_is_found_at_every_alignment_in_both_alphabets() {
        for prefix in ["", "a", "ab", "abc", "user:"] {
            let whole = b64(format!("{prefix}{SECRET}-and-more").as_bytes());
            let shown = hidden(&format!("Basic {whole}"));
            assert!(shown.contains('#'), "{prefix:?}: {shown}");
            assert!(
                shown.len() < "Basic ".len() + 16 + 10,
                "{prefix:?}: only the neighbours' characters stay: {shown}"
            );
            let url_safe = whole.replace('+', "-").replace('/', "_").trim_end_matches('=').to_string();
            assert!(hidden(&url_safe).contains('#'), "{prefix:?}: {url_safe}");
            let wrapped: Vec<String> = whole.as_bytes().chunks(5).map(|c| String::from_utf8_lossy(c).into()).collect();
            assert!(hidden(&wrapped.join("\n")).contains('#'), "{prefix:?} wrapped");
        }
    }
}
