//! What a passing attempt found: each authorization server's document and where it came from,
//! and for a protected resource, its metadata's URL and warnings.

use crate::rules::authorization_server::Document;
use std::net::IpAddr;

/// An authorization server that passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServerReady {
    pub(crate) document: Document,
    /// Where the document was finally served from.
    pub(crate) url: String,
    /// Keys with a `kty` in the JWK Set, when `--check-jwks` fetched it.
    pub(crate) jwks_keys: Option<usize>,
}

/// A passing attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ready {
    /// Where a protected resource's metadata was served from (a `--resource` target).
    pub(crate) resource_metadata: Option<String>,
    /// The issuer (an `--issuer` target) or every server the resource lists, in its order.
    pub(crate) servers: Vec<ServerReady>,
    /// Warnings about the resource's own links (plain http accepted: [`crate::url::Transport`]); each
    /// server's are in its document.
    pub(crate) warnings: Vec<String>,
    /// Every name the attempt resolved, with its addresses.
    pub(crate) addresses: Vec<(String, Vec<IpAddr>)>,
}
