//! Where an issuer's metadata lives and when a fetched document counts.
//!
//! Everything here is pure: strings in, verdicts out. It is the part of the gate that must agree
//! with the real clients (go-oidc, oauth2-proxy, openidconnect-rs, the API server), so it follows
//! OpenID Connect Discovery 1.0 and RFC 8414 to the letter and compares issuers as raw strings —
//! parsing and re-serialising a URL would turn `https://h` into `https://h/` and pass a document
//! that the real client then rejects.

mod document;
mod mcp;
mod registration;

pub(crate) use document::candidates;
pub use document::{Document, DocumentProblem, MetadataKind, Rules, validate_document, well_known_url};
pub(crate) use mcp::mcp_client_rules;
pub use registration::Registration;
pub(crate) use registration::registration;
