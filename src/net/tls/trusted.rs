//! The trust anchors a chain is decided with. Mozilla's roots and the CA files are parsed when
//! the configuration is read; Go's store (`SSL_CERT_FILE`, `SSL_CERT_DIR`) only when a chain
//! needs it. Debian's is a bundle of about 150 certificates and a directory of about 300 entries:
//! reading them all on every start was most of a check's CPU time, for a chain that one of them,
//! or none, issues.
//!
//! A chain is first tried with the certificates the directories file under its issuers' hashed
//! names (`<hash>.N`: `config::subject_hash`), beside the rest. Each of those is a file Go reads
//! too, so a chain they verify is one Go verifies. Anything else (no link, a link to another CA
//! of the same name, a CA only in `SSL_CERT_FILE` or in a file without a link) is decided on
//! everything, read once as Go reads it: a failure is always the whole store's, said as it says
//! it, and every later chain is decided on the whole store at once.

use crate::config::{GoStore, Trust, subject_hash};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

/// Anchors, and the digests of those that a server certificate may be byte for byte (all but
/// Mozilla's).
pub(super) type Anchors = (RootCertStore, HashSet<[u8; 32]>);

#[derive(Debug)]
pub(super) struct Trusted {
    /// Mozilla's roots (when they count) and the CA files' certificates.
    base: Anchors,
    /// Go's store, unless it is not set (or was read with the configuration).
    store: Option<Arc<GoStore>>,
    /// The base and the whole store, once read.
    whole: OnceLock<Anchors>,
}

impl Trusted {
    pub(super) fn new(trust: &Trust) -> Trusted {
        let mozilla = if trust.mozilla { webpki_roots::TLS_SERVER_ROOTS } else { &[] };
        let roots = RootCertStore { roots: [mozilla, &trust.roots.anchors].concat() };
        Trusted { base: (roots, trust.roots.digests.clone()), store: trust.store.clone(), whole: OnceLock::new() }
    }

    /// Nothing is trusted at all (and no store may add to it).
    pub(super) fn is_empty(&self) -> bool {
        self.base.0.is_empty() && self.store.is_none()
    }

    /// What `verify` says with the anchors that decide this chain (the module's comment).
    pub(super) fn decide(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        verify: impl Fn(&Anchors) -> Result<(), rustls::Error>,
    ) -> Result<(), rustls::Error> {
        let Some(store) = &self.store else { return verify(&self.base) };
        if let Some(whole) = self.whole.get() {
            return verify(whole);
        }
        let issuers = std::iter::once(end_entity).chain(intermediates).filter_map(|cert| {
            let cert = webpki::EndEntityCert::try_from(cert).ok()?;
            subject_hash(cert.issuer())
        });
        let linked = store.linked(&issuers.collect::<Vec<_>>());
        let first = if linked.anchors.is_empty() { verify(&self.base) } else { verify(&joined(&self.base, linked)) };
        if first.is_ok() {
            return first;
        }
        verify(self.whole.get_or_init(|| {
            let mut all = crate::config::Anchors::default();
            for warning in store.read(&mut all).1 {
                log::warn!("{warning}");
            }
            joined(&self.base, all)
        }))
    }
}

fn joined(base: &Anchors, more: crate::config::Anchors) -> Anchors {
    let roots = RootCertStore { roots: [&base.0.roots[..], &more.anchors].concat() };
    (roots, base.1.union(&more.digests).copied().collect())
}
