//! One attempt: fetch the metadata, judge it, and say in one typed failure class what stood in
//! the way. The classes are what an operator greps for, so their names are part of the interface.

use crate::config::{Target, read_token};
use crate::discovery::{self, Document, DocumentProblem, Rules};
use crate::http::{FetchError, Fetched, HttpClient};
use crate::jwks::validate_jwks;
use crate::url;
use rustls::CertificateError;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Why an attempt did not pass. Ordered as a request progresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureClass {
    Dns,
    Connect,
    Timeout,
    Tls,
    HttpStatus,
    Body,
    Json,
    IssuerMismatch,
    MissingField,
    Jwks,
    Token,
}

impl FailureClass {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Dns => "dns",
            FailureClass::Connect => "connect",
            FailureClass::Timeout => "timeout",
            FailureClass::Tls => "tls",
            FailureClass::HttpStatus => "http-status",
            FailureClass::Body => "body",
            FailureClass::Json => "json",
            FailureClass::IssuerMismatch => "issuer-mismatch",
            FailureClass::MissingField => "missing-field",
            FailureClass::Jwks => "jwks",
            FailureClass::Token => "token",
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub class: FailureClass,
    pub detail: String,
    /// Retrying soon costs the provider nothing (the connection was refused outright), so the
    /// gate may poll fast and notice readiness within a fraction of a second.
    pub cheap: bool,
}

impl Failure {
    pub fn new(class: FailureClass, detail: impl Into<String>) -> Failure {
        Failure { class, detail: detail.into(), cheap: false }
    }
}

/// A passing attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ready {
    pub document: Document,
    /// Where the document was finally served from.
    pub url: String,
    /// Keys with a `kty` in the JWK Set, when `--check-jwks` fetched it.
    pub jwks_keys: Option<usize>,
}

/// What one attempt checks, beyond fetching.
#[derive(Clone, Debug)]
pub struct Checks {
    pub rules: Rules,
    pub check_jwks: bool,
    /// Re-read on every attempt: projected service-account tokens rotate.
    pub token_file: Option<PathBuf>,
}

/// Runs one attempt against `target` within `budget`.
pub fn probe(client: &HttpClient, target: &Target, checks: &Checks, budget: Duration) -> Result<Ready, Failure> {
    let started = Instant::now();
    let token = match &checks.token_file {
        None => None,
        Some(path) => Some(
            read_token(path)
                .map_err(|why| Failure::new(FailureClass::Token, format!("token file {} {why}", path.display())))?,
        ),
    };
    // The bearer token goes to the configured discovery origin only: never to a JWKS host
    // elsewhere (redirects never leave the origin either).
    let discovery_origin = url::split(&target.discovery_url).map(|p| p.origin()).ok();
    let headers_for = |url: &str| -> Vec<(&'static str, String)> {
        match &token {
            Some(t) if url::split(url).map(|p| p.origin()).ok() == discovery_origin => {
                vec![("authorization", format!("Bearer {t}"))]
            }
            _ => Vec::new(),
        }
    };
    let fetched =
        client.get(&target.discovery_url, budget, &headers_for(&target.discovery_url)).map_err(fetch_failure)?;
    let mut ready = judge(&fetched, &target.issuer, checks.rules)?;
    if checks.check_jwks {
        let left = budget.saturating_sub(started.elapsed());
        ready.jwks_keys = Some(check_jwks(client, &ready.document, left, &headers_for)?);
    }
    Ok(ready)
}

/// Fetches `jwks_uri` under the same TLS rules and requires a usable key. Every failure here is
/// class `jwks`, with the transport's class in the detail.
fn check_jwks(
    client: &HttpClient,
    document: &Document,
    budget: Duration,
    headers_for: &dyn Fn(&str) -> Vec<(&'static str, String)>,
) -> Result<usize, Failure> {
    let jwks = |detail: String| Failure::new(FailureClass::Jwks, detail);
    let Some(uri) = &document.jwks_uri else {
        return Err(jwks("the document has no jwks_uri to check".into()));
    };
    if let Err(p) = url::split(uri) {
        return Err(jwks(format!("jwks_uri {:?} {p}", url::redact(uri))));
    }
    let fetched = client.get(uri, budget, &headers_for(uri)).map_err(|e| {
        let f = fetch_failure(e);
        jwks(format!("{}: {}", f.class, f.detail))
    })?;
    if fetched.status != 200 {
        let hint = if fetched.status >= 500 { " (Dex answers 500 until its first signing key exists)" } else { "" };
        return Err(jwks(format!("{}{hint}", status_detail(&fetched))));
    }
    validate_jwks(&fetched.body, &document.id_token_signing_alg_values_supported)
        .map_err(|p| jwks(format!("{p} (from {})", url::redact(uri))))
}

/// Judges a complete response.
pub fn judge(fetched: &Fetched, issuer: &str, rules: Rules) -> Result<Ready, Failure> {
    if fetched.status != 200 {
        return Err(Failure::new(FailureClass::HttpStatus, status_detail(fetched)));
    }
    match discovery::validate_document(&fetched.body, issuer, rules) {
        Ok(document) => Ok(Ready { document, url: fetched.url.clone(), jwks_keys: None }),
        Err(problem) => {
            let class = match &problem {
                DocumentProblem::NotUtf8 { .. } => FailureClass::Body,
                DocumentProblem::Json(_) => FailureClass::Json,
                DocumentProblem::IssuerMismatch { .. } => FailureClass::IssuerMismatch,
                DocumentProblem::MissingField(_) => FailureClass::MissingField,
            };
            let mut detail = problem.to_string();
            if class == FailureClass::Json {
                detail.push_str(&format!(
                    " (Content-Type {}, starts {:?})",
                    fetched.content_type.as_deref().unwrap_or("absent"),
                    discovery::printable_excerpt(&fetched.body, 60)
                ));
            }
            Err(Failure::new(class, detail))
        }
    }
}

fn status_detail(fetched: &Fetched) -> String {
    let reason = ureq::http::StatusCode::from_u16(fetched.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let excerpt = discovery::printable_excerpt(&fetched.body, 100);
    let hint = match fetched.status {
        404 => {
            " (Keycloak answers 404 until the realm is imported; check the realm or application name if it persists)"
        }
        502..=504 => " (a gateway in front of a provider that is not serving yet)",
        401 | 403 => " (the metadata should be public; a gateway or network policy may be in the way)",
        _ => "",
    };
    let mut detail = format!("HTTP {} {reason} from {}{hint}", fetched.status, url::redact(&fetched.url));
    if !excerpt.is_empty() {
        detail.push_str(&format!(": {excerpt:?}"));
    }
    detail
}

/// Turns a transport failure into a class and an actionable detail.
pub fn fetch_failure(e: FetchError) -> Failure {
    match e {
        FetchError::Dns(d) => Failure::new(FailureClass::Dns, format!("name resolution failed: {d}")),
        FetchError::Refused(d) => Failure {
            class: FailureClass::Connect,
            detail: format!("connection refused by {d} (nothing listening yet)"),
            cheap: true,
        },
        FetchError::Connect(d) => Failure::new(FailureClass::Connect, d),
        FetchError::Timeout(d) => Failure::new(FailureClass::Timeout, d),
        FetchError::Tls { host, error } => Failure::new(FailureClass::Tls, tls_detail(&host, &error)),
        FetchError::TlsOther(d) => Failure::new(FailureClass::Tls, d),
        FetchError::Redirect(d) => Failure::new(FailureClass::HttpStatus, d),
        FetchError::Body(d) => Failure::new(FailureClass::Body, d),
        FetchError::Protocol(d) => Failure::new(FailureClass::Body, d),
    }
}

/// A TLS failure, said so that the reader knows what to change.
pub fn tls_detail(host: &str, error: &rustls::Error) -> String {
    match error {
        rustls::Error::InvalidCertificate(cert) => match cert {
            CertificateError::NotValidForNameContext { presented, .. } => format!(
                "certificate is for {}, not {host}; use the name it was issued for, or reissue it for {host}",
                if presented.is_empty() { "no name at all".to_string() } else { presented_names(presented) }
            ),
            CertificateError::NotValidForName => {
                format!("certificate is not valid for {host}; use the name it was issued for, or reissue it")
            }
            CertificateError::UnknownIssuer => format!(
                "certificate for {host} is signed by an unknown CA (or is self-signed); trust that CA with --ca-file. \
                 An ingress may still be showing its default certificate while the real one is issued"
            ),
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("certificate for {host} has expired ({error})")
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                format!("certificate for {host} is not valid yet; check the clocks ({error})")
            }
            _ => format!("certificate for {host} rejected: {error}"),
        },
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => format!(
            "TLS handshake with {host} failed ({error}); is this port speaking plain HTTP? Then use an http:// URL"
        ),
        _ => format!("TLS handshake with {host} failed: {error}"),
    }
}

/// rustls renders presented names as `DnsName("a.example")`; show just the names.
fn presented_names(presented: &[String]) -> String {
    presented
        .iter()
        .map(|p| {
            let inner = p.split_once('(').map_or(p.as_str(), |(_, rest)| rest.trim_end_matches(')'));
            inner.trim_matches('"').to_string()
        })
        .collect::<Vec<_>>()
        .join(", ")
}
