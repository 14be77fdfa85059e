//! The document rules: when a fetched body counts, by specification. Pure: bytes and strings in,
//! verdicts out, no I/O, so that they can be fuzzed and checked against the real clients'
//! behaviour on their own.
//!
//! - [`authorization_server`]: OpenID Connect Discovery 1.0 and RFC 8414 (where an issuer's
//!   metadata lives, when it counts, what an MCP client needs of it);
//! - `protected_resource`: RFC 9728 (an MCP server's metadata and its `401` challenge);
//! - `jwk_set`: RFC 7517 (the keys a client needs to verify an ID token);
//! - [`client`]: the guarded client's own rules on top (`--client`).
//!
//! Each opens a body the same way (`open_object`), so a body that is not a JSON object fails
//! with the same words whichever document it was meant to be.

pub mod authorization_server;
mod body;
pub mod client;
mod excerpt;
pub(crate) mod json_text;
pub(crate) mod json_value;
pub(crate) mod jwk_set;
pub(crate) mod protected_resource;

pub use body::BodyProblem;
pub(crate) use body::{Object, open_object};
pub(crate) use excerpt::{KEPT, SHOWN, cut, kept, printable_excerpt, shown, shown_list};
pub(crate) use json_value::Json;
