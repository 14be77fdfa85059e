//! Which proxy a URL goes through, by curl's rules: `https_proxy`/`HTTPS_PROXY` (else `all_proxy`)
//! for https, `http_proxy` (else `all_proxy`) for http, never `HTTP_PROXY` for https, and no proxy
//! for a host `NO_PROXY` matches (a name and its subdomains, an IP address, a CIDR range, `*`).
//! The variables themselves are read with the rest of the configuration (`config::ProxySettings`).

use crate::config::{ProxyChoice, ProxySettings};
use crate::url;
use std::net::IpAddr;

impl ProxySettings {
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
}
