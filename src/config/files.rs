//! The files a configuration names, read when it is checked: the CA bundles, now and once, and
//! the token and header files, now to catch a wrong path or content (the prober reads them again
//! before every attempt).

use super::{CaFileProblem, ConfigError, HeaderFile, Raw};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, TrustAnchor};
use std::collections::HashSet;
use std::path::Path;

/// Trust anchors gathered as Go's `CertPool` gathers certificates: each certificate once, by its
/// bytes (Go keys its pool by a digest of them), checked before it is parsed, and parsed once, for
/// only what verification needs (its subject, key and name constraints).
#[derive(Clone, Debug, Default)]
pub(crate) struct Anchors {
    pub(crate) anchors: Vec<TrustAnchor<'static>>,
    /// Each anchor's certificate's validity period, in seconds since the epoch: Go takes no root
    /// outside it (webpki's anchors have no dates). Always, where it cannot be read.
    pub(crate) validity: Vec<(u64, u64)>,
    /// SHA-256 of each certificate, for the duplicates and for a server certificate that is
    /// byte for byte a trusted one.
    pub(crate) digests: HashSet<[u8; 32]>,
    /// SHA-256 of each PEM block's text taken so far: a system store holds each certificate two
    /// or three times over (a bundle, a file, a hash link), and a copy is then recognised before
    /// it is decoded.
    pem_texts: HashSet<[u8; 32]>,
}

impl Anchors {
    /// Adds one certificate, unless it is already there: its digest, if it can be an anchor.
    fn add(&mut self, cert: &CertificateDer<'_>) -> Result<[u8; 32], webpki::Error> {
        let digest = certificate_digest(cert);
        if !self.digests.contains(&digest) {
            self.anchors.push(webpki::anchor_from_trusted_cert(cert)?.to_owned());
            self.validity.push(super::der::validity(cert).unwrap_or((0, u64::MAX)));
            self.digests.insert(digest);
        }
        Ok(digest)
    }

    /// Adds the certificate of one PEM block's body, unless it is not one (broken base64, not a
    /// certificate webpki can take as an anchor): the digest of the block's text.
    fn add_pem(&mut self, body: &[u8]) -> Option<[u8; 32]> {
        let text = certificate_digest(body);
        if !self.pem_texts.contains(&text) {
            self.add(&CertificateDer::from(crate::base64::decode(body)?)).ok()?;
            self.pem_texts.insert(text);
        }
        Some(text)
    }
}

/// What tells certificates apart: the SHA-256 of their bytes.
pub(crate) fn certificate_digest(bytes: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().try_into().unwrap_or_default()
}

/// The largest CA file or `SSL_CERT_FILE` read. Go reads any size, but a bundle of every root
/// there is (Debian's `ca-certificates.crt`, ~220 KB) fits seventy times over, and `/dev/zero`
/// or a wrong file must not be read until memory runs out.
pub(crate) const CA_FILE_MAX: usize = 16 << 20;

/// A file of certificates, bounded, and never a FIFO or a device.
fn read_pem_file(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::token::read_regular(path, CA_FILE_MAX, "a file of CA certificates")
}

/// Reads and checks one PEM file of CA certificates into `into`: how many it holds.
fn load_ca_certs(path: &str, into: &mut Anchors) -> Result<usize, CaFileProblem> {
    let bytes = read_pem_file(Path::new(path)).map_err(CaFileProblem::Unreadable)?;
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
/// text digest goes to `found` (what one source holds, each certificate once).
pub(super) fn lenient_anchors(path: &Path, into: &mut Anchors, found: &mut HashSet<[u8; 32]>) -> std::io::Result<()> {
    let bytes = read_pem_file(path)?;
    found.extend(pem_bodies(&bytes).filter_map(|body| into.add_pem(body)));
    Ok(())
}

/// The bodies of the `CERTIFICATE` blocks of a PEM text, as Go's `pem.Decode` finds them: text
/// around them is skipped, and so is a block with headers (`AppendCertsFromPEM` skips those).
fn pem_bodies(mut text: &[u8]) -> impl Iterator<Item = &[u8]> {
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    std::iter::from_fn(move || {
        loop {
            let start = find(text, BEGIN)? + BEGIN.len();
            let Some(end) = find(&text[start..], END) else {
                text = &[];
                return None;
            };
            let body = &text[start..start + end];
            text = &text[start + end + END.len()..];
            if !body.contains(&b':') {
                return Some(body);
            }
        }
    })
}

/// Where `what` (which starts with a byte the base64 alphabet lacks) first occurs in `text`.
fn find(text: &[u8], what: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text.get(from..)?.iter().position(|b| *b == what[0]) {
        if text[from + at..].starts_with(what) {
            return Some(from + at);
        }
        from += at + 1;
    }
    None
}

/// Every file of a directory, not recursive, as Go reads an `SSL_CERT_DIR` entry: what cannot be
/// read is skipped, and so is a symbolic link to a name in the same directory (a hash link such
/// as `5ad8a5d6.0`: a second copy of a file read anyway), without reading it. How many
/// certificates it holds, each once (Debian's `/etc/ssl/certs` holds them all once more in its
/// bundle), and the entries skipped with why, to be said: a subdirectory alone is skipped without
/// a word (Debian's holds `java/`). Where Go would block on a FIFO, it is skipped too.
pub(super) fn directory_anchors(
    dir: &Path,
    into: &mut Anchors,
) -> std::io::Result<(usize, Vec<(std::path::PathBuf, std::io::Error)>)> {
    let (mut found, mut skipped) = (HashSet::new(), Vec::new());
    for entry in std::fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        let link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if link && std::fs::read_link(&path).is_ok_and(|to| to.components().count() == 1) {
            continue;
        }
        match lenient_anchors(&path, into, &mut found) {
            Err(e) if e.kind() != std::io::ErrorKind::IsADirectory => skipped.push((path, e)),
            _ => {}
        }
    }
    Ok((found.len(), skipped))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_blocks_are_read_as_rustls_reads_them_and_broken_ones_skipped_as_go_skips_them() {
        let key = rcgen::KeyPair::generate().unwrap();
        let certs: Vec<_> = (0..3)
            .map(|i| rcgen::CertificateParams::new(vec![format!("h{i}.example")]).unwrap().self_signed(&key).unwrap())
            .collect();
        let pem: Vec<String> = certs.iter().map(|c| c.pem()).collect();
        let broken = pem[1].replacen('M', "!", 1);
        let with_header = pem[1].replacen("-----\n", "-----\nProc-Type: 4,ENCRYPTED\n\n", 1);
        let text = format!("prose\n{}{broken}{with_header}{}\r\n{}", pem[0], key.serialize_pem(), pem[2]);
        let read =
            |text: &str| -> Vec<Vec<u8>> { pem_bodies(text.as_bytes()).filter_map(crate::base64::decode).collect() };
        assert_eq!(read(&text), [certs[0].der().to_vec(), certs[2].der().to_vec()]);
        assert_eq!(read(&pem[0].replace('\n', "\r\n")), [certs[0].der().to_vec()]);
        assert_eq!(read(&pem[0][..pem[0].len() - 10]), Vec::<Vec<u8>>::new(), "unterminated");
        // The same certificate twice, in other line lengths: one anchor, found twice.
        let mut anchors = Anchors::default();
        let rewrapped = pem[0].replace('\n', "").replace("-----MII", "-----\nMII").replace("-----END", "\n-----END");
        let found: Vec<_> =
            pem_bodies(format!("{}{rewrapped}", pem[0]).as_bytes()).filter_map(|body| anchors.add_pem(body)).collect();
        assert_eq!((found.len(), anchors.anchors.len(), anchors.digests.len()), (2, 1, 1));
    }
}
