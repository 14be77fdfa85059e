//! The network: one bounded GET with the certificate verified.
//!
//! - [`tls`]: rustls with Mozilla's roots and the configured CAs, and what a rejected
//!   certificate means in words;
//! - [`proxy`]: the connection through a proxy, as Go's Transport makes it (http, https,
//!   SOCKS5), on the route Go's `ProxyFromEnvironment` gives (`go_proxy::ProxySettings`);
//! - [`socks`]: the SOCKS5 handshake;
//! - [`http`]: the GET itself, with `--connect-to` and a bounded body;
//! - [`fetch_error`]: why a fetch got no complete response, in words, and ureq's errors mapped
//!   onto it; the bounds, and the marks a resolver's or a proxy's failure carries through ureq;
//! - [`post`]: a POST on the same agent, for an MCP endpoint;
//! - [`redirect`]: which redirects are followed, and which headers go along;
//! - [`gzip`]: a gzip body decoded as Go's transport decodes it;
//! - [`response`]: a response read as far as the gate reads it (headers, a bounded, decoded body);
//! - [`plain`]: the connection as ureq reads it: a growing input buffer, watched for an answer
//!   in TLS or in HTTP/2.

pub(crate) mod fetch_error;
pub(crate) mod gzip;
pub(crate) mod http;
pub(crate) mod plain;
pub(crate) mod post;
pub(crate) mod proxy;
pub(crate) mod redirect;
pub(crate) mod response;
mod socks;
pub(crate) mod tls;
