//! One attempt's shared state, and each fetch of its links: the client, the checks, the token
//! and the origins it may go to, what is left of the budget, and where the attempt has got to
//! ([`Track`], read by the waiting side when it gives up on the attempt).

use super::classify::{link_failure, redirect_hint, refused_address, skipped_by_proxy};
use super::failure::{Failure, Link};
use crate::config::Checks;
use crate::net::fetch_error::FetchError;
use crate::net::http::HttpClient;
use crate::net::redirect::{RedirectKind, Redirects, RefusedRedirect, Request};
use crate::net::response::Fetched;
use crate::progress::{Progress, Stage};
use crate::rules::authorization_server;
use crate::token;
use crate::url;
use std::cell::Cell;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the thread doing an attempt shares with the caller waiting for it: the link it is at
/// (with the words that name it, such as the authorization server, and its URL) and the fetch's
/// stage.
#[derive(Debug, Default)]
pub(super) struct Track {
    pub(super) progress: Arc<Progress>,
    pub(super) at: Mutex<(Link, String, String)>,
}

impl Track {
    pub(super) fn enter(&self, link: Link, context: &str, to: &str) {
        if let Ok(mut at) = self.at.lock() {
            *at = (link, context.to_string(), to.to_string());
        }
    }

    /// The failure of an attempt abandoned after `budget`, in the words a fetch that timed out
    /// by itself would have used.
    pub(super) fn abandoned(&self, client: &HttpClient, budget: Duration) -> Failure {
        let (stage, host) = self.progress.at();
        let (link, context, to) = self.at.lock().map(|at| at.clone()).unwrap_or_default();
        let timed_out = match stage {
            Stage::ReadingTokenFile | Stage::ReadingHeaderFile => {
                FetchError::FileTimedOut { stage, path: host.clone(), after: budget }
            }
            _ => FetchError::TimedOut { stage, host: host.clone(), after: budget },
        };
        link_failure(link, &context, &to, timed_out, (stage, host)).with(|f| f.proxy = client.proxy_for(&to))
    }
}

/// The origins the bearer token and every `--header-file` may go to when waiting for `issuer`:
/// where its metadata is fetched (the `--discovery-url` if given, else the issuer's own
/// well-known URLs) and the `--jwks-url`, which the user named. Never a `jwks_uri` the document names elsewhere, never a
/// server a resource lists, never a redirect's target: a token for the API server must not
/// reach whoever else a document points at.
pub(super) fn token_origins(checks: &Checks, issuer: &str, discovery_url: Option<&str>) -> Vec<String> {
    let candidates = authorization_server::candidates(issuer, checks.rules.kind, discovery_url);
    let urls = candidates.iter().map(|c| c.url.as_str()).chain(checks.jwks_url.as_deref());
    urls.filter_map(|u| url::split(u).ok().map(|p| p.origin())).collect()
}

/// Whether a request to `to` may carry the token: its origin (scheme, host, port) is one of
/// `origins`, exactly.
pub(super) fn carries_token(origins: &[String], to: &str) -> bool {
    url::split(to).is_ok_and(|p| origins.contains(&p.origin()))
}

/// What the links of one attempt share: the client, the checks, the token and where it may go,
/// and when the attempt's budget runs out.
pub(super) struct Attempt<'a> {
    pub(super) client: &'a HttpClient,
    pub(super) checks: &'a Checks,
    /// Whether a link the gate takes from a server may be plain http.
    pub(super) transport: url::Transport,
    pub(super) track: &'a Track,
    pub(super) token: Option<String>,
    /// The `--header-file` headers, names and values; they go where the token goes.
    pub(super) headers: Vec<(String, String)>,
    pub(super) token_origins: Vec<String>,
    /// Discovery as MCP clients do it (`auto`, `--resource`): their header on metadata requests.
    pub(super) mcp: bool,
    pub(super) deadline: Instant,
    pub(super) budget: Duration,
    /// The longest `Retry-After` any fetch of the attempt was answered with (a 429 or 503), also
    /// from a URL the attempt moved past or a link whose failure is reported in other words: a
    /// failed attempt asks for it, whichever fetch it came from.
    pub(super) asked: Cell<Option<Duration>>,
}

/// The protocol revision MCP clients announce on metadata requests: the TypeScript SDK 1.32.2
/// sends `MCP-Protocol-Version: LATEST_PROTOCOL_VERSION` ('2025-11-25', `types.js`) from
/// `tryMetadataDiscovery` and `discoverAuthorizationServerMetadata` (`client/auth.js`).
pub(crate) const MCP_PROTOCOL_VERSION: &str = "2025-11-25";

/// A candidate URL's answer under `auto` or `--resource`: a response, or a redirect the gate
/// does not follow, which MCP clients pass over (see [`Attempt::fetch_candidate`]).
pub(crate) enum Answer {
    Got(Fetched),
    /// Why the URL was passed over: a [`FetchError::Redirect`].
    Skipped(FetchError),
}

impl Attempt<'_> {
    /// The request for `link` at `to`. An MCP client's discovery (not the keys, which a Go
    /// resource server fetches) announces its protocol revision and follows redirects as the SDK
    /// does, within the origin; everything else as Go's `http.Client`. Every header the user
    /// gave (the token, each `--header-file`) is a secret: it goes only to the token's origins,
    /// and never past a redirect to another origin ([`Request::secrets`]).
    fn request_for(&self, link: Link, to: &str) -> Request<'_> {
        let mcp = self.mcp && link != Link::Jwks;
        let mut request = Request {
            headers: Vec::new(),
            secrets: Vec::new(),
            redirects: if mcp { Redirects::SameOrigin } else { Redirects::Go },
        };
        if mcp {
            request.headers.push(("mcp-protocol-version", MCP_PROTOCOL_VERSION.to_string()));
        }
        if carries_token(&self.token_origins, to) {
            if let Some(t) = &self.token {
                request.secrets.push(("authorization", format!("Bearer {t}")));
            }
            request.secrets.extend(self.headers.iter().map(|(name, value)| (name.as_str(), value.clone())));
        }
        request
    }

    pub(super) fn get(&self, link: Link, context: &str, to: &str) -> Result<Fetched, FetchError> {
        self.track.enter(link, context, to);
        let left = self.deadline.saturating_duration_since(Instant::now());
        let fetched = self.client.get(to, left, &self.request_for(link, to), &self.track.progress);
        if let Ok(f) = &fetched {
            self.note_retry_after(f);
        }
        fetched.map(|mut f| {
            // Carried there, unless a redirect left the origins (and then the secrets stay behind).
            let carried = carries_token(&self.token_origins, to) && carries_token(&self.token_origins, &f.url);
            f.credentials = match (self.token.is_some(), !self.headers.is_empty()) {
                _ if !carried => None,
                (true, true) => Some("--token-file and --header-file"),
                (true, false) => Some("--token-file"),
                (false, true) => Some("--header-file"),
                (false, false) => None,
            };
            self.hide_token(f)
        })
    }

    /// Fetches one link of the chain within what is left of the budget; a transport failure is
    /// classed by the link, and a timeout names the attempt's budget.
    pub(super) fn fetch(&self, link: Link, context: &str, to: &str) -> Result<Fetched, Failure> {
        let fetched = self.get(link, context, to);
        self.refuse_private(link, context)?;
        fetched.map_err(|e| self.failure(link, context, to, e))
    }

    /// Like [`Attempt::fetch`], for one of several URLs in the MCP clients' order: a redirect
    /// that is not followed is passed over, as the TypeScript SDK 1.32.2 does (`fetchWithinOrigin`
    /// in `shared/transport.js` returns a cross-origin or downgrading redirect unfollowed, and
    /// `discoverAuthorizationServerMetadata` goes on for any status below 500, "or a redirect that
    /// was not followed"; `shouldAttemptFallback` tries the root after the path form likewise).
    pub(super) fn fetch_candidate(&self, link: Link, context: &str, to: &str) -> Result<Answer, Failure> {
        let fetched = self.get(link, context, to);
        self.refuse_private(link, context)?;
        match fetched {
            Ok(fetched) => Ok(Answer::Got(fetched)),
            Err(e @ FetchError::Redirect(_)) => Ok(Answer::Skipped(e)),
            Err(e) => Err(self.failure(link, context, to, e)),
        }
    }

    /// With `--refuse-private-addresses`, an address an SSRF-guarded client refuses fails the
    /// link, whatever the fetch gave.
    pub(super) fn refuse_private(&self, link: Link, context: &str) -> Result<(), Failure> {
        if self.checks.refuse_private_addresses
            && let Some(refused) = refused_address(&self.track.progress.resolved())
        {
            // The guarded client's own refusal (ToolHive's): final.
            let own = self.checks.rules.client == crate::rules::client::Client::ToolHive;
            return Err(refused.at(link, context).with(|f| f.conclusive = own));
        }
        Ok(())
    }

    /// The failure of fetching `to`, the link `link` of the server `context` names: with the
    /// proxy it went through, and what to do about a refused cross-origin redirect or a
    /// certificate oauth2-proxy would not check (conclusive: waiting cannot help).
    pub(super) fn failure(&self, link: Link, context: &str, to: &str, e: FetchError) -> Failure {
        let e = match e {
            FetchError::TimedOut { stage, host, .. } => FetchError::TimedOut { stage, host, after: self.budget },
            other => other,
        };
        let rejected = matches!(e, FetchError::Tls { error: rustls::Error::InvalidCertificate(_), .. })
            && self.checks.proxy_skips_verify;
        let cross_origin = matches!(&e, FetchError::Redirect(RefusedRedirect { kind: RedirectKind::CrossOrigin, .. }));
        let redirect = redirect_hint(link, context.is_empty() && self.checks.one_issuer).filter(|_| cross_origin);
        let failure = link_failure(link, context, to, e, self.track.progress.at());
        failure
            .with(|f| (f.proxy, f.conclusive) = (self.client.proxy_for(to), rejected))
            .hint(redirect.map(Into::into))
            .hint(rejected.then(|| skipped_by_proxy().into()))
    }
}

impl Attempt<'_> {
    pub(super) fn note_retry_after(&self, fetched: &Fetched) {
        let asked = Some(fetched.status)
            .filter(|s| matches!(s, 429 | 503))
            .and(fetched.retry_after.as_deref())
            .and_then(|v| crate::net::response::retry_after(v, std::time::SystemTime::now()));
        if asked > self.asked.get() {
            self.asked.set(asked);
        }
    }

    /// The attempt's failure, asking for the longest `Retry-After` any of its fetches was given.
    pub(super) fn asking(&self, mut failure: Failure) -> Failure {
        failure.retry_after = failure.retry_after.max(self.asked.get());
        failure
    }

    /// The token and the header files' values taken out of a body a server sent back, before any
    /// excerpt is cut from it: an error page's always, a 200's only for a secret long enough (16
    /// bytes; every real bearer token is) not to be part of a valid document by chance. Every
    /// output is scrubbed again ([`token::scrub`]), which covers the headers and whole values.
    fn hide_token(&self, mut fetched: Fetched) -> Fetched {
        let token = self.token.iter().map(|t| (t.as_str(), token::TOKEN_REDACTED));
        let values = self.headers.iter().map(|(_, v)| (v.as_str(), token::HEADER_REDACTED));
        for (secret, replacement) in token.chain(values) {
            if fetched.status != 200 || secret.len() >= 16 {
                token::hide_in_body(&mut fetched.body, secret, replacement);
            }
        }
        fetched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::authorization_server::{MetadataKind, Rules};

    fn checks(kind: MetadataKind, jwks_url: Option<&str>) -> Checks {
        Checks {
            rules: Rules { kind, strict: false, skip_issuer_check: false, client: Default::default() },
            check_jwks: jwks_url.is_some(),
            jwks_url: jwks_url.map(str::to_string),
            token_file: None,
            header_files: Vec::new(),
            proxy_skips_verify: false,
            refuse_legacy_auth: false,
            one_issuer: true,
            refuse_private_addresses: false,
        }
    }

    #[test]
    fn the_token_goes_to_the_issuers_own_origin_only() {
        let origins = token_origins(&checks(MetadataKind::Oidc, None), "https://kubernetes.default.svc", None);
        assert!(carries_token(&origins, "https://kubernetes.default.svc/.well-known/openid-configuration"));
        assert!(carries_token(&origins, "https://kubernetes.default.svc/openid/v1/jwks"), "the same origin's keys");
        assert!(carries_token(&origins, "https://kubernetes.default.svc:443/x"), "the default port is the same origin");
        for elsewhere in [
            "http://kubernetes.default.svc/openid/v1/jwks",
            "https://kubernetes.default.svc:8443/openid/v1/jwks",
            "https://kubernetes.default.svc.evil.example/openid/v1/jwks",
            "https://evil.example/kubernetes.default.svc",
            "https://user@kubernetes.default.svc.evil.example/",
            "not a url",
        ] {
            assert!(!carries_token(&origins, elsewhere), "{elsewhere}");
        }
    }

    #[test]
    fn a_discovery_url_moves_the_token_there_and_a_jwks_url_adds_its_origin() {
        let at = "https://kc.auth.svc:8443/realms/main/.well-known/openid-configuration";
        let origins = token_origins(&checks(MetadataKind::Oidc, None), "https://sso.example/realms/main", Some(at));
        assert_eq!(origins, ["https://kc.auth.svc:8443"], "origins carry their port");
        assert!(!carries_token(&origins, "https://sso.example/realms/main/protocol/openid-connect/certs"));
        let keys = "https://kubernetes.default.svc/openid/v1/jwks";
        let origins = token_origins(&checks(MetadataKind::Oidc, Some(keys)), "https://issuer.example", None);
        assert_eq!(origins, ["https://issuer.example:443", "https://kubernetes.default.svc:443"]);
    }

    #[test]
    fn auto_discovery_keeps_the_token_on_the_issuers_origin() {
        let origins = token_origins(&checks(MetadataKind::Auto, None), "https://sso.example/tenant", None);
        assert!(origins.iter().all(|o| o == "https://sso.example:443"), "{origins:?}");
    }
}
