//! The network: one bounded GET with the certificate verified.
//!
//! - [`tls`]: rustls with Mozilla's roots and the configured CAs, and what a rejected
//!   certificate means in words;
//! - [`proxy`]: which proxy a URL goes through (curl's rules);
//! - [`http`]: the GET itself, with `--connect-to`, redirects and a bounded body;
//! - [`post`]: a POST on the same agent, for an MCP endpoint;
//! - [`plain`]: a plain-HTTP connection, watched for an answer in TLS.

pub(crate) mod http;
pub(crate) mod plain;
pub(crate) mod post;
pub(crate) mod proxy;
pub(crate) mod tls;
