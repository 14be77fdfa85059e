//! An authorization server: its metadata found where the configured kind says (with `auto`, in
//! the MCP order), judged by the specification of the URL that served it, and with
//! `--check-jwks` a usable key in its JWK Set.

use super::attempt::{Answer, Attempt};
use super::classify::{moves_on, usable_body};
use super::failure::{Cause, Failure, FailureClass, Link};
use super::ready::ServerReady;
use crate::net::response::Fetched;
use crate::rules::BodyProblem;
use crate::rules::authorization_server::{self, Document, DocumentProblem};
use crate::rules::authorization_server::{MetadataKind, Rules};
use crate::rules::jwk_set;
use crate::url;
use std::borrow::Cow;

/// Finds, fetches and judges `issuer`'s metadata; `context` names the server in a longer chain.
///
/// With several candidate URLs (`auto`), a redirect that was not followed, a client error (3xx,
/// 4xx) or a 502 moves on to the next URL, as MCP clients do ([`moves_on`]; the log names each
/// redirect and 502 passed over); a 200 ends the search, passing or failing by its document;
/// anything else (another 5xx, no connection) ends the attempt, since the next URL is on the same
/// server.
pub(super) fn discover(
    at: &Attempt<'_>,
    issuer: &str,
    kind: MetadataKind,
    discovery_url: Option<&str>,
    context: &str,
) -> Result<ServerReady, Failure> {
    let candidates = authorization_server::candidates(issuer, kind, discovery_url);
    let mut declined = Vec::new();
    let mut passed_over = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let last = i + 1 == candidates.len();
        let fetched = match at.fetch_candidate(Link::Metadata, context, &candidate.url)? {
            Answer::Skipped(why) if last => {
                // As any refused redirect: the same class, and the hint naming the flag that applies.
                return Err(at.failure(Link::Metadata, context, &candidate.url, why).hint(before(&declined)));
            }
            Answer::Skipped(why) => {
                let skipped = format!("{} ({why})", url::redact(&candidate.url));
                declined.push(skipped.clone());
                passed_over.push(skipped);
                continue;
            }
            Answer::Got(fetched) if !last && moves_on(fetched.status, last) => {
                declined.push(format!("{} (HTTP {})", url::redact(&candidate.url), fetched.status));
                if fetched.status >= 500 {
                    passed_over.push(format!("{} (HTTP {})", url::redact(&candidate.url), fetched.status));
                }
                continue;
            }
            Answer::Got(fetched) => fetched,
        };
        let rules = Rules { kind: candidate.spec, ..at.checks.rules };
        let judged = judge(&fetched, issuer, rules).and_then(|mut server| {
            if kind == MetadataKind::Auto {
                let warnings = authorization_server::mcp_client_rules(&fetched.body, candidate.spec, at.transport)
                    .map_err(|problem| document_failure(problem, &fetched))?;
                server.document.warnings.extend(warnings);
                server.document.registration = Some(authorization_server::registration(&fetched.body));
            }
            Ok(server)
        });
        let mut server = judged.map_err(|f| f.hint(before(&declined)).at(Link::Metadata, context))?;
        server.document.warnings.extend(passed_over.iter().map(|p| format!("{context}passed over {p}")));
        if at.checks.check_jwks {
            let keys = check_jwks(at, &mut server.document, context);
            server.jwks_keys = Some(keys.map_err(|f| symmetric_only_hint(f, &server.document))?);
        }
        return Ok(server);
    }
    unreachable!("every kind has at least one candidate URL")
}

/// The URLs passed over before the one that failed, as a hint.
fn before(declined: &[String]) -> Option<Cow<'static, str>> {
    (!declined.is_empty()).then(|| format!("before it: {}", declined.join(", ")).into())
}

/// Judges a complete response by `rules`.
pub(super) fn judge(fetched: &Fetched, issuer: &str, rules: Rules) -> Result<ServerReady, Failure> {
    let body = usable_body(fetched)?;
    let document = authorization_server::validate_document(body, issuer, rules)
        .map_err(|p| document_failure(p, fetched).about(&fetched.url))?;
    Ok(ServerReady { document, url: fetched.url.clone(), jwks_keys: None })
}

/// A document's problem as a failure. A problem of the document's rules (`--strict`, or what MCP
/// clients require under `auto`: a member missing, no `code` flow, no S256, a plain token
/// endpoint) is class `missing-field`: the server answers, its document is not what the client
/// needs, and the fix is in the server's configuration.
fn document_failure(problem: DocumentProblem, fetched: &Fetched) -> Failure {
    let class = match &problem {
        DocumentProblem::Body(BodyProblem::NotUtf8 { .. } | BodyProblem::Repaired { .. }) => FailureClass::Body,
        DocumentProblem::Body(_) | DocumentProblem::Json(_) | DocumentProblem::Duplicate { .. } => FailureClass::Json,
        DocumentProblem::IssuerMismatch { .. } => FailureClass::IssuerMismatch,
        DocumentProblem::MissingField(_) | DocumentProblem::NotHttps(_) | DocumentProblem::Refused(_) => {
            FailureClass::MissingField
        }
    };
    let conclusive = conclusive(&problem);
    let message = match class {
        FailureClass::Json => format!(
            "{problem} (Content-Type {}, starts {:?})",
            fetched.content_type.as_deref().unwrap_or("absent"),
            crate::rules::printable_excerpt(&fetched.body, 60)
        ),
        _ => problem.to_string(),
    };
    let (member, found) = match problem {
        DocumentProblem::IssuerMismatch { found, .. } => (Some("issuer"), Some(found)),
        DocumentProblem::Duplicate { .. } => (Some("issuer"), None),
        _ => (None, None),
    };
    Failure::of(class, Cause::Document { member, found }, message).with(|f| f.conclusive = conclusive)
}

/// A document problem that no provider's start-up changes (docs/ready.md, "What waiting cannot
/// fix"): the guarded client's own refusal, or an issuer that differs from the configured one
/// only by a trailing `/` or by the scheme's default port written out. Keycloak, Hydra and
/// oauth2-proxy each fix their issuer before their port opens; a realm's later `frontendUrl`
/// changes its host or path, never these.
fn conclusive(problem: &DocumentProblem) -> bool {
    let canonical = |s: &str| {
        let s = s.strip_suffix('/').unwrap_or(s);
        let Ok(p) = url::split(s) else { return s.to_string() };
        let port = p.port.filter(|port| *port != url::default_port(p.scheme)).map(|port| format!(":{port}"));
        format!("{}://{}{}{}", p.scheme, p.host, port.unwrap_or_default(), p.path)
    };
    match problem {
        DocumentProblem::Refused(_) => true,
        DocumentProblem::IssuerMismatch { expected, found } => canonical(expected) == canonical(found),
        _ => false,
    }
}

/// Fetches the keys (`--jwks-url`, else `jwks_uri`) under the same TLS rules and requires a
/// usable key. Every failure here is class `jwks`, with the transport's class inside (`within`). A
/// plain-http `jwks_uri` fails in a chain given as https and is a warning otherwise
/// ([`jwk_set::location`]); `--jwks-url` is the user's own URL, checked when the settings are read.
fn check_jwks(at: &Attempt<'_>, document: &mut Document, context: &str) -> Result<usize, Failure> {
    let jwks = |message: String| Failure::of(FailureClass::Jwks, Cause::JwkSet, message).at(Link::Jwks, context);
    let Some(uri) = at.checks.jwks_url.clone().or(document.jwks_uri.clone()) else {
        return Err(jwks("the document has no jwks_uri to check".into()));
    };
    if at.checks.jwks_url.is_none() {
        let plain = jwk_set::location(&uri, at.transport).map_err(|p| jwks(p.to_string()))?;
        document.warnings.extend(plain);
    }
    if let Err(p) = url::split(&uri) {
        return Err(jwks(format!("jwks_uri {:?} {p}", url::redact(&uri))));
    }
    let fetched = at.fetch(Link::Jwks, context, &uri)?;
    let body = usable_body(&fetched).map_err(|f| {
        if fetched.status != 200 && symmetric_only(document) {
            // The cause is known (see `symmetric_only_hint`): no guessing at gateways.
            let message = format!("{} answered HTTP {}", url::redact(&uri), fetched.status);
            let f = Failure::of(FailureClass::Jwks, Cause::Status(fetched.status), message);
            return f.at(Link::Jwks, context).about(&uri);
        }
        let dex = (fetched.status >= 500).then_some("Dex answers 500 until its first signing key exists".into());
        f.with(|f| f.class = FailureClass::Jwks).at(Link::Jwks, context).hint(dex)
    })?;
    jwk_set::validate_jwks(body, &document.id_token_signing_alg_values_supported)
        .map_err(|p| jwks(format!("{p} (from {})", url::redact(&uri))).about(&uri))
}

/// A provider that signs only with a shared secret (`HS*`) publishes no key: `--check-jwks` can
/// never pass there, and the failure should say so rather than suggest a network problem.
fn symmetric_only_hint(failure: Failure, document: &Document) -> Failure {
    let algs = &document.id_token_signing_alg_values_supported;
    let summary = symmetric_only(document).then(|| {
        format!(
            "the provider signs ID tokens only with {} (a shared secret), so no public key exists to check: drop \
             --check-jwks",
            algs.join(", ")
        )
    });
    failure.with(|f| f.summary = summary)
}

/// The document lists signing algorithms and every one of them is a shared secret's (`HS*`).
fn symmetric_only(document: &Document) -> bool {
    let algs = &document.id_token_signing_alg_values_supported;
    !algs.is_empty() && algs.iter().all(|a| !jwk_set::needs_public_key(a))
}
