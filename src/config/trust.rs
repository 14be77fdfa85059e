//! What the gate trusts, decided as the real client decides it. oauth2-proxy (v7.15.6,
//! `GetCertPool`) trusts Go's system pool (with `SSL_CERT_FILE` and `SSL_CERT_DIR`) plus nothing
//! else, or its `OAUTH2_PROXY_PROVIDER_CA_FILES` instead of that pool, or both with
//! `OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE=true`. Mozilla's roots stand for the system store. A
//! certificate the proxy rejects must not pass the gate; one it accepts should.

use super::{ConfigError, Notice, Raw, Source, files, inputs::Inputs};
use crate::settings::Id;
use rustls::pki_types::CertificateDer;
use std::path::Path;

/// Go's one PEM bundle, in place of the system's.
const CERT_FILE: &str = "SSL_CERT_FILE";
/// Go's directories of PEM files, colon-separated.
const CERT_DIR: &str = "SSL_CERT_DIR";
const USE_SYSTEM_TRUST_STORE: &str = "OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE";
const SKIP_VERIFY: &str = "OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY";

/// The certificates the gate trusts, and where they came from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trust {
    /// Mozilla's roots.
    pub(crate) mozilla: bool,
    /// Every other trusted certificate: the CA files', then `SSL_CERT_FILE`'s and `SSL_CERT_DIR`'s.
    pub(crate) roots: Vec<CertificateDer<'static>>,
    /// Where `roots` came from, in order: the flag or variable, the path, how many certificates.
    pub(crate) sources: Vec<(Source, String, usize)>,
}

/// The trust settings as read, before any file is.
pub(super) struct TrustInputs {
    ca_files: Vec<Raw>,
    /// Go's system pool (Mozilla's roots here) with its two variables, unless the CA files
    /// replace it.
    system: Option<(Option<Raw>, Option<Raw>)>,
    /// oauth2-proxy checks no certificate: the gate still does, and ends at the first it rejects.
    pub(super) skip_verify: bool,
}

/// Reads the CA files and the variables that decide what else is trusted.
pub(super) fn read(
    ca_files: Vec<Raw>,
    inputs: &Inputs<'_>,
    notices: &mut Vec<Notice>,
) -> Result<TrustInputs, ConfigError> {
    let use_system = inputs.variable_switch(USE_SYSTEM_TRUST_STORE)?;
    let skip_verify = inputs.variable_switch(SKIP_VERIFY)?;
    let proxy_files = Id::CaFile.setting().fallback.map(Source::Env);
    let only_files = !use_system && ca_files.first().is_some_and(|raw| Some(raw.source) == proxy_files);
    if only_files {
        notices.push(Notice::Note(format!(
            "trusting only the CA files in OAUTH2_PROXY_PROVIDER_CA_FILES, as oauth2-proxy does unless \
             {USE_SYSTEM_TRUST_STORE} is true"
        )));
    }
    if skip_verify {
        notices.push(Notice::Warning(format!(
            "{SKIP_VERIFY} is true: oauth2-proxy skips certificate checks, the gate never does; give it the \
             provider's CA with {} (or {}). A certificate it rejects ends the wait at once",
            Id::CaFile.flag(),
            Id::CaFile.setting().env.unwrap_or_default()
        )));
    }
    let system = (!only_files).then(|| (inputs.variable(CERT_FILE), inputs.variable(CERT_DIR)));
    Ok(TrustInputs { ca_files, system, skip_verify })
}

/// Loads what is trusted: a CA file that is wrong is an error; Go's variables are not (Go
/// carries on with its other sources), but what is wrong with them is said.
pub(super) fn load(inputs: &TrustInputs, notices: &mut Vec<Notice>) -> Result<Trust, ConfigError> {
    let mut trust = Trust { mozilla: inputs.system.is_some(), ..Trust::default() };
    for raw in &inputs.ca_files {
        trust.add(raw.source, &raw.value, files::load_ca_file(raw)?);
    }
    let Some((file, dirs)) = &inputs.system else { return Ok(trust) };
    let mut skipped = |raw: &Raw, path: &str, why: String| {
        notices.push(Notice::Warning(format!("{}: '{path}' {why}; carrying on without it, as Go does", raw.source)));
    };
    if let Some(raw) = file {
        match files::lenient_anchors(Path::new(&raw.value)) {
            Ok(certs) if certs.is_empty() => skipped(raw, &raw.value, "holds no PEM certificate".into()),
            Ok(certs) => trust.add(raw.source, &raw.value, certs),
            Err(e) => skipped(raw, &raw.value, format!("cannot be read ({e})")),
        }
    }
    if let Some(raw) = dirs {
        for dir in raw.value.split(':').filter(|d| !d.is_empty()) {
            match files::directory_anchors(Path::new(dir)) {
                Ok(certs) => trust.add(raw.source, dir, certs),
                Err(e) => skipped(raw, dir, format!("cannot be read as a directory ({e})")),
            }
        }
    }
    Ok(trust)
}

impl Trust {
    fn add(&mut self, source: Source, path: &str, certs: Vec<CertificateDer<'static>>) {
        self.sources.push((source, path.to_string(), certs.len()));
        self.roots.extend(certs);
    }
}
