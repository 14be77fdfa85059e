//! How an MCP client can register with an authorization server: read from its metadata, kept in
//! the verdict ([`super::Document`]) and judged by MCP's client rules ([`super::mcp`]).

use crate::rules::{Json, Object, open_object};

/// How an MCP client can register with an authorization server, by its metadata (MCP
/// authorization specification, revision 2026-07-28, "Client Registration"): with a Client ID
/// Metadata Document (`client_id_metadata_document_supported: true`), which the revision prefers;
/// by Dynamic Client Registration (`registration_endpoint`), which it deprecates; or neither, when
/// only a client registered beforehand (or typed in by the user) can sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    Cimd,
    Dcr,
    None,
}

impl Registration {
    pub fn as_str(self) -> &'static str {
        match self {
            Registration::Cimd => "cimd",
            Registration::Dcr => "dcr",
            Registration::None => "none",
        }
    }

    pub(super) fn of(doc: &Object<'_>) -> Registration {
        if doc.get("client_id_metadata_document_supported").and_then(Json::as_bool) == Some(true) {
            Registration::Cimd
        } else if doc.get("registration_endpoint").and_then(Json::as_str).is_some_and(|e| !e.is_empty()) {
            Registration::Dcr
        } else {
            Registration::None
        }
    }
}

/// How an MCP client can register with the server whose metadata `body` is.
pub(crate) fn registration(body: &[u8]) -> Registration {
    let checked = ["registration_endpoint", "client_id_metadata_document_supported"];
    open_object(body, &checked).map_or(Registration::None, |doc| Registration::of(&doc))
}
