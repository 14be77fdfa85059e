//! The proxy variables, read with curl's conventions, which is what people expect from a tool that replaces
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
//! tunnel, so the certificate is still checked against the issuer's name. Which URL takes which
//! proxy is the network's decision (`net::proxy`).

use super::{ConfigError, Source};
use crate::url;

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
    pub(crate) https: Option<ProxyChoice>,
    pub(crate) http: Option<ProxyChoice>,
    /// `NO_PROXY` entries, lower case, without a leading dot.
    pub(crate) no_proxy: Vec<String>,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_proxies_are_errors() {
        let env = |k: &str| (k == "HTTPS_PROXY").then(|| "socks5://u:secret@p:1080".to_string());
        let e = ProxySettings::from_env(&env).unwrap_err().to_string();
        assert!(e.starts_with("HTTPS_PROXY") && !e.contains("secret"), "{e}");
    }
}
