//! The network: one bounded GET with the certificate verified.
//!
//! - [`tls`]: rustls with Mozilla's roots and the configured CAs, and what a rejected
//!   certificate means in words;
//! - [`proxy`]: the connection through a proxy, as Go's Transport makes it (http, https,
//!   SOCKS5), on the route Go's `ProxyFromEnvironment` gives (`config::ProxySettings`);
//! - [`socks`]: the SOCKS5 handshake;
//! - [`http`]: the GET itself, with `--connect-to`, redirects and a bounded body;
//! - [`plain`]: a plain-HTTP connection, watched for an answer in TLS.

pub(crate) mod http;
pub(crate) mod plain;
pub(crate) mod proxy;
mod socks;
pub(crate) mod tls;
