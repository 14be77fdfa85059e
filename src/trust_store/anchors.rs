//! Trust anchors gathered as Go's `CertPool` gathers them: each certificate once, with its dates.

use rustls::pki_types::{CertificateDer, TrustAnchor};
use std::collections::HashSet;

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
    pub(super) fn add(&mut self, cert: &CertificateDer<'_>) -> Result<[u8; 32], webpki::Error> {
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
    pub(super) fn add_pem(&mut self, body: &[u8]) -> Option<[u8; 32]> {
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
