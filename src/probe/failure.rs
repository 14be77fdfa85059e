//! Why an attempt did not pass, in one typed class an operator can grep for, and how each thing
//! that goes wrong is classed: a transport error, a status, a body the client would refuse, a
//! redirect the gate will not follow. The class names are part of the interface (the log, the
//! JSON, the termination message).

use crate::net::http::FetchError;
use crate::net::response::Fetched;
use crate::progress::Stage;
use crate::settings::Id;
use crate::url;
use std::fmt;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::Duration;

/// Why an attempt did not pass. Ordered as a request progresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FailureClass {
    /// The gate itself ran out of something (file descriptors, memory): not the provider's doing.
    LocalResource,
    Dns,
    /// The proxy the client's environment sends the request through failed, or cannot be used.
    Proxy,
    Connect,
    Timeout,
    Tls,
    HttpStatus,
    Body,
    Json,
    IssuerMismatch,
    MissingField,
    /// The protected resource's metadata is missing or does not name the resource and a server.
    Resource,
    Jwks,
    Token,
    /// A `--header-file` that cannot be sent (unreadable, empty, or spoilt by a rotation).
    HeaderFile,
    /// A name resolved to an address SSRF-guarded clients refuse (`--refuse-private-addresses`).
    PrivateAddress,
}

impl FailureClass {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureClass::LocalResource => "local-resource",
            FailureClass::Dns => "dns",
            FailureClass::Connect => "connect",
            FailureClass::Timeout => "timeout",
            FailureClass::Tls => "tls",
            FailureClass::HttpStatus => "http-status",
            FailureClass::Body => "body",
            FailureClass::Json => "json",
            FailureClass::IssuerMismatch => "issuer-mismatch",
            FailureClass::MissingField => "missing-field",
            FailureClass::Resource => "resource",
            FailureClass::Jwks => "jwks",
            FailureClass::Token => "token",
            FailureClass::HeaderFile => "header-file",
            FailureClass::PrivateAddress => "private-address",
            FailureClass::Proxy => "proxy",
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which link of the chain an attempt was at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Link {
    /// An authorization server's metadata (OIDC Discovery or RFC 8414).
    #[default]
    Metadata,
    /// Its JWK Set.
    Jwks,
    /// A protected resource's metadata (RFC 9728), or the resource's own challenge.
    ResourceMetadata,
}

impl Link {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Link::Metadata => "metadata",
            Link::Jwks => "jwks",
            Link::ResourceMetadata => "resource-metadata",
        }
    }
}

/// A failed attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) class: FailureClass,
    pub(crate) detail: String,
    /// Retrying soon costs the provider nothing (the connection was refused outright), so the
    /// gate may poll fast and notice readiness within a fraction of a second.
    pub(crate) cheap: bool,
    /// How long the provider asked to be left alone (`Retry-After` on a 429 or 503).
    pub(crate) retry_after: Option<Duration>,
    pub(crate) link: Link,
    /// Retrying cannot change what the real client does: the wait ends with this failure.
    pub(crate) conclusive: bool,
}

impl Failure {
    pub(crate) fn new(class: FailureClass, detail: impl Into<String>) -> Failure {
        Failure {
            class,
            detail: detail.into(),
            cheap: false,
            retry_after: None,
            link: Link::Metadata,
            conclusive: false,
        }
    }

    pub(super) fn at(mut self, link: Link, context: &str) -> Failure {
        self.link = link;
        self.detail.insert_str(0, context);
        self
    }
}

/// What to do about a cross-origin redirect refused by MCP's rule (the SDK follows none; Go's
/// rule follows them, so JWK Sets and plain OIDC discovery never get here), naming the flag that
/// reaches the link: `--discovery-url` for an issuer's metadata (only when the run waits for that
/// one issuer, `own` here), `--resource` for the resource's metadata. A link a resource's
/// metadata names is the resource's to fix: no flag reaches it.
pub(super) fn redirect_hint(link: Link, own: bool) -> &'static str {
    match (link, own) {
        (Link::Metadata, true) => "; point --discovery-url at the final location",
        (Link::ResourceMetadata, _) => "; if the resource itself lives there, give that URL as --resource",
        (Link::Metadata, false) => {
            "; serve the metadata on the issuer's own origin (--discovery-url takes a single --issuer, no --resource)"
        }
        (Link::Jwks, _) => "",
    }
}

/// With `--refuse-private-addresses`: the first name resolved to an address an SSRF-guarded
/// client refuses, named with the address, its range and the client setting that allows it.
pub(super) fn refused_address(resolved: &[(String, Vec<IpAddr>)]) -> Option<String> {
    let (host, ip, range) = resolved
        .iter()
        .find_map(|(host, ips)| ips.iter().find_map(|ip| url::private_range(*ip).map(|r| (host, ip, r))))?;
    let article = if range.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    Some(format!(
        "{host} resolves to {ip}, {article} {range} address: an SSRF-guarded client refuses it (ToolHive: \"the provided \
         URL redirects to a private IP address, which is not allowed\"; its --jwks-allow-private-ip allows it), \
         and --refuse-private-addresses has the gate do the same"
    ))
}

/// Said of a certificate the gate rejects while oauth2-proxy would not check it.
pub(super) fn skipped_by_proxy() -> String {
    format!(
        "; oauth2-proxy skips this check (OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY=true), the gate never does, so \
         waiting cannot help: give the gate the provider's CA with {} PATH or {}",
        Id::CaFile.flag(),
        Id::CaFile.setting().env.unwrap_or_default()
    )
}

/// A failure while fetching one link of the chain: its class comes from the transport, except
/// that anything going wrong with the keys is class `jwks`, with the transport's class inside.
pub(super) fn link_failure(link: Link, context: &str, e: FetchError) -> Failure {
    let failure = fetch_failure(e);
    let failure = match link {
        Link::Jwks => {
            Failure { class: FailureClass::Jwks, detail: format!("{}: {}", failure.class, failure.detail), ..failure }
        }
        Link::Metadata | Link::ResourceMetadata => failure,
    };
    failure.at(link, context)
}

/// A transport failure's class; its detail is the error's own message.
fn fetch_failure(e: FetchError) -> Failure {
    let class = match &e {
        FetchError::Dns { .. } | FetchError::TimedOut { stage: Stage::Resolving, .. } => FailureClass::Dns,
        FetchError::TimedOut { stage: Stage::ReadingTokenFile, .. } => FailureClass::Token,
        FetchError::TimedOut { stage: Stage::ReadingHeaderFile, .. } => FailureClass::HeaderFile,
        FetchError::TimedOut { .. } => FailureClass::Timeout,
        FetchError::Refused { .. } | FetchError::Connect(_) => FailureClass::Connect,
        FetchError::Tls { .. } | FetchError::ClientCertificateRequired { .. } | FetchError::TlsOther(_) => {
            FailureClass::Tls
        }
        FetchError::Redirect(_) | FetchError::CrossOrigin(_) => FailureClass::HttpStatus,
        FetchError::Body(_) | FetchError::Protocol(_) => FailureClass::Body,
        FetchError::Proxy(_) => FailureClass::Proxy,
        FetchError::LocalResource { .. } => FailureClass::LocalResource,
    };
    let cheap = matches!(e, FetchError::Refused { .. });
    Failure { cheap, ..Failure::new(class, e.to_string()) }
}

/// Whether MCP clients pass over a URL that answered `status` for the next in their order: a
/// client error or a redirect returned unfollowed (the TypeScript SDK 1.32.2 goes on for any
/// status below 500: `discoverAuthorizationServerMetadata`, `shouldAttemptFallback`), and a 502,
/// which a reverse proxy answers for a path it does not route, unless `last` (typescript-sdk PR
/// #1632, merged for the 2.x line; 1.32.2 still stops there). Every other 5xx ends the attempt,
/// as 1.32.2 throws on it: the server is there but not serving, and the gate waits.
pub(crate) fn moves_on(status: u16, last: bool) -> bool {
    (300..500).contains(&status) || (status == 502 && !last)
}

/// A response that is not `200`: class `http-status`, with the provider's `Retry-After` kept.
fn status_failure(fetched: &Fetched) -> Failure {
    let mut failure = Failure::new(FailureClass::HttpStatus, status_detail(fetched));
    if matches!(fetched.status, 429 | 503) {
        failure.retry_after = fetched
            .retry_after
            .as_deref()
            .and_then(|v| crate::net::response::retry_after(v, std::time::SystemTime::now()));
    }
    failure
}

fn status_detail(fetched: &Fetched) -> String {
    let reason = ureq::http::StatusCode::from_u16(fetched.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let excerpt = crate::rules::printable_excerpt(&fetched.body, 100);
    let hint = match fetched.status {
        404 if url::split(&fetched.url).is_ok_and(|p| p.path.starts_with("/auth/realms/")) => {
            " (Keycloak 17 and later serve /realms/… without the /auth prefix, unless KC_HTTP_RELATIVE_PATH=/auth: \
             drop /auth from the issuer if the provider was upgraded; else the realm may not be imported yet)"
        }
        404 => {
            " (Keycloak answers 404 until the realm is imported; check the realm or application name if it persists)"
        }
        400 if plain_http_to_https(&fetched.body) => " (the server says this port serves HTTPS: use an https:// URL)",
        429 => " (rate-limited)",
        502..=504 => " (a gateway in front of a provider that is not serving yet)",
        401 | 403 => {
            " (metadata is normally public: check the path, and that the realm, tenant or application exists and is \
             enabled; the Kubernetes API server's issuer needs --token-file; a gateway or network policy may be in \
             the way)"
        }
        _ => "",
    };
    let mut detail = format!("HTTP {} {reason} from {}{hint}", fetched.status, url::redact(&fetched.url));
    if !excerpt.is_empty() {
        let _ = write!(detail, ": {excerpt:?}");
    }
    detail
}

/// What servers answer a plain-HTTP request on their HTTPS port with: nginx's 400 "The plain
/// HTTP request was sent to HTTPS port", Go's "Client sent an HTTP request to an HTTPS server".
fn plain_http_to_https(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&body[..body.len().min(2048)]).to_ascii_lowercase();
    text.contains("plain http request was sent to https port") || text.contains("http request to an https server")
}

/// The body of a response that counts: a `200` whose body is as sent. Anything else is class
/// `http-status` (keeping the provider's `Retry-After`) or `body`, whichever link it came from.
pub(super) fn usable_body(fetched: &Fetched) -> Result<&[u8], Failure> {
    if fetched.status != 200 {
        return Err(status_failure(fetched));
    }
    // Go hands such a body to json.Unmarshal as it is: it fails unless it is JSON after all.
    if let Some(encoding) = &fetched.content_encoding
        && crate::rules::open_object(&fetched.body, &[]).is_err()
    {
        return Err(Failure::new(FailureClass::Body, unasked_encoding(encoding)));
    }
    Ok(&fetched.body)
}

fn unasked_encoding(encoding: &str) -> String {
    format!(
        "the body is {encoding}-encoded although the gate asked only for gzip (Accept-Encoding: gzip, as Go's \
         transport asks): a server or proxy that encodes regardless breaks the clients, which cannot decode it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetched(status: u16, retry_after: Option<&str>) -> Fetched {
        Fetched {
            status,
            content_type: None,
            content_encoding: None,
            retry_after: retry_after.map(str::to_string),
            www_authenticate: None,
            stream: false,
            location: None,
            body: b"oops".to_vec(),
            url: "https://idp.example/.well-known/openid-configuration".into(),
        }
    }

    #[test]
    fn each_transport_error_has_its_class_and_only_a_refusal_is_cheap() {
        let host = || "idp.example".to_string();
        let after = Duration::from_secs(1);
        let cases = [
            (FetchError::Dns { host: host(), detail: "no such host".into() }, FailureClass::Dns),
            (FetchError::TimedOut { stage: Stage::Resolving, host: host(), after }, FailureClass::Dns),
            (FetchError::TimedOut { stage: Stage::Connecting, host: host(), after }, FailureClass::Timeout),
            (FetchError::TimedOut { stage: Stage::ReadingBody, host: host(), after }, FailureClass::Timeout),
            (FetchError::TimedOut { stage: Stage::ReadingTokenFile, host: host(), after }, FailureClass::Token),
            (FetchError::TimedOut { stage: Stage::ReadingHeaderFile, host: host(), after }, FailureClass::HeaderFile),
            (
                FetchError::LocalResource {
                    stage: Stage::Connecting,
                    host: host(),
                    error: "out of descriptors".into(),
                },
                FailureClass::LocalResource,
            ),
            (FetchError::Refused { host: host() }, FailureClass::Connect),
            (FetchError::Connect("unreachable".into()), FailureClass::Connect),
            (FetchError::Tls { host: host(), error: rustls::Error::DecryptError }, FailureClass::Tls),
            (FetchError::ClientCertificateRequired { host: host() }, FailureClass::Tls),
            (FetchError::TlsOther("eof".into()), FailureClass::Tls),
            (FetchError::Redirect("to another origin".into()), FailureClass::HttpStatus),
            (FetchError::Body("cut short".into()), FailureClass::Body),
            (FetchError::Protocol("bad header".into()), FailureClass::Body),
            (FetchError::Proxy("proxy http://p:1 (HTTPS_PROXY) refused".into()), FailureClass::Proxy),
        ];
        for (error, class) in cases {
            let refused = matches!(error, FetchError::Refused { .. });
            let failure = fetch_failure(error);
            assert_eq!(failure.class, class, "{}", failure.detail);
            assert_eq!(failure.cheap, refused, "only a refused connection is retried fast: {}", failure.detail);
            assert!(!failure.conclusive, "a transport error is never conclusive by itself");
        }
    }

    #[test]
    fn anything_wrong_with_the_keys_is_class_jwks_with_the_transport_class_inside() {
        let failure = link_failure(Link::Jwks, "", FetchError::Refused { host: "keys.example".into() });
        assert_eq!((failure.class, failure.link), (FailureClass::Jwks, Link::Jwks));
        assert!(failure.detail.starts_with("connect: "), "{}", failure.detail);
        let failure = link_failure(Link::Metadata, "server #2: ", FetchError::Body("cut short".into()));
        assert_eq!((failure.class, failure.link), (FailureClass::Body, Link::Metadata));
        assert!(failure.detail.starts_with("server #2: "), "{}", failure.detail);
    }

    #[test]
    fn a_status_keeps_retry_after_only_where_it_means_come_back_later() {
        for status in [429, 503] {
            let failure = usable_body(&fetched(status, Some("7"))).unwrap_err();
            assert_eq!(failure.class, FailureClass::HttpStatus);
            assert_eq!(failure.retry_after, Some(Duration::from_secs(7)), "{status}");
        }
        for status in [404, 500, 502] {
            let failure = usable_body(&fetched(status, Some("7"))).unwrap_err();
            assert_eq!((failure.class, failure.retry_after), (FailureClass::HttpStatus, None), "{status}");
        }
        assert!(usable_body(&fetched(404, None)).unwrap_err().detail.contains("Keycloak answers 404"));
    }

    #[test]
    fn a_404_under_keycloaks_old_auth_prefix_says_it_was_dropped() {
        let old = Fetched {
            url: "https://kc.example/auth/realms/x/.well-known/openid-configuration".into(),
            ..fetched(404, None)
        };
        let detail = usable_body(&old).unwrap_err().detail;
        assert!(detail.contains("without the /auth prefix, unless KC_HTTP_RELATIVE_PATH=/auth"), "{detail}");
        let detail = usable_body(&fetched(404, None)).unwrap_err().detail;
        assert!(!detail.contains("/auth prefix"), "{detail}");
    }

    #[test]
    fn a_400_for_plain_http_on_an_https_port_says_to_use_https() {
        for body in [
            &b"<center>The plain HTTP request was sent to HTTPS port</center>"[..],
            b"Client sent an HTTP request to an HTTPS server.\n",
        ] {
            let answer = Fetched { body: body.to_vec(), ..fetched(400, None) };
            assert!(usable_body(&answer).unwrap_err().detail.contains("use an https:// URL"));
        }
        assert!(!usable_body(&fetched(400, None)).unwrap_err().detail.contains("use an https:// URL"));
    }

    #[test]
    fn a_200_counts_unless_its_body_was_encoded_unasked() {
        assert_eq!(usable_body(&fetched(200, None)).unwrap(), b"oops");
        let brotli = Fetched { content_encoding: Some("br".into()), ..fetched(200, None) };
        assert_eq!(usable_body(&brotli).unwrap_err().class, FailureClass::Body);
        // Mislabelled but JSON: Go's json.Unmarshal reads it, and so does the gate.
        let labelled = Fetched { content_encoding: Some("br".into()), body: b"{}".to_vec(), ..fetched(200, None) };
        assert!(usable_body(&labelled).is_ok());
    }

    #[test]
    fn mcp_clients_move_past_client_errors_redirects_and_a_502_unless_last() {
        for (status, last, moves) in
            [(404, false, true), (401, true, true), (301, false, true), (502, false, true), (502, true, false)]
        {
            assert_eq!(moves_on(status, last), moves, "{status} last={last}");
        }
        for status in [200, 500, 503, 504] {
            assert!(!moves_on(status, false), "{status}");
        }
    }

    #[test]
    fn a_refused_redirect_names_the_flag_that_reaches_the_link() {
        assert!(redirect_hint(Link::Metadata, true).contains("--discovery-url"));
        assert_eq!(redirect_hint(Link::Jwks, true), "", "keys follow Go's rule: never refused for the origin");
        assert!(redirect_hint(Link::ResourceMetadata, false).contains("--resource"));
        assert!(redirect_hint(Link::Metadata, false).contains("single --issuer"));
    }

    #[test]
    fn a_private_address_is_named_with_its_range() {
        let resolved = vec![
            ("public.example".to_string(), vec!["93.184.216.34".parse().unwrap()]),
            ("kc.internal".to_string(), vec!["10.1.2.3".parse().unwrap()]),
        ];
        let why = refused_address(&resolved).unwrap();
        assert!(why.starts_with("kc.internal resolves to 10.1.2.3"), "{why}");
        assert_eq!(refused_address(&resolved[..1]), None);
    }
}
