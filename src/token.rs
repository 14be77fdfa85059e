//! The bearer token file: read when the configuration is checked, so a wrong path is an error at
//! once, and again before every attempt, because projected service-account tokens rotate.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::sync::Mutex;

/// Every token this process has read (projected tokens rotate): whatever the gate prints or
/// writes passes through [`scrub`], so none of them can appear there, wherever a server echoed it.
static READ: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Why a token file cannot be used.
#[derive(Debug)]
pub(crate) enum TokenProblem {
    Unreadable(std::io::Error),
    Empty,
    NotOneToken,
}

impl fmt::Display for TokenProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenProblem::Unreadable(e) => write!(f, "cannot be read ({e})"),
            TokenProblem::Empty => write!(f, "is empty"),
            TokenProblem::NotOneToken => write!(
                f,
                "holds white space, a control or non-ASCII character (a byte-order mark?) inside; it must hold \
                 one bearer token, printable ASCII only, which HTTP can send"
            ),
        }
    }
}

/// The token in `path`, without surrounding white space.
pub(crate) fn read(path: &Path) -> Result<String, TokenProblem> {
    let text = std::fs::read_to_string(path).map_err(TokenProblem::Unreadable)?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenProblem::Empty);
    }
    // HTTP field values cannot carry anything else: such a token would fail every attempt as a
    // malformed request, with no request sent.
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(TokenProblem::NotOneToken);
    }
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if !read.iter().any(|t| t == token) {
        read.push(token.to_string());
    }
    Ok(token.to_string())
}

/// `text` with every token this process has read replaced.
pub(crate) fn scrub(text: &str) -> Cow<'_, str> {
    let read = READ.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = Cow::Borrowed(text);
    for token in read.iter() {
        if text.contains(token.as_str()) {
            text = Cow::Owned(text.replace(token.as_str(), REDACTED));
        }
    }
    text
}

const REDACTED: &str = "[token redacted]";

/// The token taken out of a body before any excerpt of it is cut: a server may echo the
/// `Authorization` header into an error page, and a cut inside the token would leave a part of
/// it that [`scrub`] cannot recognise.
pub(crate) fn hide_in_body(body: &mut Vec<u8>, token: &str) {
    match std::str::from_utf8(body) {
        Ok(text) if text.contains(token) => *body = text.replace(token, REDACTED).into_bytes(),
        Ok(_) => {}
        // Not UTF-8, so never a document: dropped where the token might be in it.
        Err(_) if body.windows(token.len()).any(|w| w == token.as_bytes()) => body.clear(),
        Err(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(content: &str) -> Result<String, TokenProblem> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("wait-for-idp-token-{}-{n}", std::process::id()));
        std::fs::write(&dir, content).unwrap();
        let r = read(&dir);
        let _ = std::fs::remove_file(&dir);
        r
    }

    #[test]
    fn only_what_a_header_can_carry_is_a_token() {
        assert_eq!(read_str("  eyJ.a-b_c.d~+/=\n").unwrap(), "eyJ.a-b_c.d~+/=");
        for bad in ["\u{feff}eyJ.x.y", "eyJ x.y", "eyJ\tx", "t\u{f6}ken", "eyJ\u{a0}x"] {
            assert!(matches!(read_str(bad), Err(TokenProblem::NotOneToken)), "{bad:?}");
        }
        assert!(matches!(read_str(" \n"), Err(TokenProblem::Empty)));
    }

    #[test]
    fn every_token_read_is_scrubbed_from_output_and_bodies() {
        let token = read_str("scrub-me-0123456789abcdef").unwrap();
        assert_eq!(scrub(&format!("echo: Bearer {token}!")), "echo: Bearer [token redacted]!");
        assert!(matches!(scrub("nothing secret"), Cow::Borrowed(_)));
        let mut body = format!("<pre>{token}</pre>").into_bytes();
        hide_in_body(&mut body, &token);
        assert_eq!(body, b"<pre>[token redacted]</pre>");
        let mut binary = [&[0xff, 0xfe][..], token.as_bytes()].concat();
        hide_in_body(&mut binary, &token);
        assert!(binary.is_empty(), "a body that is not UTF-8 and holds the token is dropped");
    }
}
