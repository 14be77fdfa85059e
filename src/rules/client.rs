//! The client the gate guards (`--client`): its own rules on top of the specification's, so that
//! the gate refuses what that client refuses and waits as long as that client's own request does.
//!
//! - `any`: today's rules, the specification's (the default);
//! - `oauth2-proxy` and `go-oidc`: the same rules (oauth2-proxy's discovery and go-oidc's
//!   `oidc.NewProvider` check the issuer and read the members; both are on Go's default client,
//!   which has no timeout, so an attempt is bounded only by the time left); go-oidc, a token
//!   verifier (the API server's service-account consumers), reads no login endpoint, so a
//!   missing one draws no "usual member(s) missing" warning;
//! - `toolhive`: ToolHive's embedded auth server's OIDC upstream (v0.47.0,
//!   `pkg/authserver/upstream/oidc.go` `NewOIDCProvider` and `validateDiscoveryDocument`,
//!   `pkg/networking`'s host-scoped client): https unless the issuer's host is loopback; the
//!   members `authorization_endpoint`, `token_endpoint`, `jwks_uri`, `response_types_supported`
//!   required; every endpoint https for a non-loopback issuer, loopback for a loopback one; a
//!   private address refused unless `allow_private_ips` (or the issuer is loopback); 10 s to
//!   the response's headers (v0.66: 30 s for the whole request).
//!
//! A refusal here is the client's own: the client exits on it, and waiting cannot change it.

use super::{Json, Object};
use std::time::Duration;

/// The client the gate guards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Client {
    #[default]
    Any,
    OAuth2Proxy,
    GoOidc,
    ToolHive,
}

impl Client {
    /// The client's own bound on its discovery request; `None`: none (bounded by the time left).
    /// `Any` keeps `--attempt-timeout`'s default.
    pub(crate) fn attempt_limit(self) -> Option<Option<Duration>> {
        match self {
            Client::Any => None,
            Client::OAuth2Proxy | Client::GoOidc => Some(None),
            Client::ToolHive => Some(Some(Duration::from_secs(10))),
        }
    }

    /// ToolHive's issuer rule, before any request: `invalid issuer URL: endpoint must use HTTPS`.
    pub(crate) fn issuer_problem(self, scheme: &str, host: &str) -> Option<&'static str> {
        (self == Client::ToolHive && scheme != "https" && !loopback(host))
            .then_some("ToolHive refuses it (\"endpoint must use HTTPS\"): use https, or a loopback host")
    }

    /// A private address is refused for this issuer unless `allowed` (`allow_private_ips`, the
    /// gate's `--refuse-private-addresses=false`): ToolHive's, unless the issuer's host is loopback.
    pub(crate) fn refuses_private(self, host: &str, allowed: bool) -> bool {
        self == Client::ToolHive && !allowed && !loopback(host)
    }

    /// Why the client refuses a document that passed the specification's rules, if it does.
    pub(crate) fn refusal(self, issuer: &str, doc: &Object<'_>) -> Option<String> {
        if self != Client::ToolHive {
            return None;
        }
        let text = |k: &str| doc.get(k).and_then(Json::as_str).filter(|s| !s.is_empty());
        let listed = |k: &str| doc.get(k).and_then(Json::items).is_some_and(|mut a| a.next().is_some());
        let required = ["authorization_endpoint", "token_endpoint", "jwks_uri"];
        if let Some(member) = required.into_iter().find(|k| text(k).is_none()) {
            return Some(format!("no {member:?}"));
        }
        if !listed("response_types_supported") {
            return Some("no \"response_types_supported\"".into());
        }
        let local = crate::url::split(issuer).is_ok_and(|p| loopback(p.host));
        let members = ["authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"];
        members.into_iter().find_map(|k| {
            let endpoint = text(k)?;
            let parts = crate::url::split(&endpoint).ok();
            match parts {
                Some(p) if local && !loopback(p.host) => {
                    Some(format!("{k} {endpoint:?}: the issuer is loopback but this host is not"))
                }
                Some(p) if !local && p.scheme != "https" => {
                    Some(format!("{k} {endpoint:?}: all endpoints must use HTTPS for non-localhost issuers"))
                }
                _ => None,
            }
        })
    }
}

/// ToolHive's loopback host (`oauthproto.IsLoopbackHost`), narrower than the gate's own
/// `url::is_loopback`: `localhost` in any case (no dot, no subdomain), or an address Go calls
/// loopback (127/8, `::1`, `::ffff:127.x`). `host` as `url::Parts::host` writes it.
fn loopback(host: &str) -> bool {
    let host = crate::url::bare_host(host);
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| match ip {
            std::net::IpAddr::V4(v4) => v4.is_loopback(),
            std::net::IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// The refusal of `doc`, written out and opened as a body is.
    fn refusal(client: Client, issuer: &str, doc: &Map<String, Value>) -> Option<String> {
        let body = serde_json::to_vec(doc).unwrap();
        client.refusal(issuer, &crate::rules::open_object(&body, &[]).unwrap())
    }

    fn doc(issuer: &str, endpoints: &str) -> Map<String, Value> {
        object(json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{endpoints}/auth"),
            "token_endpoint": format!("{endpoints}/token"),
            "jwks_uri": format!("{endpoints}/certs"),
            "response_types_supported": ["code"],
        }))
    }

    /// The host of an authority, as the callers take it from `url::split`.
    fn host(authority: &str) -> String {
        crate::url::split(&format!("https://{authority}/")).unwrap().host.to_string()
    }

    #[test]
    fn loopback_is_toolhive_s() {
        for yes in
            ["localhost", "LOCALHOST:8443", "127.0.0.1", "127.9.9.9:1", "[::1]", "[::1]:443", "[::ffff:127.0.0.1]"]
        {
            assert!(loopback(&host(yes)), "{yes}");
        }
        for no in ["localhost.", "idp.localhost", "10.0.0.1", "idp.example:443", "[::2]"] {
            assert!(!loopback(&host(no)), "{no}");
        }
    }

    #[test]
    fn toolhive_refuses_what_its_upstream_refuses() {
        let t = Client::ToolHive;
        assert_eq!(refusal(t, "https://idp", &doc("https://idp", "https://idp")), None);
        assert_eq!(refusal(t, "http://127.0.0.1:1", &doc("http://127.0.0.1:1", "http://localhost:1")), None);
        let plain = refusal(t, "https://idp", &doc("https://idp", "http://idp")).unwrap();
        assert!(plain.contains("all endpoints must use HTTPS for non-localhost issuers"), "{plain}");
        let away = refusal(t, "https://localhost", &doc("https://localhost", "https://idp")).unwrap();
        assert!(away.contains("the issuer is loopback but this host is not"), "{away}");
        let mut api_server = doc("https://idp", "https://idp");
        api_server.remove("authorization_endpoint");
        assert_eq!(refusal(t, "https://idp", &api_server).unwrap(), "no \"authorization_endpoint\"");
        let mut no_types = doc("https://idp", "https://idp");
        no_types.insert("response_types_supported".into(), json!([]));
        assert!(refusal(t, "https://idp", &no_types).is_some());
        assert_eq!(refusal(Client::OAuth2Proxy, "https://idp", &api_server), None);
    }

    #[test]
    fn the_issuer_private_addresses_and_time_are_the_client_s() {
        let t = Client::ToolHive;
        assert!(t.issuer_problem("http", "idp.example").is_some());
        assert_eq!(t.issuer_problem("http", &host("localhost:8080")), None);
        assert_eq!(Client::Any.issuer_problem("http", "idp.example"), None);
        assert!(t.refuses_private("idp.example", false) && !t.refuses_private("idp.example", true));
        assert!(!t.refuses_private(&host("127.0.0.1:8443"), false) && !Client::Any.refuses_private("idp", false));
        assert_eq!(t.attempt_limit(), Some(Some(Duration::from_secs(10))));
        assert_eq!((Client::OAuth2Proxy.attempt_limit(), Client::Any.attempt_limit()), (Some(None), None));
    }
}
