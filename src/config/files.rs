//! The files a configuration names, read when it is checked: the CA bundles, now and once, and
//! the token and header files, now to catch a wrong path or content (the prober reads them again
//! before every attempt).

use super::{ConfigError, HeaderFile, Raw};
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
fn load_ca_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, CaFileProblem> {
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
        anchor(cert).map_err(|e| CaFileProblem::BadCertificate { index: i + 1, reason: e.to_string() })?;
    }
    Ok(certs)
}

/// Whether a certificate can serve as a trust anchor.
fn anchor(cert: &CertificateDer<'static>) -> Result<(), rustls::Error> {
    rustls::RootCertStore::empty().add(cert.clone())
}

/// The certificates of a file that can serve as trust anchors, taken as Go's AppendCertsFromPEM
/// takes them: whatever else it holds (keys, prose, DER) is skipped without a word.
pub(super) fn lenient_anchors(path: &Path) -> std::io::Result<Vec<CertificateDer<'static>>> {
    let bytes = std::fs::read(path)?;
    Ok(CertificateDer::pem_slice_iter(&bytes).map_while(Result::ok).filter(|c| anchor(c).is_ok()).collect())
}

/// Every file of a directory, not recursive, as Go reads an `SSL_CERT_DIR` entry: what cannot be
/// read (a subdirectory) is skipped, and so is a symbolic link within the directory (a hash link
/// such as `5ad8a5d6.0`: a second copy of a file already read). Each certificate counts once
/// (Debian's `/etc/ssl/certs` also holds them all in one bundle).
pub(super) fn directory_anchors(dir: &Path) -> std::io::Result<Vec<CertificateDer<'static>>> {
    let mut certs = Vec::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        if std::fs::read_link(&path).is_ok_and(|to| to.components().count() == 1) {
            continue;
        }
        for cert in lenient_anchors(&path).unwrap_or_default() {
            if !certs.contains(&cert) {
                certs.push(cert);
            }
        }
    }
    Ok(certs)
}

/// Every certificate of one CA file, in order.
pub(super) fn load_ca_file(raw: &Raw) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    load_ca_certs(&raw.value).map_err(|problem| ConfigError::CaFile {
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
