//! Go's trust store, as its clients gather it: CA files of PEM certificates, `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` ([`GoStore`], read when a chain needs them), into [`Anchors`] with each
//! certificate's dates. `config` reads it when the settings are checked (a CA file that is wrong is
//! an error before any waiting); `net::tls` when a handshake needs the store.

mod anchors;
mod der;
mod go_store;
mod pem_files;
mod subject_hash;

pub(crate) use anchors::{Anchors, certificate_digest};
pub(crate) use der::validity as certificate_validity;
pub(crate) use go_store::{CERT_DIR, CERT_FILE, GoStore};
#[cfg(test)]
pub(crate) use pem_files::ca_pem;
pub(crate) use pem_files::{CaFileProblem, load_ca_certs};
pub(crate) use subject_hash::subject_hash;
