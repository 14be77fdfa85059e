//! The proxy variables, read exactly as the guarded clients read them: they are Go programs, and
//! Go's `http.ProxyFromEnvironment` (golang.org/x/net/http/httpproxy, vendored in the standard
//! library) decides where their requests go. The gate must go the same way, or it passes while
//! the client cannot get through (or the reverse).
//!
//! - an `https://` URL uses `HTTPS_PROXY`, else `https_proxy`; an `http://` URL uses
//!   `HTTP_PROXY`, else `http_proxy` (upper case first, an empty value is unset, nothing is
//!   trimmed). `HTTP_PROXY` never applies to https, and `ALL_PROXY` is never read;
//! - `localhost` and loopback addresses are never proxied;
//! - `NO_PROXY`, else `no_proxy`: comma-separated entries, each trimmed and lower-cased: `*`
//!   (nothing is proxied), an IP address or a CIDR range, `[ipv6]:port` or `ip:port`, a domain
//!   (itself and its subdomains), `.domain` or `*.domain` (subdomains only), each with an
//!   optional `:port` that must then equal the URL's port; entries that fit none are ignored;
//! - a value is a URL (`http`, `https`, `socks5`, `socks5h`) or `host[:port]`, read as Go reads
//!   it ([`proxy_url`]). A value Go cannot parse at all is ignored by Go
//!   (direct connections), and so by the gate. A value that parses into a proxy no connection
//!   can reach (no host, a port beyond 65535, an unknown scheme) fails every request of the
//!   client, so the gate refuses it before waiting, but only where Go would use it: a value in a
//!   variable that no fetched URL uses is not an error.
//!
//! Which route a connection takes is the network's business (`net::proxy`); the route is decided
//! here, a leaf that `config` (to judge the variables before any waiting) and `net` (to route each
//! request) both use, so that neither holds the other's job.

mod proxy_url;

use proxy_url::GoUrl;
use std::fmt;
use std::net::IpAddr;

/// How the gate talks to a proxy, by its URL's scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProxyKind {
    /// CONNECT for https URLs, the request in absolute form for http ones.
    Http,
    /// As `Http`, inside TLS to the proxy, verified as any server is.
    Https,
    /// SOCKS5; `socks5h` is the same in Go: the host name goes to the proxy.
    Socks5,
}

/// One usable proxy.
#[derive(Clone, Debug)]
pub(crate) struct ProxyChoice {
    /// The variable that set it, named in every message about it.
    pub(crate) variable: &'static str,
    pub(crate) kind: ProxyKind,
    /// Without brackets.
    pub(crate) host: String,
    pub(crate) port: u16,
    /// Username and password, decoded; sent once the URL has userinfo, as Go does.
    pub(crate) credentials: Option<(String, String)>,
    /// `scheme://host:port`, with `***@` for credentials: the only form ever shown.
    pub(crate) display: String,
}

/// A proxy variable as Go would use it.
#[derive(Clone, Debug)]
enum Declared {
    Usable(ProxyChoice),
    /// A proxy Go would use and fail to reach, with what is wrong.
    Broken(ProxyError),
    /// A value Go cannot parse: it connects directly.
    Ignored(&'static str),
}

/// A proxy variable that a fetched URL would use and that cannot work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProxyError {
    pub(crate) variable: &'static str,
    /// The value with any credentials replaced by `***`.
    pub(crate) shown: String,
    pub(crate) expected: String,
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: '{}' is not a usable proxy; expected {}", self.variable, self.shown, self.expected)
    }
}

/// How a URL is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Direct {
    /// No proxy variable applies to the URL's scheme.
    NoProxyVariable,
    /// The variable holds a value Go cannot parse, so Go ignores it.
    Ignored(&'static str),
    /// `localhost` or a loopback address: Go never proxies those.
    Loopback,
    /// The `NO_PROXY` entry (and its variable) that exempts the host.
    Exempt(&'static str, String),
}

impl fmt::Display for Direct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Direct::NoProxyVariable => f.write_str("direct"),
            Direct::Ignored(var) => write!(f, "direct ({var} is not a URL Go can parse, so Go ignores it)"),
            Direct::Loopback => f.write_str("direct (loopback: Go never proxies it)"),
            Direct::Exempt(var, entry) => write!(f, "direct ({var} entry {entry})"),
        }
    }
}

/// The route to one URL.
#[derive(Clone, Debug)]
pub(crate) enum Route<'a> {
    Proxy(&'a ProxyChoice),
    Direct(Direct),
}

impl fmt::Display for Route<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Route::Proxy(p) => write!(f, "proxy {} ({})", p.display, p.variable),
            Route::Direct(d) => d.fmt(f),
        }
    }
}

/// The proxies the environment asks for.
#[derive(Clone, Default)]
pub(crate) struct ProxySettings {
    https: Option<Declared>,
    http: Option<Declared>,
    no_proxy: NoProxy,
}

/// Only the names: the connector and resolver that hold the settings must be `Debug` for ureq,
/// and a derived listing would be code no one reads (and the binary has a size budget).
impl fmt::Debug for ProxySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProxySettings")
    }
}

/// Go's `getEnvAny`: the first variable set and not empty, its value untouched.
fn first_set(env: &dyn Fn(&str) -> Option<String>, names: [&'static str; 2]) -> Option<(&'static str, String)> {
    names.into_iter().find_map(|n| env(n).filter(|v| !v.is_empty()).map(|v| (n, v)))
}

impl ProxySettings {
    /// Reads the proxy variables from an injected environment. Nothing is an error here: a value
    /// is judged where a URL uses it ([`ProxySettings::route`]).
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> ProxySettings {
        let declared = |names| first_set(env, names).map(|(var, value)| declare(var, &value));
        ProxySettings {
            https: declared(["HTTPS_PROXY", "https_proxy"]),
            http: declared(["HTTP_PROXY", "http_proxy"]),
            no_proxy: first_set(env, ["NO_PROXY", "no_proxy"]).map(|(v, s)| NoProxy::parse(v, &s)).unwrap_or_default(),
        }
    }

    /// The route Go takes to `host` (without brackets) on `port` for a URL of `scheme`; an error
    /// when that route is a proxy no connection can reach.
    pub(crate) fn route(&self, scheme: &str, host: &str, port: u16) -> Result<Route<'_>, ProxyError> {
        let declared = match scheme {
            "https" => self.https.as_ref(),
            "http" => self.http.as_ref(),
            _ => None,
        };
        let declared = match declared {
            None => return Ok(Route::Direct(Direct::NoProxyVariable)),
            Some(Declared::Ignored(var)) => return Ok(Route::Direct(Direct::Ignored(var))),
            Some(d) => d,
        };
        if let Some(direct) = self.no_proxy.exempts(host, port) {
            return Ok(Route::Direct(direct));
        }
        match declared {
            Declared::Usable(p) => Ok(Route::Proxy(p)),
            Declared::Broken(e) => Err(e.clone()),
            Declared::Ignored(_) => unreachable!("handled above"),
        }
    }

    /// Fails as Go's client would on its first request to any of `urls` (the URLs configured for
    /// fetching): a proxy it would use and cannot reach.
    pub(crate) fn check_used<'u>(&self, urls: impl IntoIterator<Item = &'u str>) -> Result<(), ProxyError> {
        for parts in urls.into_iter().filter_map(|u| crate::url::split(u).ok()) {
            self.route(parts.scheme, parts.bare_host(), parts.port_or_default())?;
        }
        Ok(())
    }

    /// The variable setting a proxy for http URLs, when https ones have none: Go then connects
    /// to an https URL directly, which whoever set only `HTTP_PROXY` may not expect.
    pub(crate) fn http_only(&self) -> Option<&'static str> {
        let var = |d: &Declared| match d {
            Declared::Usable(p) => p.variable,
            Declared::Broken(e) => e.variable,
            Declared::Ignored(v) => v,
        };
        if self.https.is_some() { None } else { self.http.as_ref().map(var) }
    }
}

/// A value shown in a message: whatever precedes the last `@` (where credentials are, in every
/// reading Go makes of it) replaced by `***`, keeping a leading `scheme://`. Without an `@`,
/// anything after the authority is dropped, and a port that is not digits hides the whole
/// authority: `http://user:password` is credentials typed without their `@` (the username may be
/// an API key) as often as a mistyped port, and exit 2's line reaches the pod's status
/// (`FallbackToLogsOnError`). A port of digits keeps the host, replacing the port.
fn shown(value: &str) -> String {
    let scheme_end = value.find("://").map_or(0, |i| i + 3);
    if let Some(at) = value.rfind('@') {
        return format!("{}***{}", &value[..scheme_end], &value[at..]);
    }
    let rest = &value[scheme_end..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let after_brackets = if authority.starts_with('[') { authority.find(']').unwrap_or(0) } else { 0 };
    match authority[after_brackets..].find(':') {
        // A port mistyped: the host is shown.
        Some(colon) if authority[after_brackets + colon + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            format!("{}{}:***", &value[..scheme_end], &authority[..after_brackets + colon])
        }
        // `user:password` without its `@`: the username may be a key too.
        Some(_) => format!("{}***", &value[..scheme_end]),
        None => value.to_string(),
    }
}

fn declare(variable: &'static str, value: &str) -> Declared {
    let broken =
        |expected: &str| Declared::Broken(ProxyError { variable, shown: shown(value), expected: expected.to_string() });
    let Some(url) = proxy_url::parse_proxy(value) else { return Declared::Ignored(variable) };
    let (kind, default_port) = match url.scheme.as_str() {
        "http" => (ProxyKind::Http, 80),
        "https" => (ProxyKind::Https, 443),
        "socks5" | "socks5h" => (ProxyKind::Socks5, 1080),
        _ => {
            return broken("an http, https, socks5 or socks5h proxy URL such as http://proxy:3128");
        }
    };
    let host = url.hostname().to_string();
    // `http://p:abc` is read (second try) as `http://http://p:abc`: the host is the scheme.
    let scheme_as_host = url.host.ends_with(':') && value.to_ascii_lowercase().starts_with(&format!("{}//", url.host));
    if host.is_empty() || scheme_as_host {
        return broken(
            "a proxy URL such as http://proxy:3128 (Go reads no host in it: percent-encode '/', '?', '#' and '@' in \
             a password)",
        );
    }
    let port = match url.port() {
        "" => default_port,
        digits => match digits.parse::<u16>() {
            Ok(port) if port > 0 => port,
            _ => return broken("a port from 1 to 65535"),
        },
    };
    Declared::Usable(choice(variable, kind, url, host, port))
}

fn choice(variable: &'static str, kind: ProxyKind, url: GoUrl, host: String, port: u16) -> ProxyChoice {
    let credentials = url.user.map(|(user, password)| (user, password.unwrap_or_default()));
    // Secrets from here on: nothing the gate prints or writes may carry them, in any form.
    if let Some((user, password)) = &credentials {
        crate::token::remember_proxy_credentials(user, password);
    }
    let bracketed = if host.contains(':') { format!("[{host}]") } else { host.clone() };
    let userinfo = if credentials.is_some() { "***@" } else { "" };
    let display = format!("{}://{userinfo}{bracketed}:{port}", url.scheme);
    ProxyChoice { variable, kind, host, port, credentials, display }
}

/// The `NO_PROXY` entries, parsed as httpproxy's `config.init` does.
#[derive(Clone, Debug, Default)]
struct NoProxy {
    variable: &'static str,
    ip: Vec<(String, IpMatcher)>,
    domain: Vec<(String, DomainMatcher)>,
    all: bool,
}

#[derive(Clone, Debug)]
enum IpMatcher {
    Cidr(IpAddr, u8),
    /// An address, and a port it must be on (empty: any).
    Ip(IpAddr, String),
}

#[derive(Clone, Debug)]
struct DomainMatcher {
    /// With a leading dot.
    suffix: String,
    port: String,
    /// The entry had no leading dot: it matches the domain itself too.
    itself: bool,
}

impl NoProxy {
    fn parse(variable: &'static str, value: &str) -> NoProxy {
        let mut no_proxy = NoProxy { variable, ..NoProxy::default() };
        for entry in value.split(',') {
            let entry = entry.trim().to_ascii_lowercase();
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                no_proxy.all = true;
                return no_proxy;
            }
            if let Some((net, bits)) = parse_cidr(&entry) {
                no_proxy.ip.push((entry, IpMatcher::Cidr(net, bits)));
                continue;
            }
            let (host, port) = match split_host_port(&entry) {
                Some((host, port)) => (host.to_string(), port.to_string()),
                None => (entry.clone(), String::new()),
            };
            if let Ok(ip) = host.parse::<IpAddr>() {
                no_proxy.ip.push((entry, IpMatcher::Ip(ip.to_canonical(), port)));
                continue;
            }
            if host.is_empty() {
                continue;
            }
            let host = host.strip_prefix('*').filter(|h| h.starts_with('.')).unwrap_or(&host);
            let itself = !host.starts_with('.');
            let suffix = if itself { format!(".{host}") } else { host.to_string() };
            no_proxy.domain.push((entry, DomainMatcher { suffix, port, itself }));
        }
        no_proxy
    }

    /// httpproxy's `useProxy`, negated and saying why: `localhost` and loopback addresses, then
    /// the address entries (for an IP address), then the domain entries (for a name).
    fn exempts(&self, host: &str, port: u16) -> Option<Direct> {
        let ip = host.split('%').next().unwrap_or_default().parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
        if host == "localhost" || ip.is_some_and(|ip| ip.is_loopback()) {
            return Some(Direct::Loopback);
        }
        if self.all {
            return Some(Direct::Exempt(self.variable, "*".into()));
        }
        let host = host.trim().to_ascii_lowercase();
        let exempt = |entry: &String| Some(Direct::Exempt(self.variable, entry.clone()));
        if let Some(ip) = ip {
            for (entry, m) in &self.ip {
                let hit = match m {
                    IpMatcher::Cidr(net, bits) => in_cidr(ip, *net, *bits),
                    IpMatcher::Ip(want, want_port) => *want == ip && port_matches(want_port, port),
                };
                if hit {
                    return exempt(entry);
                }
            }
            return None;
        }
        for (entry, m) in &self.domain {
            let name = host.ends_with(&m.suffix) || m.itself && host == m.suffix[1..];
            if name && port_matches(&m.port, port) {
                return exempt(entry);
            }
        }
        None
    }
}

/// An entry's port against the URL's: none, or the same decimal digits (Go compares the strings,
/// so `0443` is not 443).
fn port_matches(entry: &str, port: u16) -> bool {
    entry.is_empty()
        || entry.bytes().all(|b| b.is_ascii_digit())
            && !(entry.len() > 1 && entry.starts_with('0'))
            && entry.parse() == Ok(port)
}

/// Go's `net.ParseCIDR`: an address without a zone, `/`, and a decimal prefix length that fits.
fn parse_cidr(entry: &str) -> Option<(IpAddr, u8)> {
    let (addr, bits) = entry.split_once('/')?;
    let addr = addr.parse::<IpAddr>().ok()?;
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits = bits.parse::<u8>().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((addr, bits))
}

/// Go's `net.SplitHostPort`: `None` where it returns an error; the host without brackets.
fn split_host_port(s: &str) -> Option<(&str, &str)> {
    let colon = s.rfind(':')?;
    let (host, after_host) = if s.starts_with('[') {
        let end = s.find(']')?;
        if end + 1 != colon {
            return None;
        }
        (&s[1..end], end + 1)
    } else {
        let host = &s[..colon];
        if host.contains(':') {
            return None;
        }
        (host, 0)
    };
    let opens = s.strip_prefix('[').unwrap_or(s);
    if opens.contains('[') || s[after_host..].contains(']') {
        return None;
    }
    Some((host, &s[colon + 1..]))
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net.to_canonical()) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Go's own cases (httpproxy's proxy_test.go, where they apply: no CGI, no IDNA) and the gate's.
#[cfg(test)]
mod tests {
    #[test]
    fn a_refused_value_is_shown_without_what_may_be_a_password() {
        assert_eq!(super::shown("http://svc-user:Secr3tPassw0rd"), "http://***");
        assert_eq!(super::shown("svc-user:Secr3t/x"), "***");
        assert_eq!(super::shown("http://proxy:99999"), "http://proxy:***");
        assert_eq!(super::shown("http://u:pw@p:99999"), "http://***@p:99999");
        assert_eq!(super::shown("http://[::1]:99999/x"), "http://[::1]:***");
        assert_eq!(super::shown("ftp://p"), "ftp://p");
    }

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> ProxySettings {
        let vars: Vec<(String, String)> = vars.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        ProxySettings::from_env(&|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    /// The proxy for a URL as Go's test prints it (`<nil>` for none), or the error's variable.
    fn proxy_for(s: &ProxySettings, url: &str) -> String {
        let parts = crate::url::split(url).unwrap();
        match s.route(parts.scheme, parts.bare_host(), parts.port_or_default()) {
            Ok(Route::Proxy(p)) => p.display.clone(),
            Ok(Route::Direct(_)) => "<nil>".into(),
            Err(e) => format!("error {}", e.variable),
        }
    }

    /// proxy_test.go's `proxyForURLTests`. Go prints the URL as given; the gate's display always
    /// has the port, so the expectations here add it.
    #[test]
    fn go_proxy_for_url_tests() {
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: &[Case<'_>] = &[
            (&[("HTTP_PROXY", "127.0.0.1:8080")], "", "http://127.0.0.1:8080"),
            (&[("HTTP_PROXY", "cache.corp.example.com:1234")], "", "http://cache.corp.example.com:1234"),
            (&[("HTTP_PROXY", "cache.corp.example.com")], "", "http://cache.corp.example.com:80"),
            (&[("HTTP_PROXY", "localhost")], "", "http://localhost:80"),
            (&[("HTTP_PROXY", "https://cache.corp.example.com")], "", "https://cache.corp.example.com:443"),
            (&[("HTTP_PROXY", "http://127.0.0.1:8080")], "", "http://127.0.0.1:8080"),
            (&[("HTTP_PROXY", "https://127.0.0.1:8080")], "", "https://127.0.0.1:8080"),
            (&[("HTTP_PROXY", "socks5://127.0.0.1")], "", "socks5://127.0.0.1:1080"),
            // Go returns foo://host and then fails the request; the gate names the variable.
            (&[("HTTP_PROXY", "foo://host")], "", "error HTTP_PROXY"),
            (
                &[("HTTP_PROXY", "http.proxy.tld"), ("HTTPS_PROXY", "secure.proxy.tld")],
                "http://insecure.tld/",
                "http://http.proxy.tld:80",
            ),
            (
                &[("HTTP_PROXY", "http.proxy.tld"), ("HTTPS_PROXY", "secure.proxy.tld")],
                "https://secure.tld/",
                "http://secure.proxy.tld:80",
            ),
            (
                &[("HTTP_PROXY", "http.proxy.tld"), ("HTTPS_PROXY", "https://secure.proxy.tld")],
                "https://secure.tld/",
                "https://secure.proxy.tld:443",
            ),
            (&[("HTTP_PROXY", "http.proxy.tld")], "https://secure.tld/", "<nil>"),
            (&[], "", "<nil>"),
            (&[("NO_PROXY", "example.com"), ("HTTP_PROXY", "proxy")], "http://example.com/", "<nil>"),
            (&[("NO_PROXY", ".example.com"), ("HTTP_PROXY", "proxy")], "http://example.com/", "http://proxy:80"),
            (&[("NO_PROXY", "ample.com"), ("HTTP_PROXY", "proxy")], "http://example.com/", "http://proxy:80"),
            (&[("NO_PROXY", "example.com"), ("HTTP_PROXY", "proxy")], "http://foo.example.com/", "<nil>"),
            (&[("NO_PROXY", ".foo.com"), ("HTTP_PROXY", "proxy")], "http://example.com/", "http://proxy:80"),
        ];
        for (vars, url, want) in cases {
            let url = if url.is_empty() { "http://example.com" } else { url };
            assert_eq!(proxy_for(&settings(vars), url), *want, "{vars:?} {url}");
        }
    }

    /// proxy_test.go's `UseProxyTests` (each host on port 80), with its `noProxy`, and with `*`.
    #[test]
    fn go_use_proxy_tests() {
        let no_proxy = "foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, \
                        10.0.0.0/30, 2001:db8::52:0:1, [2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, \
                        2002:db8:a::45/64";
        let proxied = [
            ("localhost", false),
            ("127.0.0.1", false),
            ("127.0.0.2", false),
            ("[::1]", false),
            ("[::2]", true),
            ("192.168.1.1", false),
            ("192.168.1.2", true),
            ("192.168.1.3", false),
            ("192.168.1.4", true),
            ("10.0.0.2", false),
            ("[2001:db8::52:0:1]", false),
            ("[2001:db8::52:0:2]", true),
            ("[2001:db8::52:0:3]", false),
            ("[2002:db8:a::123]", false),
            ("[fe80::424b:c8be:1643:a1b6]", true),
            ("barbaz.net", true),
            ("www.barbaz.net", false),
            ("foobar.com", false),
            ("www.foobar.com", false),
            ("foofoobar.com", true),
            ("baz.com", true),
            ("localhost.net", true),
            ("local.localhost", true),
            ("barbarbaz.net", true),
            ("wildcard.io", true),
            ("nested.wildcard.io", false),
            ("awildcard.io", true),
        ];
        let s = settings(&[("HTTP_PROXY", "proxy"), ("NO_PROXY", no_proxy)]);
        let all = settings(&[("HTTP_PROXY", "proxy"), ("no_proxy", "*")]);
        for (host, want) in proxied {
            let url = format!("http://{host}:80/");
            assert_eq!(proxy_for(&s, &url) != "<nil>", want, "{host}");
            assert_eq!(proxy_for(&all, &url), "<nil>", "{host} with *");
        }
        // TestInvalidNoProxy: ":1" is ignored, not a panic.
        assert_eq!(
            proxy_for(&settings(&[("HTTP_PROXY", "proxy"), ("NO_PROXY", ":1")]), "http://example.com"),
            "http://proxy:80"
        );
    }

    #[test]
    fn upper_case_first_empty_is_unset_and_all_proxy_is_never_read() {
        let s =
            settings(&[("HTTPS_PROXY", "http://up:1"), ("https_proxy", "http://low:2"), ("ALL_PROXY", "socks5://a:3")]);
        assert_eq!(proxy_for(&s, "https://idp.example"), "http://up:1");
        let s = settings(&[("HTTPS_PROXY", ""), ("https_proxy", "http://low:2")]);
        assert_eq!(proxy_for(&s, "https://idp.example"), "http://low:2");
        for all in ["ALL_PROXY", "all_proxy"] {
            let s = settings(&[(all, "socks4://nonsense:99999")]);
            assert_eq!(proxy_for(&s, "https://idp.example"), "<nil>", "{all} is not Go's");
            assert_eq!(proxy_for(&s, "http://idp.example"), "<nil>");
        }
        assert_eq!(settings(&[("HTTP_PROXY", "p")]).http_only(), Some("HTTP_PROXY"));
        assert_eq!(settings(&[("HTTP_PROXY", "p"), ("https_proxy", "q")]).http_only(), None);
    }

    #[test]
    fn no_proxy_ports_and_forms() {
        let s = settings(&[
            ("HTTPS_PROXY", "p:1"),
            ("NO_PROXY", "a.test:8443, [::5]:443, 10.1.0.0/16,.Svc, *.Cluster.Local"),
        ]);
        for direct in [
            "https://a.test:8443",
            "https://x.a.test:8443",
            "https://[::5]",
            "https://10.1.2.3",
            "https://k.ns.svc",
            "https://x.cluster.local",
        ] {
            assert_eq!(proxy_for(&s, direct), "<nil>", "{direct}");
        }
        for proxied in
            ["https://a.test", "https://[::5]:8443", "https://10.2.0.1", "https://svc", "https://cluster.local"]
        {
            assert_eq!(proxy_for(&s, proxied), "http://p:1", "{proxied}");
        }
        let parts = crate::url::split("https://k.ns.svc").unwrap();
        let route = s.route(parts.scheme, parts.bare_host(), 443).unwrap().to_string();
        assert_eq!(route, "direct (NO_PROXY entry .svc)");
        let route = s.route("https", "127.0.0.1", 443).unwrap().to_string();
        assert_eq!(route, "direct (loopback: Go never proxies it)");
    }

    /// A value Go cannot use fails where a URL uses it, naming the variable, never showing the
    /// password; a value Go cannot parse is ignored; a variable no URL uses is not judged.
    #[test]
    fn malformed_values_fail_only_where_used() {
        for value in ["http://p:99999", "http://p:abc", "http://p:-1", "p:abc", "http://p:0", "socks4://p:1080", "  "] {
            let s = settings(&[("HTTPS_PROXY", value)]);
            assert_eq!(proxy_for(&s, "https://idp.example"), "error HTTPS_PROXY", "{value:?}");
            assert_eq!(proxy_for(&s, "https://127.0.0.1"), "<nil>", "loopback: Go does not use it");
            assert_eq!(proxy_for(&s, "http://idp.example"), "<nil>", "an http URL does not use it");
        }
        let s = settings(&[("HTTPS_PROXY", "%zz")]);
        let route = s.route("https", "idp.example", 443).unwrap().to_string();
        assert_eq!(route, "direct (HTTPS_PROXY is not a URL Go can parse, so Go ignores it)");
        for (value, leak) in [
            ("http://user:pa/ss@p:99999", "pa/ss"),
            ("http://user:pa?ss@p:abc", "pa?ss"),
            ("http://user:pa#ss@p:1:2", "pa#ss"),
            ("u:pa?ss@p:1", "pa"),
            ("user:s3cret@p:99999", "s3cret"),
        ] {
            let e = settings(&[("HTTPS_PROXY", value)]).route("https", "idp.example", 443).unwrap_err();
            assert_eq!(e.variable, "HTTPS_PROXY");
            assert!(!e.shown.contains(leak) && !e.to_string().contains(leak), "{value}: {e}");
        }
    }

    #[test]
    fn usable_proxies_keep_their_credentials_out_of_sight() {
        let s = settings(&[("HTTPS_PROXY", "socks5h://us%40r:p%2Fw@proxy.example"), ("HTTP_PROXY", "user@[::1]:3128")]);
        let Route::Proxy(p) = s.route("https", "idp.example", 443).unwrap() else { panic!("proxied") };
        assert_eq!((p.kind, p.host.as_str(), p.port), (ProxyKind::Socks5, "proxy.example", 1080));
        assert_eq!(p.credentials, Some(("us@r".into(), "p/w".into())));
        assert_eq!(p.display, "socks5h://***@proxy.example:1080");
        let Route::Proxy(p) = s.route("http", "idp.example", 80).unwrap() else { panic!("proxied") };
        assert_eq!(
            (p.display.as_str(), p.credentials.clone()),
            ("http://***@[::1]:3128", Some(("user".into(), String::new())))
        );
    }
}
