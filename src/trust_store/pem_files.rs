//! Files of PEM certificates read as the real client reads them: a CA file the user names is
//! checked strictly (each block a certificate an anchor can be made of, or an error naming what is
//! wrong); Go's own `SSL_CERT_FILE` and `SSL_CERT_DIR` leniently, as Go skips what it cannot use.

use super::anchors::Anchors;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
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
            CaFileProblem::Unreadable(e) if e.kind() == std::io::ErrorKind::PermissionDenied => write!(
                f,
                "cannot be read by the gate's user ({e}); in Kubernetes, mount it with a defaultMode every user may \
                 read (0444), or give the pod an fsGroup the volume grants"
            ),
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

/// The largest CA file or `SSL_CERT_FILE` read. Go reads any size, but a bundle of every root
/// there is (Debian's `ca-certificates.crt`, ~220 KB) fits seventy times over, and `/dev/zero`
/// or a wrong file must not be read until memory runs out.
pub(crate) const CA_FILE_MAX: usize = 16 << 20;

/// A file of certificates, bounded, and never a FIFO or a device.
fn read_pem_file(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::token::read_regular(path, CA_FILE_MAX, "a file of CA certificates")
}

/// Reads and checks one PEM file of CA certificates into `into`: how many it holds.
pub(crate) fn load_ca_certs(path: &str, into: &mut Anchors) -> Result<usize, CaFileProblem> {
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

/// For the tests: a CA certificate written to `ca.pem` in `dir`, and that file's path.
#[cfg(test)]
pub(crate) fn ca_pem(dir: &Path) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let pem = dir.join("ca.pem");
    std::fs::write(&pem, params.self_signed(&key).unwrap().pem()).unwrap();
    pem.display().to_string()
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
