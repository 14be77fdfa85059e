//! `--connect-to HOST:PORT:CONNECT_HOST:CONNECT_PORT`, with curl's semantics: a request for
//! HOST:PORT opens its TCP connection to CONNECT_HOST:CONNECT_PORT instead, while TLS (SNI and
//! the certificate check) and the Host header keep HOST. For pods that must reach the provider
//! through its in-cluster Service but validate it under its public name. The rules are read
//! here; the resolver in `http` applies them.

use super::{ConnectToProblem, Notice, Source};
use crate::url;
use std::fmt;

/// One rule. `None` fields match anything (HOST, PORT) or keep the original (CONNECT_*).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConnectTo {
    pub(crate) host: Option<String>,
    pub(crate) port: Option<u16>,
    pub(crate) to_host: Option<String>,
    pub(crate) to_port: Option<u16>,
}

impl fmt::Display for ConnectTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = |h: &Option<String>| h.clone().unwrap_or_default();
        let p = |p: &Option<u16>| p.map(|p| p.to_string()).unwrap_or_default();
        write!(f, "{}:{}:{}:{}", o(&self.host), p(&self.port), o(&self.to_host), p(&self.to_port))
    }
}

/// Splits on `:` outside `[...]`.
fn fields(raw: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in raw.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ':' if depth == 0 => {
                out.push(&raw[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&raw[start..]);
    out
}

fn host(field: &str) -> Result<Option<String>, ConnectToProblem> {
    if field.is_empty() {
        return Ok(None);
    }
    let bare = url::bare_host(field);
    let ok = !bare.is_empty()
        && if bare.len() != field.len() {
            bare.parse::<std::net::Ipv6Addr>().is_ok()
        } else {
            bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
        };
    if !ok {
        return Err(ConnectToProblem::BadHost(field.to_string()));
    }
    Ok(Some(field.to_ascii_lowercase()))
}

fn port(field: &str) -> Result<Option<u16>, ConnectToProblem> {
    if field.is_empty() {
        return Ok(None);
    }
    match field.parse::<u16>() {
        Ok(p) if p > 0 => Ok(Some(p)),
        _ => Err(ConnectToProblem::BadPort(field.to_string())),
    }
}

impl ConnectTo {
    pub(crate) fn parse(raw: &str) -> Result<ConnectTo, ConnectToProblem> {
        let f = fields(raw.trim());
        if f.len() != 4 {
            return Err(ConnectToProblem::FieldCount);
        }
        let rule = ConnectTo { host: host(f[0])?, port: port(f[1])?, to_host: host(f[2])?, to_port: port(f[3])? };
        if rule.to_host.is_none() && rule.to_port.is_none() {
            return Err(ConnectToProblem::ChangesNothing);
        }
        Ok(rule)
    }

    /// Whether this rule applies to `host:port`, `host` as in the URL (IPv6 in brackets).
    fn applies(&self, host: &str, port: u16) -> bool {
        self.host.as_deref().is_none_or(|h| h.eq_ignore_ascii_case(host)) && self.port.is_none_or(|p| p == port)
    }

    /// Where to connect for `host:port`, if this rule applies.
    pub(crate) fn redirect(&self, host: &str, port: u16) -> Option<(String, u16)> {
        self.applies(host, port)
            .then(|| (self.to_host.clone().unwrap_or_else(|| host.to_string()), self.to_port.unwrap_or(port)))
    }
}

/// A warning for each rule that applies to none of `urls`, the URLs the gate knows it will fetch
/// before its first attempt: a rule with the wrong host or port would otherwise show only as the
/// failure it was meant to avoid (a name that does not resolve outside the cluster). A document
/// may still lead elsewhere (its `jwks_uri`, a resource's authorization server), so this is said,
/// not refused.
pub(crate) fn unmatched(rules: &[ConnectTo], urls: &[String], source: Source, notices: &mut Vec<Notice>) {
    let mut unused: Vec<&ConnectTo> = rules.iter().collect();
    let mut known: Vec<String> = Vec::new();
    for parts in urls.iter().filter_map(|u| url::split(u).ok()) {
        let (host, port) = (parts.host, parts.port_or_default());
        unused.retain(|rule| !rule.applies(host, port));
        let pair = format!("{host}:{port}");
        if !known.contains(&pair) {
            known.push(pair);
        }
    }
    for rule in unused {
        notices.push(Notice::Warning(format!(
            "{source}: '{rule}' matches none of the URLs known at start ({}): a rule applies where a URL names \
             its HOST and PORT (443 for https, 80 for http, unless the URL names a port)",
            known.join(", ")
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curl_forms() {
        let r = ConnectTo::parse("sso.example.com:443:keycloak.sso.svc:8443").unwrap();
        assert_eq!(r.redirect("sso.example.com", 443), Some(("keycloak.sso.svc".into(), 8443)));
        assert_eq!(r.redirect("SSO.example.com", 443), Some(("keycloak.sso.svc".into(), 8443)));
        assert_eq!(r.redirect("sso.example.com", 8443), None);
        assert_eq!(r.redirect("other", 443), None);
        let any = ConnectTo::parse("::127.0.0.1:").unwrap();
        assert_eq!(any.redirect("h", 9), Some(("127.0.0.1".into(), 9)));
        let v6 = ConnectTo::parse("[::1]:8443:[::1]:9443").unwrap();
        assert_eq!(v6.redirect("[::1]", 8443), Some(("[::1]".into(), 9443)));
        assert_eq!(v6.to_string(), "[::1]:8443:[::1]:9443");
    }

    #[test]
    fn bad_rules_say_why() {
        assert_eq!(ConnectTo::parse("a:1:b"), Err(ConnectToProblem::FieldCount));
        assert_eq!(ConnectTo::parse("a:x:b:1"), Err(ConnectToProblem::BadPort("x".into())));
        assert_eq!(ConnectTo::parse("a:1::"), Err(ConnectToProblem::ChangesNothing));
        assert_eq!(ConnectTo::parse("a b:1:c:2"), Err(ConnectToProblem::BadHost("a b".into())));
        assert!(ConnectTo::parse("[zz]:1:c:2").is_err());
        assert!(ConnectToProblem::FieldCount.to_string().contains("HOST:PORT:CONNECT_HOST:CONNECT_PORT"));
    }
}
