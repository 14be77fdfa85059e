//! A proxy variable's value read as Go reads it: `net/url.Parse`, as far as a proxy URL uses it
//! (scheme, userinfo, host and port), and httpproxy's `parseProxy`, which tries the value as it
//! is and then with `http://` in front. Go's reading has corners a tidier parser would smooth
//! over, and each changes what the client does: `http://p:abc` is not an error but the proxy
//! `http://http:` (the second try reads `http:` as the host), `%zz` is ignored (no try parses,
//! so Go connects directly), and `user:pw@p:3128` is the proxy `p:3128` with credentials. The
//! gate must end where Go ends, so it reads the value the same way, byte for byte.

/// The parts of a parsed URL a proxy uses. `host` is Go's `URL.Host`: host and port, IPv6 in
/// brackets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct GoUrl {
    /// Lower case, as Go stores it; empty for a relative reference.
    pub(super) scheme: String,
    /// Username and password, percent-decoded; Go sends the pair once userinfo is present.
    pub(super) user: Option<(String, Option<String>)>,
    pub(super) host: String,
}

impl GoUrl {
    /// `URL.Hostname()`: the host without its port and brackets.
    pub(super) fn hostname(&self) -> &str {
        crate::url::bare_host(split_host_port(&self.host).0)
    }

    /// `URL.Port()`: the digits after the last colon, if they form a valid optional port.
    pub(super) fn port(&self) -> &str {
        split_host_port(&self.host).1
    }
}

/// Go's `splitHostPort` of net/url (not net's): the port only when what follows the last colon is
/// digits.
fn split_host_port(host_port: &str) -> (&str, &str) {
    match host_port.rfind(':') {
        Some(i) if valid_optional_port(&host_port[i..]) => (&host_port[..i], &host_port[i + 1..]),
        _ => (host_port, ""),
    }
}

/// httpproxy's `parseProxy`: the value as a URL; if that fails or has no scheme or host, the value
/// with `http://` in front, if that parses; else the first reading if it parsed at all. `None`
/// when neither parses: Go then ignores the variable.
pub(super) fn parse_proxy(value: &str) -> Option<GoUrl> {
    let first = parse(value);
    if first.as_ref().is_none_or(|u| u.scheme.is_empty() || u.host.is_empty())
        && let Some(second) = parse(&format!("http://{value}"))
    {
        return Some(second);
    }
    first
}

/// `net/url.Parse`, keeping what a proxy uses; `None` where Go returns an error.
pub(super) fn parse(raw: &str) -> Option<GoUrl> {
    let (raw, fragment) = raw.split_once('#').map_or((raw, None), |(u, f)| (u, Some(f)));
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return None;
    }
    let mut url = GoUrl { scheme: String::new(), user: None, host: String::new() };
    if raw == "*" {
        return Some(url);
    }
    let (scheme, rest) = get_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(r, _)| r)
    };
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // Opaque: no host. The fragment is not checked on this path either.
            return fragment_ok(fragment).then_some(url);
        }
        if rest.split('/').next().is_some_and(|segment| segment.contains(':')) {
            return None;
        }
    }
    let mut path = rest;
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, after) = authority.find('/').map_or((authority, ""), |i| authority.split_at(i));
        path = after;
        let (user, host) = parse_authority(&url.scheme, authority)?;
        url.user = user;
        url.host = host;
    }
    unescape(path, Mode::Other)?;
    fragment_ok(fragment).then_some(url)
}

fn fragment_ok(fragment: Option<&str>) -> bool {
    fragment.is_none_or(|f| unescape(f, Mode::Other).is_some())
}

/// Go's `getScheme`: `None` for "missing protocol scheme" (a leading colon); an empty scheme when
/// the value does not start with one.
fn get_scheme(raw: &str) -> Option<(&str, &str)> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i == 0 => return Some(("", raw)),
            b'0'..=b'9' | b'+' | b'-' | b'.' => {}
            b':' if i == 0 => return None,
            b':' => return Some((&raw[..i], &raw[i + 1..])),
            _ => return Some(("", raw)),
        }
    }
    Some(("", raw))
}

type UserInfo = Option<(String, Option<String>)>;

fn parse_authority(scheme: &str, authority: &str) -> Option<(UserInfo, String)> {
    let Some(at) = authority.rfind('@') else {
        return Some((None, parse_host(scheme, authority)?));
    };
    let host = parse_host(scheme, &authority[at + 1..])?;
    let userinfo = &authority[..at];
    if !userinfo.chars().all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c)) {
        return None;
    }
    let user = match userinfo.split_once(':') {
        None => (unescape(userinfo, Mode::Other)?, None),
        Some((name, password)) => (unescape(name, Mode::Other)?, Some(unescape(password, Mode::Other)?)),
    };
    Some((Some(user), host))
}

/// Go's `parseHost` (Go 1.26, with its default `urlstrictcolons=1`).
fn parse_host(scheme: &str, host: &str) -> Option<String> {
    match host.rfind('[') {
        Some(i) if i > 0 => return None,
        Some(_) => {
            let close = host.rfind(']')?;
            let colon_port = &host[close + 1..];
            if !valid_optional_port(colon_port) {
                return None;
            }
            let inner = &host[1..close];
            let unescaped = match inner.find("%25") {
                Some(zone) => unescape(&inner[..zone], Mode::Host)? + &unescape(&inner[zone..], Mode::Zone)?,
                None => unescape(inner, Mode::Host)?,
            };
            // Only an IPv6 address goes in brackets (a zone is allowed after it).
            let address = unescaped.split('%').next().unwrap_or_default();
            if address.parse::<std::net::Ipv6Addr>().is_err() {
                return None;
            }
            return Some(format!("[{unescaped}]{colon_port}"));
        }
        None => {}
    }
    if let Some(first) = host.find(':') {
        let last = host.rfind(':').unwrap_or(first);
        // Go 1.26 allows one colon only in an http or https host; elsewhere the last one counts.
        let i = if first != last && (scheme == "http" || scheme == "https") { first } else { last };
        if !valid_optional_port(&host[i..]) {
            return None;
        }
    }
    unescape(host, Mode::Host)
}

/// Go's `validOptionalPort`: empty, or a colon and digits (any number of them, even none).
fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || port.strip_prefix(':').is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Host,
    Zone,
    Other,
}

/// Characters a host may hold unescaped (Go's `shouldEscape` for `encodeHost`).
fn host_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c)
}

/// Go's `unescape`: `%XX` decoded; in a host only non-ASCII bytes (and `%25`) may be escaped and
/// the ASCII it holds must be host characters. `None` where Go returns an error. Bytes are decoded
/// as they are; a username or password that is not UTF-8 is read lossily.
fn unescape(s: &str, mode: Mode) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'%' {
            let hex = |b: u8| (b as char).to_digit(16);
            let (Some(hi), Some(lo)) = (bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b)))
            else {
                return None;
            };
            let escape = &s[i..i + 3];
            if mode == Mode::Host && hi < 8 && escape != "%25" {
                return None;
            }
            let v = (hi << 4 | lo) as u8;
            if mode == Mode::Zone && escape != "%25" && v != b' ' && !host_char(v) {
                return None;
            }
            out.push(v);
            i += 3;
            continue;
        }
        if mode != Mode::Other && c < 0x80 && !host_char(c) {
            return None;
        }
        out.push(c);
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(value: &str) -> Option<String> {
        parse_proxy(value).map(|u| {
            let user = match &u.user {
                Some((n, Some(p))) => format!("{n}:{p}@"),
                Some((n, None)) => format!("{n}@"),
                None => String::new(),
            };
            format!("{}|{user}{}|{}|{}", u.scheme, u.host, u.hostname(), u.port())
        })
    }

    /// What Go 1.26 makes of each value (measured with `http.ProxyFromEnvironment`).
    #[test]
    fn values_read_as_go_reads_them() {
        for (value, want) in [
            ("127.0.0.1:8080", Some("http|127.0.0.1:8080|127.0.0.1|8080")),
            ("cache.corp.example.com:1234", Some("http|cache.corp.example.com:1234|cache.corp.example.com|1234")),
            ("cache.corp.example.com", Some("http|cache.corp.example.com|cache.corp.example.com|")),
            ("HTTPS://Secure.proxy.tld", Some("https|Secure.proxy.tld|Secure.proxy.tld|")),
            ("socks5://127.0.0.1", Some("socks5|127.0.0.1|127.0.0.1|")),
            ("foo://host", Some("foo|host|host|")),
            ("user:pw@p:3128", Some("http|user:pw@p:3128|p|3128")),
            ("http://u:p%2Fw@p:1", Some("http|u:p/w@p:1|p|1")),
            ("http://[::1]:3128", Some("http|[::1]:3128|::1|3128")),
            ("http://p:99999", Some("http|p:99999|p|99999")),
            // Go 1.26: an invalid port fails the first reading, and the second reads `http:`.
            ("http://p:abc", Some("http|http:|http|")),
            ("http://p:-1", Some("http|http:|http|")),
            ("http://u:pa/ss@p:1", Some("http|http:|http|")),
            ("http://[::1", Some("http|http:|http|")),
            // The first reading parses (scheme `p`, opaque), the second does not: no host.
            ("p:abc", Some("p|||")),
            ("u:pa?ss@p:1", Some("u|||")),
            ("  ", Some("|||")),
            ("%zz", None),
            (":3128x", None),
            ("http://p:1/%zz", None),
            ("a b:1", None),
            ("http://u:p#w@p:1", Some("http|http:|http|")),
            ("http://a:b:1", Some("http|http:|http|")),
            ("socks5://a:b:1", Some("socks5|a:b:1|a:b|1")),
            ("http://p:", Some("http|p:|p|")),
            ("http://[127.0.0.1]:1", Some("http|http:|http|")),
            ("http://u@p", Some("http|u@p|p|")),
            ("http://p%41:1", Some("http|http:|http|")),
        ] {
            assert_eq!(shown(value).as_deref(), want, "{value:?}");
        }
    }
}
