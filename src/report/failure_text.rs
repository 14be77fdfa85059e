//! A failure in words: the one place its fields become the text that the log line, the final
//! line, the termination message and the JSON's `last_failure` show. Nothing edits that text
//! afterwards; each says it with its own frame (`attempt 3: …`, `last failure: …`).

use crate::probe::Failure;
use crate::screen_text;
use crate::url;
use serde::Serialize;

/// The failure's text: the server whose link failed, the transport's class inside the keys'
/// link, the message, then each hint; after its summary and in parentheses, when it has one.
pub(crate) fn text(f: &Failure) -> String {
    let mut text = f.server.clone();
    if let Some(within) = f.within {
        text.push_str(within.as_str());
        text.push_str(": ");
    }
    text.push_str(&f.message);
    for hint in &f.hints {
        text.push_str("; ");
        text.push_str(hint);
    }
    match &f.summary {
        Some(summary) => format!("{summary} ({text})"),
        None if f.conclusive && f.class != crate::probe::FailureClass::Tls => {
            format!("waiting cannot fix this: {text}")
        }
        None => text,
    }
}

/// `class: text`: how the log and the final line name a failure.
pub(crate) fn line(f: &Failure) -> String {
    format!("{}: {}", f.class, text(f))
}

/// The JSON summary's `last_failure` (docs/reference.md, "JSON output"): the class, the link and
/// the text, and the facts a script may act on without parsing the text.
#[derive(Serialize)]
pub(crate) struct LastFailure<'a> {
    class: &'static str,
    /// `metadata`, `jwks` or `resource-metadata`.
    link: &'static str,
    message: String,
    /// The URL the failure is about (redacted), else `null`.
    url: Option<&'a str>,
    /// The status of a response that failed the attempt, else `null`.
    http_status: Option<u16>,
    /// Where an attempt that got no response stopped (`resolving`, `connecting`, …), else `null`.
    stage: Option<&'static str>,
    /// The host it was talking to then, else the URL's.
    host: Option<String>,
    /// The proxy the request went through (credentials hidden), else `null`.
    proxy: Option<&'a str>,
    /// Waiting cannot change it (docs/ready.md, "What waiting cannot fix").
    conclusive: bool,
}

impl<'a> LastFailure<'a> {
    pub(crate) fn of(f: &'a Failure) -> LastFailure<'a> {
        let url_host = || f.url.as_deref().and_then(|u| url::split(u).ok()).map(|p| p.bare_host().to_string());
        LastFailure {
            class: f.class.as_str(),
            link: f.link.as_str(),
            message: screen_text::bound(&text(f), screen_text::LINE_MAX).into_owned(),
            url: f.url.as_deref(),
            http_status: f.cause.http_status(),
            stage: f.cause.stage().map(|s| s.as_str()),
            host: f.cause.host().map(str::to_string).or_else(url_host),
            proxy: f.proxy.as_deref(),
            conclusive: f.conclusive,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Cause, FailureClass, Link};
    use crate::progress::Stage;

    #[test]
    fn the_text_is_the_server_the_inner_class_the_message_and_each_hint() {
        let cause = Cause::Network { stage: Stage::Connecting, host: "keys.example".into() };
        let f = Failure::of(FailureClass::Jwks, cause, "connection refused by keys.example").with(|f| {
            f.link = Link::Jwks;
            f.server = "authorization server https://as.example: ".into();
            f.within = Some(FailureClass::Connect);
            f.hints = vec!["first".into(), "second".into()];
        });
        assert_eq!(
            line(&f),
            "jwks: authorization server https://as.example: connect: connection refused by keys.example; first; second"
        );
        let f = f.with(|f| f.summary = Some("no key can exist: drop --check-jwks".into()));
        assert_eq!(
            text(&f),
            "no key can exist: drop --check-jwks (authorization server https://as.example: connect: connection refused \
             by keys.example; first; second)"
        );
    }
}
