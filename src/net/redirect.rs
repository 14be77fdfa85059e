//! Which redirects a fetch follows, and which headers go along, as the client the gate stands
//! in for decides.
//!
//! - OpenID Connect discovery and JWK Sets are fetched by Go programs: `http.Client`'s default
//!   policy follows 301, 302, 303, 307 and 308 for a GET to any origin and stops at the tenth
//!   redirect (`defaultCheckRedirect`: "stopped after 10 redirects"). Two listed differences,
//!   both to fail rather than pass falsely or leak: a redirect from https to plain http is
//!   refused, and once a hop leaves the first URL's origin every secret header (the token and
//!   every `--header-file`) stays behind, where Go drops only `Authorization` (and `Cookie`,
//!   `WWW-Authenticate`), and keeps them for a subdomain.
//! - MCP clients' discovery is the TypeScript SDK's `fetchWithinOrigin` (1.32.2,
//!   `shared/transport.js`): at most 5 redirects, all within the origin; another origin, a
//!   downgrade or a sixth redirect is returned unfollowed and the client moves on.

use super::response::Fetched;
use crate::url;
use std::fmt;

/// Which client's redirect rules a fetch follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redirects {
    /// Go's `http.Client`: any origin, never https to http.
    Go,
    /// The MCP SDK's `fetchWithinOrigin`: the first URL's origin only.
    SameOrigin,
}

/// Go's limit: ten requests at most (`len(via) >= 10` stops the next), so nine redirects are
/// followed and the tenth fails, "stopped after 10 redirects".
pub(crate) const GO_MAX_REDIRECTS: usize = 10;
/// The MCP SDK's `MAX_REDIRECTS`: five redirects followed, a sixth returned as it is.
pub(crate) const MCP_MAX_REDIRECTS: usize = 5;

impl Redirects {
    fn limit(self) -> usize {
        match self {
            Redirects::Go => GO_MAX_REDIRECTS,
            Redirects::SameOrigin => MCP_MAX_REDIRECTS,
        }
    }
}

/// Why a redirect was not followed: MCP clients get the 3xx back and move on to their next URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RedirectKind {
    /// To another origin, under MCP's rule ([`Redirects::SameOrigin`]).
    CrossOrigin,
    /// From https to plain http: never followed.
    Downgrade,
    Loop,
    /// More redirects than the rule's client follows.
    TooMany(Redirects),
    /// A 3xx (this status) without a `Location` header.
    NoLocation(u16),
    /// A `Location` that is no URL the gate can request: why.
    Unusable(String),
}

/// A redirect not followed: why, and where it led (redacted; empty without a `Location`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefusedRedirect {
    pub(crate) kind: RedirectKind,
    pub(crate) to: String,
}

impl fmt::Display for RefusedRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let to = &self.to;
        match &self.kind {
            RedirectKind::CrossOrigin => write!(f, "refused redirect to another origin ({to})"),
            RedirectKind::Downgrade => write!(f, "refused redirect from https to plain http ({to})"),
            RedirectKind::Loop => write!(f, "redirect loop at {to}"),
            RedirectKind::TooMany(Redirects::Go) => {
                write!(f, "stopped after {GO_MAX_REDIRECTS} redirects (Go's http.Client follows no more), at {to}")
            }
            RedirectKind::TooMany(Redirects::SameOrigin) => write!(f, "more than {MCP_MAX_REDIRECTS} redirects"),
            RedirectKind::NoLocation(status) => write!(f, "HTTP {status} redirect without a Location header"),
            RedirectKind::Unusable(why) => write!(f, "redirect to {to:?}: {why}"),
        }
    }
}

/// A redirect of this kind not followed, to `to` (redacted here).
pub(crate) fn refused(kind: RedirectKind, to: &str) -> RefusedRedirect {
    RefusedRedirect { kind, to: url::redact(to) }
}

/// What one request sends besides the agent's own headers (`Accept`, `User-Agent`).
#[derive(Debug, Clone)]
pub(crate) struct Request<'a> {
    /// Sent on every hop (`MCP-Protocol-Version`).
    pub(crate) headers: Vec<(&'a str, String)>,
    /// The token and the `--header-file` headers: sent only while every hop so far stayed on the
    /// first URL's origin.
    pub(crate) secrets: Vec<(&'a str, String)>,
    pub(crate) redirects: Redirects,
}

/// The redirects of one fetch so far.
#[derive(Debug)]
pub(crate) struct Chain {
    origin: String,
    visited: Vec<String>,
    /// Whether every hop so far stayed on the first URL's origin.
    pub(crate) on_origin: bool,
    redirects: Redirects,
}

impl Chain {
    pub(crate) fn new(first: &str, redirects: Redirects) -> Result<Chain, url::Problem> {
        let origin = url::split(first)?.origin();
        Ok(Chain { origin, visited: vec![first.to_string()], on_origin: true, redirects })
    }

    /// The next URL to request after `fetched`, a redirect from `current`, or why there is none.
    pub(crate) fn follow(&mut self, current: &str, fetched: &Fetched) -> Result<String, RefusedRedirect> {
        let next = next_hop(current, fetched)?;
        let same_origin = url::split(&next).is_ok_and(|p| p.origin() == self.origin);
        if !same_origin && self.redirects == Redirects::SameOrigin {
            return Err(refused(RedirectKind::CrossOrigin, &next));
        }
        if self.visited.contains(&next) {
            return Err(refused(RedirectKind::Loop, &next));
        }
        // Go counts the requests sent (ten); the SDK the redirects followed (five).
        if self.visited.len() >= self.redirects.limit() + usize::from(self.redirects == Redirects::SameOrigin) {
            return Err(refused(RedirectKind::TooMany(self.redirects), &next));
        }
        self.on_origin &= same_origin;
        self.visited.push(next.clone());
        Ok(next)
    }
}

/// Where a redirect leads: resolved as RFC 3986 says, never from https to http.
fn next_hop(current: &str, fetched: &Fetched) -> Result<String, RefusedRedirect> {
    let location = fetched.location.as_deref().ok_or_else(|| refused(RedirectKind::NoLocation(fetched.status), ""))?;
    let resolved =
        url::resolve(current, location).map_err(|why| refused(RedirectKind::Unusable(why.to_string()), location))?;
    // A fragment is never sent (RFC 9110 §7.1).
    let next = resolved.split('#').next().unwrap_or_default().to_string();
    let next_parts = url::split(&next).map_err(|p| refused(RedirectKind::Unusable(p.to_string()), &next))?;
    if current.starts_with("https://") && next_parts.scheme == "http" {
        return Err(refused(RedirectKind::Downgrade, &next));
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(location: &str) -> Fetched {
        Fetched { status: 302, location: Some(location.into()), ..Fetched::default() }
    }

    #[test]
    fn go_follows_nine_redirects_to_any_origin_and_the_secrets_stay_home() {
        let mut chain = Chain::new("https://a.example/0", Redirects::Go).unwrap();
        assert_eq!(chain.follow("https://a.example/0", &to("/1")).unwrap(), "https://a.example/1");
        assert!(chain.on_origin);
        assert_eq!(chain.follow("https://a.example/1", &to("https://b.example/2")).unwrap(), "https://b.example/2");
        assert!(!chain.on_origin);
        chain.follow("https://b.example/2", &to("https://a.example/3")).unwrap();
        assert!(!chain.on_origin, "back home, the secrets stay dropped (Go's too)");
        for i in 4..GO_MAX_REDIRECTS {
            chain.follow("https://a.example/x", &to(&format!("/{i}"))).unwrap();
        }
        let tenth = chain.follow("https://a.example/9", &to("/10")).unwrap_err();
        assert!(tenth.to_string().starts_with("stopped after 10 redirects"), "{tenth}");
        assert!(matches!(
            Chain::new("https://a.example/", Redirects::Go)
                .unwrap()
                .follow("https://a.example/", &to("http://a.example/")),
            Err(RefusedRedirect { kind: RedirectKind::Downgrade, .. })
        ));
    }

    #[test]
    fn mcp_stays_on_the_origin_for_five_redirects() {
        let mut chain = Chain::new("https://a.example/0", Redirects::SameOrigin).unwrap();
        assert!(matches!(
            chain.follow("https://a.example/0", &to("https://b.example/")),
            Err(RefusedRedirect { kind: RedirectKind::CrossOrigin, .. })
        ));
        for i in 1..=MCP_MAX_REDIRECTS {
            chain.follow("https://a.example/x", &to(&format!("/{i}"))).unwrap();
        }
        assert!(chain.follow("https://a.example/5", &to("/6")).unwrap_err().to_string().contains("more than 5"));
    }
}
