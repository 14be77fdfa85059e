//! Proxy selection with curl's conventions, which is what people expect from a tool that replaces
//! a curl loop (ureq's own reading of the environment differs: it would send https through
//! `HTTP_PROXY`).
//!
//! - an `https://` URL uses `https_proxy` or `HTTPS_PROXY`, else `all_proxy`/`ALL_PROXY`;
//! - an `http://` URL uses `http_proxy` (lower case only, as curl), else `all_proxy`/`ALL_PROXY`;
//! - `HTTP_PROXY` never applies to https URLs;
//! - `no_proxy`/`NO_PROXY`: comma-separated host names (matching the name and its subdomains; a
//!   leading dot is ignored), IP addresses, CIDR ranges, or `*` for everything.
//!
//! Only http:// CONNECT proxies are supported; the TLS session to the issuer runs through the
//! tunnel, so the certificate is still checked against the issuer's name.

use crate::config::{ConfigError, Source};
use crate::url;
use std::net::IpAddr;

/// One configured proxy.
#[derive(Clone, Debug)]
pub(crate) struct ProxyChoice {
    pub(crate) proxy: ureq::Proxy,
    /// For logs, with credentials redacted.
    pub(crate) display: String,
}

/// The proxies the environment asks for.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProxySettings {
    https: Option<ProxyChoice>,
    http: Option<ProxyChoice>,
    no_proxy: Vec<String>,
}

fn first_set(env: &dyn Fn(&str) -> Option<String>, names: &[&'static str]) -> Option<(&'static str, String)> {
    names.iter().find_map(|n| env(n).filter(|v| !v.trim().is_empty()).map(|v| (*n, v.trim().to_string())))
}

fn parse_proxy(name: &'static str, value: String) -> Result<ProxyChoice, ConfigError> {
    let with_scheme = if value.contains("://") { value.clone() } else { format!("http://{value}") };
    let invalid = |expected: &str| ConfigError::InvalidValue {
        source: Source::Env(name),
        value: url::redact(&value),
        expected: expected.to_string(),
    };
    if !with_scheme.starts_with("http://") {
        return Err(invalid(
            "an http:// CONNECT proxy URL such as http://proxy:3128 (https and socks proxies are not supported)",
        ));
    }
    let proxy = ureq::Proxy::new(&with_scheme).map_err(|_| invalid("a proxy URL such as http://proxy:3128"))?;
    Ok(ProxyChoice { proxy, display: url::redact(&with_scheme) })
}

impl ProxySettings {
    /// Reads the proxy variables from an injected environment.
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<ProxySettings, ConfigError> {
        let all = first_set(env, &["all_proxy", "ALL_PROXY"]);
        let https = first_set(env, &["https_proxy", "HTTPS_PROXY"]).or_else(|| all.clone());
        let http = first_set(env, &["http_proxy"]).or(all);
        let no_proxy = first_set(env, &["no_proxy", "NO_PROXY"])
            .map(|(_, v)| {
                v.split(',')
                    .map(|s| s.trim().trim_start_matches('.').to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Ok(ProxySettings {
            https: https.map(|(n, v)| parse_proxy(n, v)).transpose()?,
            http: http.map(|(n, v)| parse_proxy(n, v)).transpose()?,
            no_proxy,
        })
    }

    /// The proxy to use for a URL, if any.
    pub(crate) fn for_url(&self, target: &url::Parts<'_>) -> Option<&ProxyChoice> {
        let choice = if target.scheme == "https" { self.https.as_ref() } else { self.http.as_ref() }?;
        let host = target.bare_host().to_ascii_lowercase();
        if self.no_proxy.iter().any(|entry| no_proxy_matches(entry, &host)) {
            return None;
        }
        Some(choice)
    }
}

/// One `NO_PROXY` entry against a lower-case host (IPv6 without brackets).
fn no_proxy_matches(entry: &str, host: &str) -> bool {
    if entry == "*" {
        return true;
    }
    let entry = url::bare_host(entry);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return match entry.split_once('/') {
            Some((net, bits)) => match (net.parse::<IpAddr>(), bits.parse::<u8>()) {
                (Ok(net), Ok(bits)) => in_cidr(ip, net, bits),
                _ => false,
            },
            None => entry.parse::<IpAddr>().is_ok_and(|e| e == ip),
        };
    }
    host == entry || host.strip_suffix(entry).is_some_and(|prefix| prefix.ends_with('.'))
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> ProxySettings {
        let vars: Vec<(String, String)> = vars.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        ProxySettings::from_env(&|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).unwrap()
    }

    fn proxy_for(s: &ProxySettings, url: &str) -> Option<String> {
        s.for_url(&url::split(url).unwrap()).map(|c| c.display.clone())
    }

    #[test]
    fn curl_rules_for_which_variable_applies() {
        let s = settings(&[("HTTP_PROXY", "http://old:1"), ("http_proxy", "http://low:2")]);
        assert_eq!(proxy_for(&s, "https://idp"), None, "HTTP_PROXY never applies to https");
        assert_eq!(proxy_for(&s, "http://idp").as_deref(), Some("http://low:2"));
        let s = settings(&[("HTTPS_PROXY", "user:pw@p:3128"), ("ALL_PROXY", "http://all:9")]);
        assert_eq!(proxy_for(&s, "https://idp").as_deref(), Some("http://***@p:3128"));
        assert_eq!(proxy_for(&s, "http://idp").as_deref(), Some("http://all:9"));
    }

    #[test]
    fn no_proxy_entries() {
        let s =
            settings(&[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", ".svc, cluster.local,10.0.0.0/8,::1,exact.host")]);
        for direct in [
            "https://kc.ns.svc",
            "https://a.cluster.local",
            "https://10.2.3.4",
            "https://[::1]:8443",
            "https://exact.host",
        ] {
            assert_eq!(proxy_for(&s, direct), None, "{direct}");
        }
        for proxied in
            ["https://svc.example", "https://notcluster.local", "https://11.0.0.1", "https://sub.exact.hostx"]
        {
            assert!(proxy_for(&s, proxied).is_some(), "{proxied}");
        }
        assert_eq!(proxy_for(&settings(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "*")]), "https://x"), None);
    }

    #[test]
    fn unsupported_proxies_are_errors() {
        let env = |k: &str| (k == "HTTPS_PROXY").then(|| "socks5://u:secret@p:1080".to_string());
        let e = ProxySettings::from_env(&env).unwrap_err().to_string();
        assert!(e.starts_with("HTTPS_PROXY") && !e.contains("secret"), "{e}");
    }
}
