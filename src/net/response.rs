//! A response as the gate reads it: the headers it uses, and the body to its end within the
//! bound, gzip decoded when it was asked for, as Go's transport hands it to its caller. Shared by
//! the GET ([`super::http`]) and the POST ([`super::post`]).

use super::gzip::{self, GzipProblem};
use crate::progress::{Progress, Stage};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A complete response: the body was read to its end, within the limit.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fetched {
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    /// A body encoding the server applied although none was asked for (no Accept-Encoding).
    pub(crate) content_encoding: Option<String>,
    /// The raw `Retry-After` header.
    pub(crate) retry_after: Option<String>,
    /// Every `WWW-Authenticate` field line, joined by ", " as RFC 9110 §5.3 allows (a protected
    /// resource's challenge names its metadata); bytes beyond ASCII (obs-text, §5.5) are kept as
    /// UTF-8 where they are, else replaced.
    pub(crate) www_authenticate: Option<String>,
    /// The body was not read: a `text/event-stream` never ends (an MCP server's SSE stream).
    pub(crate) stream: bool,
    /// The Location header, used to follow redirects.
    pub(crate) location: Option<String>,
    pub(crate) body: Vec<u8>,
    /// The URL that answered, after redirects.
    pub(crate) url: String,
    /// Which of the user's credentials went to that URL (`--token-file`, `--header-file`), if
    /// any: a 401 or 403 is then their refusal, not a missing one.
    pub(crate) credentials: Option<&'static str>,
}

/// Why a body was not read whole: the response's own problem, for the exchange to say as a
/// fetch failure (`fetch_error::body_failure`, which knows the stage it stopped at).
#[derive(Debug)]
pub(super) enum Unread {
    /// ureq's error reading the body, one over the bound included.
    Read(ureq::Error),
    /// The gzip body's problem.
    Gzip(GzipProblem),
}

/// A response read as far as the gate reads it: the headers it uses, and the body to its end
/// within `body_limit` bytes, gzip decoded when it was asked for (never an event stream's).
pub(super) fn read(
    mut response: ureq::http::Response<ureq::Body>,
    target: &str,
    host: &str,
    progress: &Arc<Progress>,
    asked_gzip: bool,
    body_limit: usize,
) -> Result<Fetched, Unread> {
    progress.enter(Stage::ReadingBody, host);
    let status = response.status().as_u16();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let encoding = header("content-encoding").filter(|e| !e.trim().eq_ignore_ascii_case("identity"));
    let gzipped = asked_gzip && encoding.as_deref().is_some_and(|e| e.eq_ignore_ascii_case("gzip"));
    let mut fetched = Fetched {
        status,
        content_type: header("content-type"),
        content_encoding: encoding.filter(|_| !gzipped),
        retry_after: header("retry-after"),
        www_authenticate: challenges(response.headers()),
        stream: false,
        // Its bytes, as Go takes a header: a Location beyond ASCII is followed, escaped
        // (`url::resolve`), not taken for none.
        location: response.headers().get("location").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        body: Vec::new(),
        url: target.to_string(),
        credentials: None,
    };
    if fetched.content_type.as_deref().is_some_and(is_event_stream) {
        fetched.stream = true;
        return Ok(fetched);
    }
    let limit = u64::try_from(body_limit).unwrap_or(u64::MAX);
    let body = response.body_mut().with_config().limit(limit);
    if !gzipped {
        fetched.body = body.read_to_vec().map_err(Unread::Read)?;
        return Ok(fetched);
    }
    // Decoded as it arrives: the compressed body is never held whole beside the decoded one.
    fetched.body = gzip::decode(body.reader(), body_limit).map_err(Unread::Gzip)?;
    Ok(fetched)
}

/// Every `WWW-Authenticate` field line as one list (RFC 9110 §5.3), obs-text kept.
fn challenges(headers: &ureq::http::HeaderMap) -> Option<String> {
    let lines: Vec<String> = headers
        .get_all("www-authenticate")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    if lines.is_empty() { None } else { Some(lines.join(", ")) }
}

fn is_event_stream(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// `Retry-After` (RFC 9110 §10.2.3) as a delay from `now`: delay-seconds or an HTTP-date (the
/// preferred form and both obsolete ones). A date in the past is no delay; garbage is ignored.
pub(crate) fn retry_after(raw: &str, now: SystemTime) -> Option<Duration> {
    let raw = raw.trim();
    if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(raw.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(raw).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field line counts, and bytes beyond ASCII (obs-text) survive (RFC 9110 §5.3, §5.5):
    /// the Python SDK finds a challenge in either line, and so must the gate.
    #[test]
    fn every_challenge_line_is_kept_with_its_obs_text() {
        use ureq::http::{HeaderMap, HeaderValue};
        let mut headers = HeaderMap::new();
        assert_eq!(challenges(&headers), None);
        headers.append("www-authenticate", HeaderValue::from_bytes(b"Basic realm=\"Z\xc3\xbcrich\"").unwrap());
        headers.append("www-authenticate", HeaderValue::from_static("Bearer resource_metadata=\"https://h/m\""));
        assert_eq!(challenges(&headers).unwrap(), "Basic realm=\"Zürich\", Bearer resource_metadata=\"https://h/m\"");
        assert!(is_event_stream("text/event-stream; charset=utf-8") && !is_event_stream("application/json"));
    }

    #[test]
    fn retry_after_in_every_form() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        let later = Duration::from_secs(63);
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(retry_after("99999999999999999999999", now), Some(Duration::from_secs(u64::MAX)));
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:50:40 GMT", now), Some(later));
        assert_eq!(retry_after("Sunday, 06-Nov-94 08:50:40 GMT", now), Some(later), "RFC 850");
        assert_eq!(retry_after("Sun Nov  6 08:50:40 1994", now), Some(later), "asctime");
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), Some(Duration::ZERO), "in the past");
        for garbage in ["", "-1", "1.5", "soon", "Sun, 06 Nov 1994"] {
            assert_eq!(retry_after(garbage, now), None, "{garbage:?}");
        }
    }
}
