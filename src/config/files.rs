//! The files a configuration names, read when it is checked: the CA bundles, now and once, and
//! the token file, now to catch a wrong path (the prober reads it again before every attempt).

use super::{ConfigError, Raw};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::fmt;
use std::path::Path;

/// What is wrong with a CA file.
#[derive(Debug)]
pub(crate) enum CaFileProblem {
    Unreadable(std::io::Error),
    Empty,
    NotPem,
    NoCertificate,
    BadPem(String),
    BadCertificate { index: usize, reason: String },
}

impl fmt::Display for CaFileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaFileProblem::Unreadable(e) => write!(f, "cannot be read ({e})"),
            CaFileProblem::Empty => write!(f, "is empty; it must hold PEM 'CERTIFICATE' blocks"),
            CaFileProblem::NotPem => write!(
                f,
                "is not PEM; it must hold '-----BEGIN CERTIFICATE-----' blocks (convert DER with: openssl x509 -inform der)"
            ),
            CaFileProblem::NoCertificate => {
                write!(f, "holds PEM but no 'CERTIFICATE' block (a key or CSR?); give the CA certificate")
            }
            CaFileProblem::BadPem(e) => write!(f, "holds malformed PEM ({e})"),
            CaFileProblem::BadCertificate { index, reason } => {
                write!(f, "certificate #{index} cannot be used as a trust anchor ({reason})")
            }
        }
    }
}

/// Reads and checks one PEM file of CA certificates.
fn load_ca_file(path: &str) -> Result<Vec<CertificateDer<'static>>, CaFileProblem> {
    let bytes = std::fs::read(path).map_err(CaFileProblem::Unreadable)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(CaFileProblem::Empty);
    }
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(CaFileProblem::NotPem);
    }
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CaFileProblem::BadPem(e.to_string()))?;
    if certs.is_empty() {
        return Err(CaFileProblem::NoCertificate);
    }
    for (i, cert) in certs.iter().enumerate() {
        let mut probe = rustls::RootCertStore::empty();
        probe.add(cert.clone()).map_err(|e| CaFileProblem::BadCertificate { index: i + 1, reason: e.to_string() })?;
    }
    Ok(certs)
}

/// Every certificate of every CA file, in order.
pub(crate) fn load_ca_files(files: &[Raw]) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let mut roots = Vec::new();
    for raw in files {
        let certs = load_ca_file(&raw.value).map_err(|problem| ConfigError::CaFile {
            source: raw.source,
            path: raw.value.clone(),
            problem,
        })?;
        roots.extend(certs);
    }
    Ok(roots)
}

/// A token file that cannot be read now would fail every attempt: a configuration error.
pub(crate) fn check_token_file(raw: &Raw) -> Result<(), ConfigError> {
    crate::token::read(Path::new(&raw.value)).map(drop).map_err(|problem| ConfigError::TokenFile {
        source: raw.source,
        path: raw.value.clone(),
        problem,
    })
}
