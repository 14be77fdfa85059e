//! A URL taken apart without being normalised ([`split`], [`Parts`]), checked for each use (an
//! issuer, a fetched link, a configured URL), and the URLs derived from one: the well-known
//! locations, and whether a link may be plain http ([`Transport`]).

use super::redaction::redact;
use std::fmt;

/// The longest URL the HTTP stack accepts (the `http` crate's `Uri` limit). Longer ones would only
/// fail at request time, so they are refused when read.
pub(crate) const MAX_LEN: usize = u16::MAX as usize - 1;

/// The parts of an absolute `http(s)` URL, borrowed from the raw string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parts<'a> {
    pub(crate) scheme: &'a str,
    /// `host[:port]` exactly as written (IPv6 literals keep their brackets), without userinfo.
    pub(crate) authority: &'a str,
    /// The host as written, IPv6 literals in brackets.
    pub(crate) host: &'a str,
    pub(crate) port: Option<u16>,
    /// Everything after the authority, before any query; may be empty.
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    pub(crate) fragment: Option<&'a str>,
    pub(crate) has_userinfo: bool,
}

impl Parts<'_> {
    /// The port, with the scheme's default made explicit.
    pub(crate) fn port_or_default(&self) -> u16 {
        self.port.unwrap_or_else(|| default_port(self.scheme))
    }

    /// `scheme://host:port` with the host in lower case and the default port made explicit: two
    /// URLs are the same origin when these are equal.
    pub(crate) fn origin(&self) -> String {
        format!("{}://{}:{}", self.scheme, self.host.to_ascii_lowercase(), self.port_or_default())
    }

    /// The host without IPv6 brackets, as TLS, proxies and resolvers want it.
    pub(crate) fn bare_host(&self) -> &str {
        bare_host(self.host)
    }
}

/// The port a scheme implies when the URL names none.
pub(crate) fn default_port(scheme: &str) -> u16 {
    if scheme.eq_ignore_ascii_case("http") { 80 } else { 443 }
}

/// A host without the brackets of an IPv6 literal: `[::1]` → `::1`; other hosts unchanged.
pub(crate) fn bare_host(host: &str) -> &str {
    host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host)
}

/// Why a string is not a usable `http(s)` URL. Each message says what would be right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    Empty,
    /// `{{`: a Helm or Go template that reached the gate unrendered.
    Template,
    /// Leading or trailing white space, which a client given the same value would not strip.
    SurroundingSpace,
    TooLong(usize),
    NotAbsolute,
    UnsupportedScheme(String),
    EmptyHost,
    BadPort(String),
    BadIpv6Literal,
    /// An IPv6 address without its brackets (`https://fd00::1:8443`): the first `:` reads as the
    /// port's.
    UnbracketedIpv6,
    /// A host with characters beyond ASCII: DNS and TLS want its punycode form.
    NonAsciiHost(String),
    Userinfo,
    Query,
    Fragment,
    BadCharacter(char),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Empty => write!(f, "is empty; give a URL such as https://sso.example.com/realms/NAME"),
            Problem::Template => write!(
                f,
                "contains '{{{{': an unrendered Helm/Go template; the oauth2-proxy chart does not render templates in \
                 extraInitContainers (it writes them with plain toYaml), so write the URL itself"
            ),
            Problem::SurroundingSpace => write!(
                f,
                "has leading or trailing white space; remove it (the client would use the value as it is, space and all)"
            ),
            Problem::TooLong(len) => {
                write!(f, "is {len} characters long; the HTTP stack accepts URLs of at most {MAX_LEN}")
            }
            Problem::NotAbsolute => write!(f, "is not an absolute URL; write it as https://host[:port][/path]"),
            Problem::UnsupportedScheme(s) => {
                write!(f, "has the scheme '{s}'; only https (or http for in-cluster use) is supported, in lower case")
            }
            Problem::EmptyHost => write!(f, "has no host name"),
            Problem::BadPort(p) => write!(f, "has an invalid port '{p}'; use 1-65535"),
            Problem::BadIpv6Literal => write!(f, "has a malformed IPv6 literal; write it as https://[::1]:8443"),
            Problem::UnbracketedIpv6 => write!(
                f,
                "has an IPv6 address without brackets, so its first ':' reads as a port; write it in brackets, \
                 https://[fd00::1]:8443"
            ),
            Problem::NonAsciiHost(host) => write!(
                f,
                "has the host '{host}', which is not ASCII; write it in its punycode form (xn--…), as DNS and TLS certificates do"
            ),
            Problem::Userinfo => write!(
                f,
                "carries credentials (user:password@); metadata is public, remove them (use --token-file for a bearer token)"
            ),
            Problem::Query => write!(
                f,
                "has a query (?...); an issuer identifier has no query component (OIDC Discovery §3). A metadata URL \
                 that needs one (Azure AD B2C's ?p=, Entra's ?appid=) goes in --discovery-url"
            ),
            Problem::Fragment => write!(
                f,
                "has a fragment (#...), which is never sent to the server; remove it (an issuer identifier has no \
                 fragment component, OIDC Discovery §3)"
            ),
            Problem::BadCharacter(c) => {
                write!(f, "contains the character {c:?}, which is not allowed in a URL; percent-encode it")
            }
        }
    }
}

/// Splits an absolute `http`/`https` URL. Query and fragment are returned, not rejected: the caller
/// decides (an issuer may have neither; a redirect target may have a query).
pub(crate) fn split(raw: &str) -> Result<Parts<'_>, Problem> {
    if raw.trim().is_empty() {
        return Err(Problem::Empty);
    }
    if raw.trim() != raw {
        return Err(Problem::SurroundingSpace);
    }
    if raw.len() > MAX_LEN {
        return Err(Problem::TooLong(raw.len()));
    }
    let (scheme, rest) = raw.split_once("://").ok_or(Problem::NotAbsolute)?;
    if scheme != "https" && scheme != "http" {
        if !is_scheme(scheme) {
            return Err(Problem::NotAbsolute);
        }
        return Err(Problem::UnsupportedScheme(scheme.to_string()));
    }
    let (before_query, query, fragment) = split_query_fragment(rest);
    let (authority, path) = match before_query.find('/') {
        Some(i) => before_query.split_at(i),
        None => (before_query, ""),
    };
    let (has_userinfo, authority) = match authority.rsplit_once('@') {
        Some((_, a)) => (true, a),
        None => (false, authority),
    };
    let (host, port_str) = if let Some(v6) = authority.strip_prefix('[') {
        let (inside, after) = v6.split_once(']').ok_or(Problem::BadIpv6Literal)?;
        if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
            return Err(Problem::BadIpv6Literal);
        }
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or(Problem::BadIpv6Literal)?),
        };
        (&authority[..inside.len() + 2], port)
    } else {
        match authority.split_once(':') {
            // Two colons or more: an IPv6 address, never a host and a port.
            Some((_, p)) if p.contains(':') => return Err(Problem::UnbracketedIpv6),
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(Problem::EmptyHost);
    }
    if !host.is_ascii() {
        return Err(Problem::NonAsciiHost(host.to_string()));
    }
    if let Some(c) = raw.chars().find(|c| c.is_control() || c.is_whitespace() || !c.is_ascii()) {
        return Err(Problem::BadCharacter(c));
    }
    if let Some(c) = host.chars().find(|c| !(c.is_ascii_alphanumeric() || "-._~[]:%".contains(*c))) {
        return Err(Problem::BadCharacter(c));
    }
    let port = match port_str {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return Err(Problem::BadPort(p.to_string())),
        },
    };
    Ok(Parts { scheme, authority, host, port, path, query, fragment, has_userinfo })
}

/// RFC 3986 §3: what comes before `?`, the query (up to `#`) and the fragment, in one place for
/// [`split`] and for redirect references.
pub(crate) fn split_query_fragment(raw: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, fragment) = match raw.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (raw, None),
    };
    match rest.split_once('?') {
        Some((r, q)) => (r, Some(q), fragment),
        None => (rest, None, fragment),
    }
}

/// RFC 3986 §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
pub(crate) fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Checks that `raw` can serve as an issuer identifier: an absolute http(s) URL with a host,
/// without credentials, query or fragment.
pub(crate) fn check_issuer(raw: &str) -> Result<Parts<'_>, Problem> {
    let parts = check_fetched(raw)?;
    if parts.query.is_some() {
        return Err(Problem::Query);
    }
    Ok(parts)
}

/// Checks that `raw` can be fetched as the user gave it (`--discovery-url`, `--jwks-url`): as
/// [`check_issuer`], but a query is kept and sent. Azure AD B2C serves its metadata at
/// `…/v2.0/.well-known/openid-configuration?p=<policy>`, and Entra's custom signing keys need
/// `?appid=`; its `jwks_uri` carries the same query. A fragment is never sent, so it is refused.
pub(crate) fn check_fetched(raw: &str) -> Result<Parts<'_>, Problem> {
    let parts = split(raw)?;
    if parts.has_userinfo {
        return Err(Problem::Userinfo);
    }
    if parts.fragment.is_some() {
        return Err(Problem::Fragment);
    }
    Ok(parts)
}

/// A URL the user configured, checked by `check` ([`check_issuer`] or [`check_fetched`]) and
/// parsed the same way by the HTTP stack (ureq uses the `http` crate), so that no URL fails only
/// at run time.
pub(crate) fn check_configured(raw: &str, check: fn(&str) -> Result<Parts<'_>, Problem>) -> Result<Parts<'_>, Problem> {
    let parts = check(raw)?;
    if raw.parse::<ureq::http::Uri>().is_err() {
        return Err(Problem::NotAbsolute);
    }
    Ok(parts)
}

/// OIDC Discovery §4.1: remove one terminating `/` from the issuer, then append `suffix`
/// (`/.well-known/openid-configuration`).
pub(crate) fn append_well_known(issuer: &str, suffix: &str) -> String {
    let trimmed = issuer.strip_suffix('/').unwrap_or(issuer);
    format!("{trimmed}{suffix}")
}

/// RFC 8414 §3.1 and RFC 9728 §3.1: remove one terminating `/`, then insert `suffix`
/// (`/.well-known/oauth-authorization-server`) between the host and the path; a query (which a
/// protected resource's identifier may have) stays after the path.
pub(crate) fn insert_well_known(url: &str, suffix: &str) -> String {
    let (before_query, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let trimmed = before_query.strip_suffix('/').unwrap_or(before_query);
    let after_scheme = trimmed.find("://").map_or(0, |i| i + 3);
    let path_start = trimmed[after_scheme..].find('/').map_or(trimmed.len(), |i| after_scheme + i);
    let (origin, path) = trimmed.split_at(path_start);
    match query {
        Some(q) => format!("{origin}{suffix}{path}?{q}"),
        None => format!("{origin}{suffix}{path}"),
    }
}

/// `suffix` at the root of the URL's origin (`https://h/tenant` → `https://h{suffix}`).
pub(crate) fn root_well_known(url: &str, suffix: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..].find(['/', '?', '#']).map_or(url.len(), |i| after_scheme + i);
    format!("{}{suffix}", &url[..end])
}

/// Whether the URL has a path beyond a lone `/` (the MCP discovery order depends on it).
pub(crate) fn has_path(url: &str) -> bool {
    split(url).is_ok_and(|p| !p.path.is_empty() && p.path != "/")
}

/// Whether a host (as [`Parts::host`] writes it) is the machine itself: `localhost` or a name
/// under it, an IPv4 address in 127.0.0.0/8, or `[::1]`.
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(&host);
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
        || bare_host(host).parse::<std::net::Ipv6Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// Which links of a chain may use plain http, decided by the URLs the user gave for the target.
///
/// A chain the user gave as https stays https: RFC 9728 §7.1, RFC 8414 §3 (and §2: an issuer
/// "uses the https scheme") and the MCP authorization specification's "Communication Security"
/// require TLS on every link, so a plain `http://` link inside it fails, naming the link and the
/// URL. When a URL the user gave for the target is itself `http://` (`--issuer`,
/// `--discovery-url` or `--resource`, for in-cluster use), each plain link is only a warning, as
/// that URL is. The links judged so are the ones the gate takes from a server, never from the
/// user: a resource metadata URL named by the resource's challenge (the derived ones share the
/// resource's scheme), each authorization server the resource metadata lists (whose metadata URL
/// is derived from it and so shares its scheme), a document's `jwks_uri` fetched under
/// `--check-jwks`, and with `auto` the `token_endpoint` (see `discovery::mcp_client_rules`,
/// which also lets a loopback host through). A redirect from https to http fails anyway
/// (`http`). The user's own URLs, `--jwks-url` included, keep their rule: plain http is allowed
/// with a warning when the settings are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Every URL the user gave is https: a plain link fails.
    #[default]
    TlsOnly,
    /// The user gave an `http://` URL: a plain link is a warning.
    PlainAllowed,
}

impl Transport {
    /// `PlainAllowed` when any of the user's URLs for the target is `http://`.
    pub(crate) fn for_user_urls<'a>(urls: impl IntoIterator<Item = &'a str>) -> Transport {
        if urls.into_iter().any(|u| split(u).is_ok_and(|p| p.scheme == "http")) {
            Transport::PlainAllowed
        } else {
            Transport::TlsOnly
        }
    }

    /// Judges one link, `what` naming it (`jwks_uri`, …): `Ok(None)` when it is not plain http
    /// (a URL that does not parse is left to the caller's own check), `Ok(Some(warning))` when
    /// plain http is allowed, `Err(why)` when it is not.
    pub(crate) fn judge(self, what: &str, to: &str) -> Result<Option<String>, String> {
        if !split(to).is_ok_and(|p| p.scheme == "http") {
            return Ok(None);
        }
        let to = redact(to);
        match self {
            Transport::PlainAllowed => Ok(Some(format!(
                "{what} {to} uses plain http: not protected by TLS (accepted because the URL you gave is http, for \
                 in-cluster use)"
            ))),
            Transport::TlsOnly => Err(format!(
                "{what} {to} uses plain http inside a chain given as https: RFC 9728 §7.1, RFC 8414 §3 and the MCP \
                 specification (Communication Security) require TLS; serve it over https (plain http is accepted, \
                 with a warning, only when the URL you give the gate is http)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_the_machine_itself() {
        for host in ["localhost", "LOCALHOST", "mcp.localhost", "localhost.", "127.0.0.1", "127.1.2.3", "[::1]"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["localhost.example.com", "mylocalhost", "128.0.0.1", "10.0.0.1", "[::2]", "[::ffff:8.8.8.8]"] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn a_chain_given_as_https_stays_https() {
        assert_eq!(Transport::for_user_urls(["https://a", "https://b"]), Transport::TlsOnly);
        assert_eq!(Transport::for_user_urls(["https://a", "http://svc:8080"]), Transport::PlainAllowed);
        assert_eq!(Transport::for_user_urls([]), Transport::TlsOnly);
        let tls = Transport::TlsOnly;
        assert_eq!(tls.judge("jwks_uri", "https://h/k"), Ok(None));
        assert_eq!(tls.judge("jwks_uri", "not a url"), Ok(None), "left to the caller's own check");
        let e = tls.judge("jwks_uri", "http://u:p@h/k").unwrap_err();
        assert!(e.starts_with("jwks_uri http://***@h/k uses plain http inside a chain given as https"), "{e}");
        let w = Transport::PlainAllowed.judge("jwks_uri", "http://h/k").unwrap().unwrap();
        assert!(w.starts_with("jwks_uri http://h/k uses plain http: not protected by TLS"), "{w}");
        assert_eq!(Transport::PlainAllowed.judge("jwks_uri", "https://h/k"), Ok(None));
    }

    #[test]
    fn issuer_urls_are_checked() {
        assert!(check_issuer("https://sso.example.com/realms/x").is_ok());
        assert!(check_issuer("http://keycloak:8080/realms/x").is_ok());
        let v6 = check_issuer("https://[::1]:8443").unwrap();
        assert_eq!((v6.host, v6.port, v6.bare_host()), ("[::1]", Some(8443), "::1"));
        assert_eq!(check_issuer("sso.example.com"), Err(Problem::NotAbsolute));
        assert_eq!(check_issuer("ftp://x"), Err(Problem::UnsupportedScheme("ftp".into())));
        assert_eq!(check_issuer("https://"), Err(Problem::EmptyHost));
        assert_eq!(check_issuer("https://h:0"), Err(Problem::BadPort("0".into())));
        assert_eq!(check_issuer("https://h:99999"), Err(Problem::BadPort("99999".into())));
        assert_eq!(check_issuer("https://h/?a=b"), Err(Problem::Query));
        assert_eq!(check_issuer("https://h/#x"), Err(Problem::Fragment));
        let b2c = "https://t.b2clogin.com/t.onmicrosoft.com/v2.0/.well-known/openid-configuration?p=B2C_1_signin";
        assert_eq!(check_fetched(b2c).map(|p| p.query), Ok(Some("p=B2C_1_signin")), "a metadata URL keeps its query");
        assert_eq!(check_fetched("https://h/m?p=x#y"), Err(Problem::Fragment));
        assert_eq!(check_fetched("https://u:p@h/m?p=x"), Err(Problem::Userinfo));
        assert_eq!(check_configured(b2c, check_issuer), Err(Problem::Query));
        assert_eq!(check_issuer("https://u:p@h/"), Err(Problem::Userinfo));
        assert_eq!(check_issuer("https://h/a b"), Err(Problem::BadCharacter(' ')));
        assert_eq!(check_issuer("https://[::1"), Err(Problem::BadIpv6Literal));
        // Issue 36: without brackets, an IPv6 address is said as such, not as a bad port.
        assert_eq!(check_issuer("https://fd00::1:8443/"), Err(Problem::UnbracketedIpv6));
        assert_eq!(check_issuer("https://::1/"), Err(Problem::UnbracketedIpv6));
        assert!(Problem::UnbracketedIpv6.to_string().contains("https://[fd00::1]:8443"));
    }

    #[test]
    fn problems_people_actually_make_are_named() {
        assert_eq!(check_issuer(" https://h"), Err(Problem::SurroundingSpace));
        assert_eq!(check_issuer("https://h/realms/x\n"), Err(Problem::SurroundingSpace));
        assert_eq!(check_issuer("https://bücher.example/x"), Err(Problem::NonAsciiHost("bücher.example".into())));
        assert!(Problem::NonAsciiHost("bücher.example".into()).to_string().contains("punycode form (xn--"));
        assert_eq!(check_issuer("https://h/bücher"), Err(Problem::BadCharacter('ü')));
        let long = format!("https://h/{}", "a".repeat(MAX_LEN));
        assert_eq!(check_issuer(&long), Err(Problem::TooLong(long.len())));
    }

    #[test]
    fn origins_make_default_ports_explicit() {
        let a = split("https://H.example").unwrap().origin();
        let b = split("https://h.example:443/x?y").unwrap().origin();
        assert_eq!(a, b);
        assert_ne!(a, split("http://h.example").unwrap().origin());
        assert_eq!(bare_host("[::1]"), "::1");
        assert_eq!(bare_host("h"), "h");
        assert_eq!((default_port("http"), default_port("https")), (80, 443));
    }

    #[test]
    fn well_known_is_appended_or_inserted() {
        let oidc = "/.well-known/openid-configuration";
        let oauth = "/.well-known/oauth-authorization-server";
        assert_eq!(append_well_known("https://ex.com", oidc), "https://ex.com/.well-known/openid-configuration");
        assert_eq!(append_well_known("https://ex.com/", oidc), "https://ex.com/.well-known/openid-configuration");
        assert_eq!(append_well_known("https://ex.com/i1", oidc), "https://ex.com/i1/.well-known/openid-configuration");
        assert_eq!(insert_well_known("https://ex.com", oauth), "https://ex.com/.well-known/oauth-authorization-server");
        assert_eq!(
            insert_well_known("https://kc/realms/x/", oauth),
            "https://kc/.well-known/oauth-authorization-server/realms/x"
        );
        assert_eq!(
            insert_well_known("https://[::1]:8443/realms/x", oauth),
            "https://[::1]:8443/.well-known/oauth-authorization-server/realms/x"
        );
        let prm = "/.well-known/oauth-protected-resource";
        assert_eq!(
            insert_well_known("https://h/mcp?t=1", prm),
            "https://h/.well-known/oauth-protected-resource/mcp?t=1"
        );
        assert_eq!(insert_well_known("https://h?t=1", prm), "https://h/.well-known/oauth-protected-resource?t=1");
        assert_eq!(
            root_well_known("https://h:1/tenant/mcp?x", prm),
            "https://h:1/.well-known/oauth-protected-resource"
        );
        assert!(has_path("https://h/x") && !has_path("https://h/") && !has_path("https://h"));
    }
}
