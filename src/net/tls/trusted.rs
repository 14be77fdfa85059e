//! The trust anchors a chain is decided with. Mozilla's roots and the CA files are parsed when
//! the configuration is read; Go's store (`SSL_CERT_FILE`, `SSL_CERT_DIR`) only when a chain
//! needs it. Debian's is a bundle of about 150 certificates and a directory of about 300 entries:
//! reading them all on every start was most of a check's CPU time, for a chain that one of them,
//! or none, issues.
//!
//! A chain is first tried with the certificates the directories file under its issuers' hashed
//! names (`<hash>.N`: `trust_store::subject_hash`), beside the rest. Each of those is a file Go reads
//! too, so a chain they verify is one Go verifies. Anything else (no link, a link to another CA
//! of the same name, a CA only in `SSL_CERT_FILE` or in a file without a link) is decided on
//! everything, read as Go reads it: a failure is always the whole store's, said as it says it,
//! and every later chain is decided on the whole store at once, read again whenever the store
//! has changed (`GoStore::stamp`), so that a CA installed during a long wait counts as it would
//! for a client started now.
//!
//! Whatever the source, a trusted certificate outside its validity period is no anchor, as in
//! Go, which checks a root's dates as those of any certificate of the chain (webpki's anchors
//! have none): a chain only an expired CA issues fails, said with the CA's dates.

use super::Refusal;
use crate::config::Trust;
use crate::trust_store::{GoStore, subject_hash};
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::{CertificateError, RootCertStore};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Trust anchors with their validity periods.
#[derive(Debug)]
pub(super) struct Anchors {
    roots: RootCertStore,
    /// Each root's, in seconds since the epoch (Mozilla's: always).
    validity: Vec<(u64, u64)>,
    /// The digests of the certificates a server certificate may be byte for byte (all but
    /// Mozilla's).
    pub(super) pinned: HashSet<[u8; 32]>,
}

impl Anchors {
    /// What `verify` says with the roots valid `now`. A chain that a root out of its dates would
    /// verify, and none in them, is refused with that root's dates, said as the CA's (Go's
    /// message names no certificate).
    pub(super) fn verify_at(
        &self,
        now: UnixTime,
        verify: impl Fn(&RootCertStore) -> Result<(), rustls::Error>,
    ) -> Result<(), rustls::Error> {
        let t = now.as_secs();
        let dated = |valid: bool| {
            let roots = self.roots.roots.iter().zip(&self.validity);
            roots.filter(move |(_, (from, to))| (*from..=*to).contains(&t) == valid)
        };
        if dated(false).next().is_none() {
            return verify(&self.roots);
        }
        let valid: Vec<_> = dated(true).map(|(root, _)| root.clone()).collect();
        let result = verify(&RootCertStore { roots: valid.clone() });
        if result.is_ok() {
            return result;
        }
        // The root out of its dates that would have verified it, if one would.
        let out = dated(false).find(|(root, _)| {
            verify(&RootCertStore { roots: [&valid[..], std::slice::from_ref(*root)].concat() }).is_ok()
        });
        let Some((_, &(not_before, not_after))) = out else { return result };
        // The CA's dates, said as the CA's: not the server certificate's (issue 35 §6).
        let expired = t > not_after;
        let refusal = Refusal::TrustedCaDates { expired, at: if expired { not_after } else { not_before } };
        Err(rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(refusal)))))
    }
}

#[derive(Debug)]
pub(super) struct Trusted {
    /// Mozilla's roots (when they count) and the CA files' certificates.
    base: Anchors,
    /// Go's store, unless it is not set (or was read with the configuration).
    store: Option<Arc<GoStore>>,
    /// The base and the whole store, once read, with the store's stamp then: read again when
    /// the store changes, so that a CA installed during a wait (or a sidecar's weeks of
    /// watching) counts, as it would for a client started now (issue 35 §6).
    whole: Mutex<Option<(Stamp, Arc<Anchors>)>>,
}

type Stamp = Vec<(u64, u64, u64, i64, i64)>;

impl Trusted {
    pub(super) fn new(trust: &Trust) -> Trusted {
        let mozilla = if trust.mozilla { webpki_roots::TLS_SERVER_ROOTS } else { &[] };
        let base = Anchors {
            roots: RootCertStore { roots: [mozilla, &trust.roots.anchors].concat() },
            validity: [&vec![(0, u64::MAX); mozilla.len()][..], &trust.roots.validity].concat(),
            pinned: trust.roots.digests.clone(),
        };
        Trusted { base, store: trust.store.clone(), whole: Mutex::new(None) }
    }

    /// Nothing is trusted at all (and no store may add to it).
    pub(super) fn is_empty(&self) -> bool {
        self.base.roots.is_empty() && self.store.is_none()
    }

    /// What `verify` says with the anchors that decide this chain (the module's comment).
    pub(super) fn decide(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        verify: impl Fn(&Anchors) -> Result<(), rustls::Error>,
    ) -> Result<(), rustls::Error> {
        let Some(store) = &self.store else { return verify(&self.base) };
        let stamp = store.stamp();
        let kept = self.whole.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some((_, whole)) = kept.filter(|(then, _)| *then == stamp) {
            return verify(&whole);
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
        let mut all = crate::trust_store::Anchors::default();
        for warning in store.read(&mut all).1 {
            log::warn!("{warning}");
        }
        let whole = Arc::new(joined(&self.base, all));
        *self.whole.lock().unwrap_or_else(|e| e.into_inner()) = Some((stamp, whole.clone()));
        verify(&whole)
    }
}

fn joined(base: &Anchors, more: crate::trust_store::Anchors) -> Anchors {
    Anchors {
        roots: RootCertStore { roots: [&base.roots.roots[..], &more.anchors].concat() },
        validity: [&base.validity[..], &more.validity].concat(),
        pinned: base.pinned.union(&more.digests).copied().collect(),
    }
}
