//! URLs: the one place that takes them apart, derives them, resolves references against them and
//! hides the credentials in them. Everything else in the crate asks this module.
//!
//! Issuer identifiers are compared as raw strings (OIDC Discovery §4.3 / RFC 8414 §3.3), so this
//! module never normalises a URL it is given: parsing and re-serialising (as the `url` crate does)
//! would turn `https://h` into `https://h/` and pass a document the real client then rejects.
//! It only borrows slices of the raw string, and builds new strings where a new URL is derived.

mod address_range;
mod redaction;
mod reference;
#[cfg(test)]
mod reference_properties;
mod syntax;

pub(crate) use address_range::private_range;
pub(crate) use redaction::redact;
pub(crate) use reference::resolve;
pub(crate) use syntax::{
    MAX_LEN, Parts, Problem, Transport, append_well_known, bare_host, check_configured, check_fetched, check_issuer,
    default_port, has_path, insert_well_known, is_loopback, root_well_known, split,
};
