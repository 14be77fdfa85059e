//! The secrets read from files: the bearer token file and the header files. Each is read when the
//! configuration is checked, so a wrong path or content is an error at once, and again before
//! every attempt, because projected service-account tokens and mounted secrets rotate. Every
//! secret read is remembered, so that nothing the gate prints or writes can carry it.

use std::borrow::Cow;
use std::fmt;
use std::io::Read as _;
use std::path::Path;
use std::sync::Mutex;

use crate::secret_forms;

/// Every secret this process has read (tokens and header values rotate), with the forms a server
/// may echo it in ([`secret_forms::patterns`], computed once) and what replaces it: whatever the
/// gate prints or writes passes through [`scrub`], so none of them can appear there, wherever
/// and however a server echoed it.
static READ: Mutex<Vec<Remembered>> = Mutex::new(Vec::new());

struct Remembered {
    secret: String,
    patterns: Vec<Vec<u8>>,
    replacement: &'static str,
    /// Matched only where no letter or digit touches it: a secret shorter than
    /// [`SCRUBBED_VALUE_MIN`] (a proxy username such as `user`) is part of many words.
    whole_word: bool,
}

/// What a token is replaced with.
pub(crate) const TOKEN_REDACTED: &str = "[token redacted]";
/// What a header file's value is replaced with.
pub(crate) const HEADER_REDACTED: &str = "[header value redacted]";

/// The shortest header value [`scrub`] replaces. A value that short is no secret worth the name
/// (Cloudflare Access's client secret has 64 characters), and replacing every `yes` or `1` in
/// the log would garble it; the gate itself never prints a value of any length.
pub(crate) const SCRUBBED_VALUE_MIN: usize = 8;

/// The longest header value read: servers refuse a request whose fields pass 8 KiB (431).
pub(crate) const HEADER_VALUE_MAX: usize = 8 * 1024;

/// The longest token file read, for the same reason (a projected service-account token has one
/// or two KiB): `/dev/zero` or a wrong file must not be read until memory runs out.
pub(crate) const TOKEN_MAX: usize = 8 * 1024;

/// Reads a file of at most `max` bytes, `what` naming it in the error. What is not a regular
/// file once symbolic links are followed (Kubernetes mounts Secrets and ConfigMaps as links) is
/// refused: a FIFO would block the gate for ever, before its deadline starts, and a device has
/// no end. The file is opened non-blocking and checked on the open descriptor, so that not even
/// a race with whoever replaces it can block; a regular file reads the same either way.
pub(crate) fn read_regular(path: &Path, max: usize, what: &str) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind};
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let (error, it) = match () {
            () if kind.is_dir() => (ErrorKind::IsADirectory, "it is a directory"),
            () if kind.is_fifo() => (ErrorKind::InvalidInput, "it is a FIFO, not a regular file"),
            () => (ErrorKind::InvalidInput, "it is a device or socket, not a regular file"),
        };
        return Err(Error::new(error, it));
    }
    // Sized as the file says, as `fs::read` does: a system store is hundreds of files.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(max).min(max) + 1);
    file.take(max as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > max {
        let (size, unit) = if max >= 1 << 20 { (max >> 20, "MiB") } else { (max >> 10, "KiB") };
        return Err(Error::new(ErrorKind::FileTooLarge, format!("it holds over {size} {unit}, the most for {what}")));
    }
    Ok(bytes)
}

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
    let bytes = read_regular(path, TOKEN_MAX, "a token file").map_err(TokenProblem::Unreadable)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| TokenProblem::NotOneToken)?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenProblem::Empty);
    }
    // HTTP field values cannot carry anything else: such a token would fail every attempt as a
    // malformed request, with no request sent.
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(TokenProblem::NotOneToken);
    }
    remember(token, TOKEN_REDACTED);
    Ok(token.to_string())
}

/// What a proxy's password is replaced with.
pub(crate) const PROXY_PASSWORD_REDACTED: &str = "[proxy password redacted]";

/// What a proxy's username is replaced with.
pub(crate) const PROXY_USER_REDACTED: &str = "[proxy user redacted]";
/// What a proxy's `user:password` pair is replaced with, and its `Basic` encoding.
pub(crate) const PROXY_CREDENTIALS_REDACTED: &str = "[proxy credentials redacted]";

/// Remembers a proxy's credentials, at any length (issue 35: a proxy that quotes what it
/// received put a username that was an API key, and `ops:hunter2` as `Basic b3BzOmh1bnRlcjI=`,
/// into the log): the pair, with the exact base64 that `Basic` sends whatever its length, then
/// the username and the password alone. A very short one garbles the log where it matches, which
/// is the lesser harm.
pub(crate) fn remember_proxy_credentials(user: &str, password: &str) {
    let pair = format!("{user}:{password}");
    // The exact form first: where it matches, it takes the padding that a core leaves.
    let mut patterns = vec![basic_credentials(user, password).into_bytes()];
    patterns.extend(secret_forms::patterns(&pair));
    remember_as(pair, patterns, PROXY_CREDENTIALS_REDACTED);
    for (part, replacement) in [(user, PROXY_USER_REDACTED), (password, PROXY_PASSWORD_REDACTED)] {
        if !part.is_empty() {
            remember(part, replacement);
        }
    }
}

/// `user:password` in standard base64 with padding, as `Basic` sends it (Go's `basicAuth`).
pub(crate) fn basic_credentials(user: &str, password: &str) -> String {
    crate::base64::encode_padded(format!("{user}:{password}").as_bytes())
}

fn remember(secret: &str, replacement: &'static str) {
    remember_as(secret.to_string(), secret_forms::patterns(secret), replacement);
}

fn remember_as(secret: String, patterns: Vec<Vec<u8>>, replacement: &'static str) {
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if !read.iter().any(|r| r.secret == secret) {
        let whole_word = secret.len() < SCRUBBED_VALUE_MIN;
        read.push(Remembered { secret, patterns, replacement, whole_word });
    }
}

/// Why a header file cannot be used.
#[derive(Debug)]
pub(crate) enum HeaderValueProblem {
    Unreadable(std::io::Error),
    Empty,
    TooLong,
    NotOneLine,
}

impl fmt::Display for HeaderValueProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderValueProblem::Unreadable(e) => write!(f, "cannot be read ({e})"),
            HeaderValueProblem::Empty => write!(f, "is empty; it must hold the header's value"),
            HeaderValueProblem::TooLong => {
                write!(f, "holds more than {HEADER_VALUE_MAX} bytes; servers refuse header fields that long")
            }
            HeaderValueProblem::NotOneLine => write!(
                f,
                "holds a line break, a control or non-ASCII character (a byte-order mark?); it must hold one \
                 line of printable ASCII (spaces allowed inside), which HTTP can send"
            ),
        }
    }
}

/// The header value in `path`, without surrounding white space: one line of printable ASCII,
/// spaces and tabs allowed inside (RFC 9110 §5.5, without obs-text). A line break inside could
/// only be a mistake or an attempt to add a field of its own.
pub(crate) fn read_header_value(path: &Path) -> Result<String, HeaderValueProblem> {
    // White space around the value is not counted; a file with more than that much is too long.
    let bytes = match read_regular(path, HEADER_VALUE_MAX + 1024, "a header file") {
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => return Err(HeaderValueProblem::TooLong),
        read => read.map_err(HeaderValueProblem::Unreadable)?,
    };
    let text = std::str::from_utf8(&bytes).map_err(|_| HeaderValueProblem::NotOneLine)?;
    let value = text.trim();
    if value.is_empty() {
        return Err(HeaderValueProblem::Empty);
    }
    if value.len() > HEADER_VALUE_MAX {
        return Err(HeaderValueProblem::TooLong);
    }
    if !value.bytes().all(|b| b.is_ascii_graphic() || b == b' ' || b == b'\t') {
        return Err(HeaderValueProblem::NotOneLine);
    }
    if value.len() >= SCRUBBED_VALUE_MIN {
        remember(value, HEADER_REDACTED);
    }
    Ok(value.to_string())
}

/// `text` with every secret this process has read replaced, in every form a server may echo it.
pub(crate) fn scrub(text: &str) -> Cow<'_, str> {
    let read = READ.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = Cow::Borrowed(text);
    for r in read.iter() {
        if let Some(replaced) = replace(text.as_bytes(), &r.patterns, r.replacement, r.whole_word) {
            // Every match starts and ends at an ASCII byte, so the rest stays UTF-8.
            text = Cow::Owned(String::from_utf8(replaced).unwrap_or_default());
        }
    }
    text
}

/// `bytes` with every form of the patterns replaced (`whole_word`: only where no letter or digit
/// touches it), if there was one.
fn replace(bytes: &[u8], patterns: &[Vec<u8>], replacement: &str, whole_word: bool) -> Option<Vec<u8>> {
    let word = |at: Option<&u8>| at.is_some_and(u8::is_ascii_alphanumeric);
    let mut found = secret_forms::find(bytes, patterns);
    if whole_word {
        found.retain(|&(from, to)| !word(from.checked_sub(1).and_then(|i| bytes.get(i))) && !word(bytes.get(to)));
    }
    if found.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for (from, to) in found {
        out.extend_from_slice(&bytes[at..from]);
        out.extend_from_slice(replacement.as_bytes());
        at = to;
    }
    out.extend_from_slice(&bytes[at..]);
    Some(out)
}

/// A secret taken out of a body before any excerpt of it is cut, replaced by `replacement`, in
/// every form a server may echo it: a server may echo the request's headers into an error page,
/// and a cut inside the secret would leave a part of it that [`scrub`] cannot recognise.
pub(crate) fn hide_in_body(body: &mut Vec<u8>, secret: &str, replacement: &str) {
    if let Some(replaced) = replace(body, &secret_forms::patterns(secret), replacement, false) {
        // Not UTF-8, so never a document: dropped where the secret might be in it.
        *body = if std::str::from_utf8(body).is_ok() { replaced } else { Vec::new() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(content: &str) -> Result<String, TokenProblem> {
        with_file(content, read)
    }

    fn with_file<T>(content: &str, read: impl FnOnce(&Path) -> T) -> T {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("wait-for-idp-token-{}-{n}", std::process::id()));
        std::fs::write(&dir, content).unwrap();
        let r = read(&dir);
        let _ = std::fs::remove_file(&dir);
        r
    }

    #[test]
    fn a_header_value_is_one_line_http_can_send() {
        let value = |content: &str| with_file(content, read_header_value);
        assert_eq!(value("  Bearer abc def\n").unwrap(), "Bearer abc def", "spaces inside are a value's");
        assert_eq!(value("a\tb").unwrap(), "a\tb");
        for bad in ["a\r\nX-Injected: 1", "line one\nline two", "\u{feff}value", "v\u{f6}lue", "nul\0byte"] {
            assert!(matches!(value(bad), Err(HeaderValueProblem::NotOneLine)), "{bad:?}");
        }
        assert!(matches!(value(" \n"), Err(HeaderValueProblem::Empty)));
        assert!(matches!(value(&"x".repeat(HEADER_VALUE_MAX + 1)), Err(HeaderValueProblem::TooLong)));
        assert!(matches!(value(&"x".repeat(HEADER_VALUE_MAX * 4)), Err(HeaderValueProblem::TooLong)), "read bounded");
        let secret = value("header-secret-0123456789").unwrap();
        assert_eq!(scrub(&format!("echo {secret}")), "echo [header value redacted]");
        let short = value("yes").unwrap();
        assert_eq!(scrub(&format!("echo {short}")), "echo yes", "too short to be a secret, kept");
    }

    #[test]
    fn proxy_credentials_are_scrubbed_at_any_length_short_ones_as_whole_words() {
        // Other tests remember other credentials (`user`) in this process: the text avoids them.
        remember_proxy_credentials("zx", "hunter2");
        assert_eq!(
            scrub("407 zx not allowed (Basic eng6aHVudGVyMg==)"),
            "407 [proxy user redacted] not allowed (Basic [proxy credentials redacted])"
        );
        assert_eq!(scrub("zxcv hunter2x 2zx"), "zxcv hunter2x 2zx", "inside words: other text");
        assert_eq!(scrub("pw=hunter2; 'zx'"), "pw=[proxy password redacted]; '[proxy user redacted]'");
    }

    #[test]
    fn only_a_regular_file_is_read_and_only_up_to_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let e = read_regular(&fifo, 10, "x").unwrap_err();
        assert!(e.to_string().contains("a FIFO, not a regular file"), "{e}");
        let e = read_regular(Path::new("/dev/zero"), 10, "x").unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        assert_eq!(read_regular(dir.path(), 10, "x").unwrap_err().kind(), std::io::ErrorKind::IsADirectory);
        let file = dir.path().join("f");
        std::fs::write(&file, "0123456789").unwrap();
        assert_eq!(read_regular(&file, 10, "x").unwrap(), b"0123456789");
        let e = read_regular(&file, 9, "a thing").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        std::fs::write(&file, [b'x'; 1025]).unwrap();
        let e = read_regular(&file, 1024, "x").unwrap_err();
        assert_eq!(e.to_string(), "it holds over 1 KiB, the most for x");
        std::fs::write(&file, "0123456789").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_regular(&link, 10, "x").unwrap(), b"0123456789", "a link to a regular file is one");
        assert!(read_regular(&file, 8 << 10, "x").is_ok());
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
        hide_in_body(&mut body, &token, TOKEN_REDACTED);
        assert_eq!(body, b"<pre>[token redacted]</pre>");
        let mut binary = [&[0xff, 0xfe][..], token.as_bytes()].concat();
        hide_in_body(&mut binary, &token, TOKEN_REDACTED);
        assert!(binary.is_empty(), "a body that is not UTF-8 and holds the token is dropped");
    }
}
