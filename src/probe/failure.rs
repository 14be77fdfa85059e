//! Why an attempt did not pass, as data: a typed class an operator can grep for, the cause with
//! its facts (the stage and host, the status, the rule, the file), the link and server, the URL,
//! the message made once and the hints. The class names are part of the interface (the log, the
//! JSON, the termination message); the text is `report`'s to render, once, from these fields.
//!
//! [`super::classify`] makes them from what the network and the server gave.

use crate::net::redirect::RedirectKind;
use crate::progress::Stage;
use crate::url;
use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// Why an attempt did not pass. Ordered as a request progresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FailureClass {
    /// The gate itself ran out of something (file descriptors, memory): not the provider's doing.
    LocalResource,
    Dns,
    /// The proxy the client's environment sends the request through failed, or cannot be used.
    Proxy,
    Connect,
    Timeout,
    Tls,
    HttpStatus,
    Body,
    Json,
    IssuerMismatch,
    MissingField,
    /// The protected resource's metadata is missing or does not name the resource and a server.
    Resource,
    Jwks,
    Token,
    /// A `--header-file` that cannot be sent (unreadable, empty, or spoilt by a rotation).
    HeaderFile,
    /// A name resolved to an address SSRF-guarded clients refuse (`--refuse-private-addresses`).
    PrivateAddress,
}

impl FailureClass {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureClass::LocalResource => "local-resource",
            FailureClass::Dns => "dns",
            FailureClass::Connect => "connect",
            FailureClass::Timeout => "timeout",
            FailureClass::Tls => "tls",
            FailureClass::HttpStatus => "http-status",
            FailureClass::Body => "body",
            FailureClass::Json => "json",
            FailureClass::IssuerMismatch => "issuer-mismatch",
            FailureClass::MissingField => "missing-field",
            FailureClass::Resource => "resource",
            FailureClass::Jwks => "jwks",
            FailureClass::Token => "token",
            FailureClass::HeaderFile => "header-file",
            FailureClass::PrivateAddress => "private-address",
            FailureClass::Proxy => "proxy",
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which link of the chain an attempt was at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Link {
    /// An authorization server's metadata (OIDC Discovery or RFC 8414).
    #[default]
    Metadata,
    /// Its JWK Set.
    Jwks,
    /// A protected resource's metadata (RFC 9728), or the resource's own challenge.
    ResourceMetadata,
}

impl Link {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Link::Metadata => "metadata",
            Link::Jwks => "jwks",
            Link::ResourceMetadata => "resource-metadata",
        }
    }
}

/// What stood in the way, with the facts that say where: what the JSON's `stage`, `host` and
/// `http_status` and the decisions about a failure are made from, never from its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// No complete response: the stage the exchange was at and the host it talked to then (the
    /// proxy's, while connecting through one).
    Network { stage: Stage, host: String },
    /// The proxy the request goes through failed, or cannot be used.
    Proxy,
    /// A redirect the client does not follow.
    Redirect(RedirectKind),
    /// A response other than the one that counts, with its status code.
    Status(u16),
    /// A `200` whose body is encoded as the gate did not ask: clients cannot decode it.
    Encoding,
    /// An authorization server's document breaks a rule: the member at fault where the rule
    /// names one (`issuer`), and the value the document gave it.
    Document { member: Option<&'static str>, found: Option<String> },
    /// A link of a protected resource's chain: the endpoint's answer, its challenge, its metadata.
    ResourceChain,
    /// The JWK Set: none to fetch, or none usable.
    JwkSet,
    /// A file read at every attempt, at `path`.
    LocalFile { file: LocalFile, path: String },
    /// This process ran out of something (descriptors, memory) at the stage, talking to the host.
    LocalResource { stage: Stage, host: String },
    /// With `--refuse-private-addresses`: a name resolved to an address SSRF-guarded clients refuse.
    PrivateAddress { host: String, address: IpAddr },
}

/// Which file an attempt reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LocalFile {
    /// `--token-file`.
    Token,
    /// A `--header-file`.
    Header,
}

impl Cause {
    /// The stage an attempt failed at before it had a response: the exchange's, or the file's.
    pub(crate) fn stage(&self) -> Option<Stage> {
        match self {
            Cause::Network { stage, .. } | Cause::LocalResource { stage, .. } => Some(*stage),
            Cause::LocalFile { file: LocalFile::Token, .. } => Some(Stage::ReadingTokenFile),
            Cause::LocalFile { file: LocalFile::Header, .. } => Some(Stage::ReadingHeaderFile),
            _ => None,
        }
    }

    /// The host the failure names itself: the one the exchange was talking to, or the name
    /// resolved to a refused address.
    pub(crate) fn host(&self) -> Option<&str> {
        match self {
            Cause::Network { host, .. } | Cause::LocalResource { host, .. } | Cause::PrivateAddress { host, .. } => {
                Some(host).filter(|h| !h.is_empty()).map(String::as_str)
            }
            _ => None,
        }
    }

    /// The status of the response that failed the attempt, where one was received.
    pub(crate) fn http_status(&self) -> Option<u16> {
        match self {
            Cause::Status(code) => Some(*code),
            _ => None,
        }
    }
}

/// A failed attempt: its [`Facts`], boxed, so that it goes up through every `Result` of the
/// chain as one pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure(Box<Facts>);

impl std::ops::Deref for Failure {
    type Target = Facts;

    fn deref(&self) -> &Facts {
        &self.0
    }
}

impl std::ops::DerefMut for Failure {
    fn deref_mut(&mut self) -> &mut Facts {
        &mut self.0
    }
}

/// Why an attempt did not pass. Made once, with every fact it has; what a caller learns later
/// (the link and the server it belongs to, the URL, the proxy, a hint) is added as data, never
/// by editing the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Facts {
    pub(crate) class: FailureClass,
    pub(crate) cause: Cause,
    pub(crate) link: Link,
    /// The words naming the server whose link failed in a longer chain (`authorization server
    /// https://…: `), empty for the target's own.
    pub(crate) server: String,
    /// The URL the failure is about, redacted.
    pub(crate) url: Option<String>,
    /// The proxy the request went through (credentials hidden), where one was used.
    pub(crate) proxy: Option<String>,
    /// What went wrong, as made.
    pub(crate) message: String,
    /// With class `jwks`: the transport's class, when the keys' fetch failed on the way.
    pub(crate) within: Option<FailureClass>,
    /// What would help, or what else the attempt met, in order.
    pub(crate) hints: Vec<Cow<'static, str>>,
    /// What it all comes down to, when that is known better than the details (a provider that
    /// can have no public key): said first, with the details after it in parentheses.
    pub(crate) summary: Option<String>,
    /// Retrying soon costs the provider nothing (the connection was refused outright), so the
    /// gate may poll fast and notice readiness within a fraction of a second.
    pub(crate) cheap: bool,
    /// How long the provider asked to be left alone (`Retry-After` on a 429 or 503).
    pub(crate) retry_after: Option<Duration>,
    /// Retrying cannot change what the real client does: the wait ends with this failure.
    pub(crate) conclusive: bool,
}

impl Failure {
    pub(crate) fn of(class: FailureClass, cause: Cause, message: impl Into<String>) -> Failure {
        Failure(Box::new(Facts {
            class,
            cause,
            link: Link::Metadata,
            server: String::new(),
            url: None,
            proxy: None,
            message: message.into(),
            within: None,
            hints: Vec::new(),
            summary: None,
            cheap: false,
            retry_after: None,
            conclusive: false,
        }))
    }

    /// The same failure with `change` made to its facts.
    pub(crate) fn with(mut self, change: impl FnOnce(&mut Facts)) -> Failure {
        change(&mut self.0);
        self
    }

    /// A failure for the tests of other modules, which need only its class and text.
    #[cfg(test)]
    pub(crate) fn new(class: FailureClass, message: impl Into<String>) -> Failure {
        Failure::of(class, Cause::ResourceChain, message)
    }

    /// At `link`, of the server `server` names (empty: the target's own).
    pub(super) fn at(mut self, link: Link, server: &str) -> Failure {
        self.link = link;
        self.server = server.to_string();
        self
    }

    /// About `to`, unless a URL is known already (a status names the URL that answered).
    pub(super) fn about(mut self, to: &str) -> Failure {
        self.url.get_or_insert_with(|| url::redact(to));
        self
    }

    /// With this hint, if any, after those it has.
    pub(super) fn hint(mut self, hint: Option<Cow<'static, str>>) -> Failure {
        self.hints.extend(hint);
        self
    }
}
