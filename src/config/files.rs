//! The files a configuration names, read when it is checked: the CA bundles, now and once, and
//! the token and header files, now to catch a wrong path or content (the prober reads them again
//! before every attempt).

use super::{ConfigError, HeaderFile, Raw};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, TrustAnchor};
use std::collections::HashSet;
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

/// Trust anchors gathered as Go's `CertPool` gathers certificates: each certificate once, by its
/// bytes (Go keys its pool by a digest of them), checked before it is parsed, and parsed once, for
/// only what verification needs (its subject, key and name constraints).
#[derive(Clone, Debug, Default)]
pub(crate) struct Anchors {
    pub(crate) anchors: Vec<TrustAnchor<'static>>,
    /// SHA-256 of each certificate, for the duplicates and for a server certificate that is
    /// byte for byte a trusted one.
    pub(crate) digests: HashSet<[u8; 32]>,
}

impl Anchors {
    /// Adds one certificate, unless it is already there: its digest, if it can be an anchor.
    fn add(&mut self, cert: &CertificateDer<'_>) -> Result<[u8; 32], webpki::Error> {
        let digest = certificate_digest(cert);
        if !self.digests.contains(&digest) {
            self.anchors.push(webpki::anchor_from_trusted_cert(cert)?.to_owned());
            self.digests.insert(digest);
        }
        Ok(digest)
    }
}

/// What tells certificates apart: the SHA-256 of their bytes.
pub(crate) fn certificate_digest(bytes: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().try_into().unwrap_or_default()
}

/// Reads and checks one PEM file of CA certificates into `into`: how many it holds.
fn load_ca_certs(path: &str, into: &mut Anchors) -> Result<usize, CaFileProblem> {
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
        let reason = |e: webpki::Error| CaFileProblem::BadCertificate { index: i + 1, reason: e.to_string() };
        into.add(cert).map_err(reason)?;
    }
    Ok(certs.len())
}

/// The certificates of a file that can serve as trust anchors, taken as Go's AppendCertsFromPEM
/// takes them: whatever else it holds (keys, prose, DER) is skipped without a word. Each one's
/// digest goes to `found` (what one source holds, each certificate once).
pub(super) fn lenient_anchors(path: &Path, into: &mut Anchors, found: &mut HashSet<[u8; 32]>) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    found.extend(CertificateDer::pem_slice_iter(&bytes).map_while(Result::ok).filter_map(|cert| into.add(&cert).ok()));
    Ok(())
}

/// Every file of a directory, not recursive, as Go reads an `SSL_CERT_DIR` entry: what cannot be
/// read (a subdirectory, a file without permission) is skipped, and so is a symbolic link to a
/// name in the same directory (a hash link such as `5ad8a5d6.0`: a second copy of a file read
/// anyway), without reading it. How many certificates it holds, each once (Debian's
/// `/etc/ssl/certs` holds them all once more in its bundle).
pub(super) fn directory_anchors(dir: &Path, into: &mut Anchors) -> std::io::Result<usize> {
    let mut found = HashSet::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        let link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if link && std::fs::read_link(&path).is_ok_and(|to| to.components().count() == 1) {
            continue;
        }
        let _unreadable_is_skipped = lenient_anchors(&path, into, &mut found);
    }
    Ok(found.len())
}

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
