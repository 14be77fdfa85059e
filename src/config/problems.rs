//! What is wrong with a `--connect-to` rule, a CA file or a header file's name, each with the
//! words that say it: the payloads of [`super::ConfigError`], kept apart from the files that find
//! them so that the error and its finders do not import each other.

use std::fmt;

/// Why a `--connect-to` rule is not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConnectToProblem {
    FieldCount,
    BadHost(String),
    BadPort(String),
    ChangesNothing,
}

impl fmt::Display for ConnectToProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectToProblem::FieldCount => write!(
                f,
                "expected HOST:PORT:CONNECT_HOST:CONNECT_PORT, e.g. sso.example.com:443:keycloak.sso.svc:8443"
            ),
            ConnectToProblem::BadHost(h) => {
                write!(f, "'{h}' is not a host name or address (IPv6 goes in brackets: [::1])")
            }
            ConnectToProblem::BadPort(p) => write!(f, "'{p}' is not a port (1-65535)"),
            ConnectToProblem::ChangesNothing => {
                write!(f, "names neither a CONNECT_HOST nor a CONNECT_PORT, so it would change nothing")
            }
        }
    }
}

/// Why a `NAME=PATH` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderNameProblem {
    NoPath,
    /// Not an RFC 9110 field name (a token): the character that is not allowed.
    NotAName(Option<char>),
    /// A field the gate sets itself or that would break the exchange, and why.
    Reserved(&'static str),
    /// `Authorization` with `--token-file`, which sends one.
    TwoAuthorizations,
    Repeated,
}

impl fmt::Display for HeaderNameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderNameProblem::NoPath => write!(f, "is not NAME=PATH; write e.g. CF-Access-Client-Id=/secrets/cf/id"),
            HeaderNameProblem::NotAName(None) => write!(f, "has no header name before '='; write NAME=PATH"),
            HeaderNameProblem::NotAName(Some(c)) => write!(
                f,
                "does not start with a header name: {c:?} is not allowed in one (letters, digits and \
                 !#$%&'*+-.^_`|~ only, RFC 9110 §5.1); write NAME=PATH"
            ),
            HeaderNameProblem::Reserved(why) => write!(f, "names a header the gate cannot send: {why}"),
            HeaderNameProblem::TwoAuthorizations => write!(
                f,
                "names Authorization, which --token-file already sends; give one of them (a header file's \
                 Authorization holds the whole value, scheme included)"
            ),
            HeaderNameProblem::Repeated => write!(f, "names a header given before; give each header once"),
        }
    }
}
