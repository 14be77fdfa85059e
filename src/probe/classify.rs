//! What the network and the server gave, turned into failures: a transport error
//! ([`link_failure`]), a status or an unasked encoding ([`usable_body`]), a private address
//! ([`refused_address`]), with the hints that say what to do.

use super::failure::{Cause, Failure, FailureClass, Link, LocalFile};
use crate::net::fetch_error::FetchError;
use crate::net::response::Fetched;
use crate::progress::Stage;
use crate::settings::Id;
use crate::url;
use std::net::IpAddr;

/// What to do about a cross-origin redirect refused by MCP's rule (the SDK follows none; Go's
/// rule follows them, so JWK Sets and plain OIDC discovery never get here), naming the flag that
/// reaches the link: `--discovery-url` for an issuer's metadata (only when the run waits for that
/// one issuer, `own` here), `--resource` for the resource's metadata. A link a resource's
/// metadata names is the resource's to fix: no flag reaches it.
pub(super) fn redirect_hint(link: Link, own: bool) -> Option<&'static str> {
    match (link, own) {
        (Link::Metadata, true) => Some("point --discovery-url at the final location"),
        (Link::ResourceMetadata, _) => Some("if the resource itself lives there, give that URL as --resource"),
        (Link::Metadata, false) => Some(
            "serve the metadata on the issuer's own origin (--discovery-url takes a single --issuer, no --resource)",
        ),
        (Link::Jwks, _) => None,
    }
}

/// With `--refuse-private-addresses`: the first name resolved to an address an SSRF-guarded
/// client refuses, named with the address, its range and the client setting that allows it.
pub(super) fn refused_address(resolved: &[(String, Vec<IpAddr>)]) -> Option<Failure> {
    let (host, ip, range) = resolved
        .iter()
        .find_map(|(host, ips)| ips.iter().find_map(|ip| url::private_range(*ip).map(|r| (host, ip, r))))?;
    let article = if range.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    let message = format!(
        "{host} resolves to {ip}, {article} {range} address: an SSRF-guarded client refuses it (ToolHive: \"the provided \
         URL redirects to a private IP address, which is not allowed\"; its allow_private_ips or \
         --jwks-allow-private-ip allows it, as --refuse-private-addresses=false does the gate's), and the gate does the same"
    );
    let cause = Cause::PrivateAddress { host: host.clone(), address: *ip };
    Some(Failure::of(FailureClass::PrivateAddress, cause, message))
}

/// Said of a certificate the gate rejects while oauth2-proxy would not check it.
pub(super) fn skipped_by_proxy() -> String {
    format!(
        "oauth2-proxy skips this check (OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY=true), the gate never does, so \
         waiting cannot help: give the gate the provider's CA with {} PATH or {}",
        Id::CaFile.flag(),
        Id::CaFile.setting().env.unwrap_or_default()
    )
}

/// A failure while fetching `to`, one link of the chain, when the fetch was at `stage` with
/// `host` (the stage a bare transport error does not name itself): its class comes from the
/// transport, except that anything going wrong with the keys is class `jwks`, with the
/// transport's class inside. The one place a [`FetchError`] becomes a [`Failure`].
pub(super) fn link_failure(link: Link, server: &str, to: &str, e: FetchError, at: (Stage, String)) -> Failure {
    // A TLS port closes or resets a plain-HTTP request; nginx and Go answer 400 instead
    // (`plain_http_to_https`).
    let closed = matches!(&e, FetchError::Connect(m) if m.contains("closed the connection before a response"));
    let tls_port = (closed && to.starts_with("http://"))
        .then(|| "if this port serves HTTPS, use an https:// URL: a TLS server closes a plain-HTTP request".into());
    let failure = fetch_failure(e, at).hint(tls_port);
    let failure = match link {
        Link::Jwks => failure.with(|f| (f.class, f.within) = (FailureClass::Jwks, Some(f.class))),
        Link::Metadata | Link::ResourceMetadata => failure,
    };
    failure.at(link, server).about(to)
}

/// A transport failure's class and cause; its message is the error's own.
fn fetch_failure(e: FetchError, (stage, host): (Stage, String)) -> Failure {
    use FailureClass as C;
    let message = e.to_string();
    let cheap = matches!(e, FetchError::Refused { .. });
    let network = |stage| Cause::Network { stage, host: host.clone() };
    let (class, cause) = match e {
        FetchError::Dns { host, .. } => (C::Dns, Cause::Network { stage: Stage::Resolving, host }),
        FetchError::FileTimedOut { stage: Stage::ReadingTokenFile, path, .. } => {
            (C::Token, Cause::LocalFile { file: LocalFile::Token, path })
        }
        FetchError::FileTimedOut { path, .. } => (C::HeaderFile, Cause::LocalFile { file: LocalFile::Header, path }),
        FetchError::TimedOut { stage, host, .. } => {
            (if stage == Stage::Resolving { C::Dns } else { C::Timeout }, Cause::Network { stage, host })
        }
        FetchError::Refused { host } => (C::Connect, Cause::Network { stage: Stage::Connecting, host }),
        FetchError::Connect(_) => (C::Connect, network(stage)),
        FetchError::Tls { host, .. } | FetchError::ClientCertificateRequired { host } => {
            (C::Tls, Cause::Network { stage: Stage::TlsHandshake, host })
        }
        FetchError::TlsOther(_) => (C::Tls, network(stage)),
        FetchError::Redirect(refused) => (C::HttpStatus, Cause::Redirect(refused.kind)),
        FetchError::Body(_) | FetchError::Protocol(_) => (C::Body, network(stage)),
        FetchError::Proxy(_) => (C::Proxy, Cause::Proxy),
        FetchError::LocalResource { stage, host, .. } => (C::LocalResource, Cause::LocalResource { stage, host }),
    };
    Failure::of(class, cause, message).with(|f| f.cheap = cheap)
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
    let reason = ureq::http::StatusCode::from_u16(fetched.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let excerpt = crate::rules::printable_excerpt(&fetched.body, 100);
    let redacted = url::redact(&fetched.url);
    let mut message = format!("HTTP {} {reason} from {redacted}", fetched.status);
    if !excerpt.is_empty() {
        message = format!("{message}: {excerpt:?}");
    }
    let mut failure = Failure::of(FailureClass::HttpStatus, Cause::Status(fetched.status), message);
    failure.url = Some(redacted);
    match (fetched.status, fetched.credentials) {
        // Sent and refused: not a token missing, the one given (expired, another audience?).
        (401 | 403, Some(given)) => failure.hints.push(
            format!(
                "the server refused the credentials from {given} that the gate sent: check that they are current and \
             meant for this server (a token's audience, a rotated secret), and that they grant reading the metadata"
            )
            .into(),
        ),
        _ => failure.hints.extend(status_hint(fetched).map(Into::into)),
    }
    // Keycloak's answer for a path it routes nowhere (a base URL without /realms/NAME): no
    // start-up changes it, while a realm not created yet answers "Realm does not exist".
    if fetched.status == 404
        && !fetched.url.contains("/realms/")
        && String::from_utf8_lossy(&fetched.body).contains("Unable to find matching target resource method")
    {
        failure.conclusive = true;
        failure.hints.push("Keycloak serves an issuer's metadata only under /realms/NAME: name the realm".into());
    }
    if matches!(fetched.status, 429 | 503) {
        failure.retry_after = fetched
            .retry_after
            .as_deref()
            .and_then(|v| crate::net::response::retry_after(v, std::time::SystemTime::now()));
    }
    failure
}

/// What a status usually means, where it says more than its number. Keycloak's words only where
/// the path is shaped like Keycloak's (`/auth/…`, or a realm's `/realms/…`): most 404s are a
/// wrong path on a server that has never heard of realms.
fn status_hint(fetched: &Fetched) -> Option<&'static str> {
    let path = url::split(&fetched.url).map(|p| p.path).unwrap_or_default();
    Some(match fetched.status {
        404 if path.starts_with("/auth/realms/") => {
            "Keycloak 17 and later serve /realms/… without the /auth prefix, unless KC_HTTP_RELATIVE_PATH=/auth: \
             drop /auth from the issuer if the provider was upgraded; else the realm may not be imported yet"
        }
        404 if path.contains("/realms/") || path.starts_with("/auth/") => {
            "Keycloak answers 404 until the realm is imported; check the realm or application name if it persists"
        }
        400 if plain_http_to_https(&fetched.body) => "the server says this port serves HTTPS: use an https:// URL",
        429 => "rate-limited",
        502..=504 => "a gateway in front of a provider that is not serving yet",
        401 | 403 => {
            "metadata is normally public: check the path, and that the realm, tenant or application exists and is \
             enabled; the Kubernetes API server's issuer needs --token-file; a gateway or network policy may be in \
             the way"
        }
        _ => return None,
    })
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
        let message = format!(
            "the body is {encoding}-encoded although the gate asked only for gzip (Accept-Encoding: gzip, as Go's \
             transport asks): a server or proxy that encodes regardless breaks the clients, which cannot decode it"
        );
        return Err(Failure::of(FailureClass::Body, Cause::Encoding, message).about(&fetched.url));
    }
    Ok(&fetched.body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
            credentials: None,
        }
    }

    /// Issue 36 §6: a 401 or 403 to credentials the gate sent is their refusal, said as such; to
    /// none, the usual hint (metadata is normally public; the API server needs --token-file).
    #[test]
    fn a_401_to_credentials_sent_says_they_were_refused() {
        for status in [401, 403] {
            let sent = Fetched { credentials: Some("--token-file"), ..fetched(status, None) };
            let failure = usable_body(&sent).unwrap_err();
            assert!(hinted(&failure, "refused the credentials from --token-file"), "{failure:?}");
            assert!(!hinted(&failure, "needs --token-file"), "{failure:?}");
            assert!(hinted(&usable_body(&fetched(status, None)).unwrap_err(), "needs --token-file"));
        }
    }

    /// Keycloak's 404 for a base URL without `/realms/…` is final; its 404 for a realm not
    /// created yet, and any other server's 404, are retried.
    #[test]
    fn only_keycloak_s_unrouted_path_is_a_final_404() {
        let keycloak = br#"{"error":"Unable to find matching target resource method"}"#.to_vec();
        let base = Fetched { body: keycloak.clone(), ..fetched(404, None) };
        let failure = usable_body(&base).unwrap_err();
        assert!(failure.conclusive && hinted(&failure, "/realms/NAME"), "{failure:?}");
        let realm = br#"{"error":"Realm does not exist"}"#.to_vec();
        let url = "https://kc/realms/x/.well-known/openid-configuration".to_string();
        for f in [Fetched { body: realm, url: url.clone(), ..fetched(404, None) }, fetched(404, None)] {
            assert!(!usable_body(&f).unwrap_err().conclusive, "{f:?}");
        }
        assert!(!usable_body(&Fetched { body: keycloak, url, ..fetched(404, None) }).unwrap_err().conclusive);
    }

    fn hinted(failure: &Failure, words: &str) -> bool {
        failure.hints.iter().any(|h| h.contains(words))
    }

    #[test]
    fn each_transport_error_has_its_class_and_cause_and_only_a_refusal_is_cheap() {
        use crate::net::redirect::{RedirectKind, RefusedRedirect};
        let host = || "idp.example".to_string();
        let after = Duration::from_secs(1);
        let net = |stage| Cause::Network { stage, host: host() };
        let file = |file| Cause::LocalFile { file, path: host() };
        let cases = [
            (FetchError::Dns { host: host(), detail: "no such host".into() }, FailureClass::Dns, net(Stage::Resolving)),
            (
                FetchError::TimedOut { stage: Stage::Resolving, host: host(), after },
                FailureClass::Dns,
                net(Stage::Resolving),
            ),
            (
                FetchError::TimedOut { stage: Stage::Connecting, host: host(), after },
                FailureClass::Timeout,
                net(Stage::Connecting),
            ),
            (
                FetchError::TimedOut { stage: Stage::ReadingBody, host: host(), after },
                FailureClass::Timeout,
                net(Stage::ReadingBody),
            ),
            (
                FetchError::FileTimedOut { stage: Stage::ReadingTokenFile, path: host(), after },
                FailureClass::Token,
                file(LocalFile::Token),
            ),
            (
                FetchError::FileTimedOut { stage: Stage::ReadingHeaderFile, path: host(), after },
                FailureClass::HeaderFile,
                file(LocalFile::Header),
            ),
            (
                FetchError::LocalResource {
                    stage: Stage::Connecting,
                    host: host(),
                    error: "out of descriptors".into(),
                },
                FailureClass::LocalResource,
                Cause::LocalResource { stage: Stage::Connecting, host: host() },
            ),
            (FetchError::Refused { host: host() }, FailureClass::Connect, net(Stage::Connecting)),
            (FetchError::Connect("unreachable".into()), FailureClass::Connect, net(Stage::AwaitingResponse)),
            (
                FetchError::Tls { host: host(), error: rustls::Error::DecryptError },
                FailureClass::Tls,
                net(Stage::TlsHandshake),
            ),
            (FetchError::ClientCertificateRequired { host: host() }, FailureClass::Tls, net(Stage::TlsHandshake)),
            (FetchError::TlsOther("eof".into()), FailureClass::Tls, net(Stage::AwaitingResponse)),
            (
                FetchError::Redirect(RefusedRedirect { kind: RedirectKind::Loop, to: "https://a/".into() }),
                FailureClass::HttpStatus,
                Cause::Redirect(RedirectKind::Loop),
            ),
            (FetchError::Body("cut short".into()), FailureClass::Body, net(Stage::AwaitingResponse)),
            (FetchError::Protocol("bad header".into()), FailureClass::Body, net(Stage::AwaitingResponse)),
            (FetchError::Proxy("proxy http://p:1 (HTTPS_PROXY) refused".into()), FailureClass::Proxy, Cause::Proxy),
        ];
        for (error, class, cause) in cases {
            let refused = matches!(error, FetchError::Refused { .. });
            let failure = fetch_failure(error, (Stage::AwaitingResponse, host()));
            assert_eq!((failure.class, &failure.cause), (class, &cause), "{}", failure.message);
            assert_eq!(failure.cheap, refused, "only a refused connection is retried fast: {}", failure.message);
            assert!(!failure.conclusive, "a transport error is never conclusive by itself");
        }
    }

    #[test]
    fn anything_wrong_with_the_keys_is_class_jwks_with_the_transport_class_inside() {
        let at = || (Stage::Connecting, "keys.example".to_string());
        let to = "https://keys.example/jwks?sig=secret";
        let failure = link_failure(Link::Jwks, "", to, FetchError::Refused { host: "keys.example".into() }, at());
        assert_eq!(
            (failure.class, failure.link, failure.within),
            (FailureClass::Jwks, Link::Jwks, Some(FailureClass::Connect))
        );
        assert_eq!(failure.url.as_deref(), Some(url::redact(to).as_str()), "the URL is kept redacted");
        let failure = link_failure(Link::Metadata, "server #2: ", to, FetchError::Body("cut short".into()), at());
        assert_eq!((failure.class, failure.link, failure.within), (FailureClass::Body, Link::Metadata, None));
        assert_eq!(failure.server, "server #2: ");
    }

    #[test]
    fn a_status_keeps_its_code_its_url_and_retry_after_only_where_it_means_come_back_later() {
        for status in [429, 503] {
            let failure = usable_body(&fetched(status, Some("7"))).unwrap_err();
            assert_eq!((failure.class, failure.cause.http_status()), (FailureClass::HttpStatus, Some(status)));
            assert_eq!(failure.retry_after, Some(Duration::from_secs(7)), "{status}");
        }
        for status in [404, 500, 502] {
            let failure = usable_body(&fetched(status, Some("7"))).unwrap_err();
            assert_eq!((failure.class, failure.retry_after), (FailureClass::HttpStatus, None), "{status}");
            assert_eq!(failure.url.as_deref(), Some("https://idp.example/.well-known/openid-configuration"));
            assert_eq!(
                failure.message,
                format!(
                    "HTTP {status} {} from {}: \"oops\"",
                    ureq::http::StatusCode::from_u16(status).unwrap().canonical_reason().unwrap(),
                    "https://idp.example/.well-known/openid-configuration"
                )
            );
        }
    }

    #[test]
    fn keycloaks_realm_hint_only_where_the_path_looks_like_keycloaks() {
        let at = |path: &str| Fetched { url: format!("https://kc.example{path}"), ..fetched(404, None) };
        for path in
            ["/realms/x/.well-known/openid-configuration", "/sso/realms/x/protocol/openid-connect/certs", "/auth/x"]
        {
            let failure = usable_body(&at(path)).unwrap_err();
            assert!(
                hinted(&failure, "Keycloak answers 404 until the realm is imported"),
                "{path}: {:?}",
                failure.hints
            );
        }
        for path in
            ["/.well-known/openid-configuration", "/tenant/v2.0/.well-known/openid-configuration", "/oauth2/realmsx"]
        {
            let failure = usable_body(&at(path)).unwrap_err();
            assert!(
                failure.hints.is_empty(),
                "{path}: no server that never heard of realms gets Keycloak's hint: {:?}",
                failure.hints
            );
        }
    }

    #[test]
    fn a_404_under_keycloaks_old_auth_prefix_says_it_was_dropped() {
        let old = Fetched {
            url: "https://kc.example/auth/realms/x/.well-known/openid-configuration".into(),
            ..fetched(404, None)
        };
        let failure = usable_body(&old).unwrap_err();
        assert!(
            hinted(&failure, "without the /auth prefix, unless KC_HTTP_RELATIVE_PATH=/auth"),
            "{:?}",
            failure.hints
        );
        let failure =
            usable_body(&Fetched { url: "https://kc.example/realms/x".into(), ..fetched(404, None) }).unwrap_err();
        assert!(!hinted(&failure, "/auth prefix"), "{:?}", failure.hints);
    }

    #[test]
    fn a_400_for_plain_http_on_an_https_port_says_to_use_https() {
        for body in [
            &b"<center>The plain HTTP request was sent to HTTPS port</center>"[..],
            b"Client sent an HTTP request to an HTTPS server.\n",
        ] {
            let answer = Fetched { body: body.to_vec(), ..fetched(400, None) };
            assert!(hinted(&usable_body(&answer).unwrap_err(), "use an https:// URL"));
        }
        assert!(!hinted(&usable_body(&fetched(400, None)).unwrap_err(), "use an https:// URL"));
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
        assert!(redirect_hint(Link::Metadata, true).unwrap().contains("--discovery-url"));
        assert_eq!(redirect_hint(Link::Jwks, true), None, "keys follow Go's rule: never refused for the origin");
        assert!(redirect_hint(Link::ResourceMetadata, false).unwrap().contains("--resource"));
        assert!(redirect_hint(Link::Metadata, false).unwrap().contains("single --issuer"));
    }

    #[test]
    fn a_private_address_is_named_with_its_range() {
        let resolved = vec![
            ("public.example".to_string(), vec!["93.184.216.34".parse().unwrap()]),
            ("kc.internal".to_string(), vec!["10.1.2.3".parse().unwrap()]),
        ];
        let why = refused_address(&resolved).unwrap();
        assert!(why.message.starts_with("kc.internal resolves to 10.1.2.3"), "{}", why.message);
        assert_eq!(
            why.cause,
            Cause::PrivateAddress { host: "kc.internal".into(), address: "10.1.2.3".parse().unwrap() }
        );
        assert_eq!(refused_address(&resolved[..1]), None);
    }
}
