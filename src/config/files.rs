//! The files a configuration names, read when it is checked: the CA bundles, now and once, and
//! the token and header files, now to catch a wrong path or content (the prober reads them again
//! before every attempt).

use super::{ConfigError, HeaderFile, Raw};
use crate::trust_store::{Anchors, load_ca_certs};
use std::path::Path;

/// Every certificate of one CA file, added to `into`: how many it holds.
pub(super) fn load_ca_file(raw: &Raw, into: &mut Anchors) -> Result<usize, ConfigError> {
    load_ca_certs(&raw.value, into).map_err(|problem| ConfigError::CaFile {
        source: raw.source,
        path: raw.value.clone(),
        problem,
    })
}

/// A token file that cannot be read now would fail every attempt: a configuration error.
pub(crate) fn check_token_file(raw: &Raw) -> Result<(), ConfigError> {
    crate::token::read(Path::new(&raw.value)).map(drop).map_err(|problem| ConfigError::TokenFile {
        source: raw.source,
        path: raw.value.clone(),
        problem,
    })
}

/// A header file whose value cannot be sent now would fail every attempt: a configuration error.
pub(crate) fn check_header_file(raw: &Raw, header: &HeaderFile) -> Result<(), ConfigError> {
    crate::token::read_header_value(&header.path).map(drop).map_err(|problem| ConfigError::HeaderFile {
        source: raw.source,
        name: header.name.clone(),
        path: header.path.display().to_string(),
        problem,
    })
}
