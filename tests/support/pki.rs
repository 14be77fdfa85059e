//! A throwaway PKI made at test time: a CA, leaves for given names and dates, and the odd
//! certificates real deployments carry (self-signed, `CA:TRUE`, an IP written as a DNS name).

use super::provider::Mode;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub type Chain = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// A certificate authority that exists only for one test.
pub struct TestCa {
    pub dir: tempfile::TempDir,
    /// PEM of the CA certificate, for --ca-file.
    pub pem_path: PathBuf,
    issuer: Issuer<'static, KeyPair>,
    der: CertificateDer<'static>,
}

impl TestCa {
    pub fn new() -> TestCa {
        let key = KeyPair::generate().unwrap();
        let params = TestCa::params();
        let cert = params.self_signed(&key).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pem_path = dir.path().join("ca.pem");
        std::fs::write(&pem_path, cert.pem()).unwrap();
        let der = cert.der().clone();
        TestCa { dir, pem_path, issuer: Issuer::new(params, key), der }
    }

    /// Every test CA's: one name, so that two of them are a CA re-created under the same name.
    fn params() -> CertificateParams {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "wait-for-idp test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params
    }

    /// The CA certificate issued again, with the same name and key, valid between two dates (one
    /// that has expired, say), as PEM.
    pub fn reissued_pem(&self, not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> String {
        let mut params = TestCa::params();
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        params.self_signed(self.issuer.key()).unwrap().pem()
    }

    pub fn ca_arg(&self) -> String {
        self.pem_path.display().to_string()
    }

    /// A leaf certificate for `names`, valid now.
    pub fn leaf(&self, names: &[&str]) -> Chain {
        self.leaf_valid(names, (2020, 1, 1), (2090, 1, 1))
    }

    /// A leaf valid between two dates (year, month, day), e.g. one that has expired.
    pub fn leaf_valid(&self, names: &[&str], not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> Chain {
        self.leaf_with(names, |params| {
            params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
            params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        })
    }

    /// A leaf for `names`, valid now, with `edit` applied to its parameters (an extended key
    /// usage, a CA flag, an extension, its dates).
    pub fn leaf_with(&self, names: &[&str], edit: impl FnOnce(&mut CertificateParams)) -> Chain {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2090, 1, 1);
        edit(&mut params);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            vec![cert.der().clone(), self.der.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }

    /// A leaf that lists `name` as a DNS name only, even when it is an IP address (a common
    /// mistake: `DNS:127.0.0.1` instead of `IP:127.0.0.1`).
    pub fn leaf_dns_name_only(&self, name: &str) -> Chain {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![rcgen::SanType::DnsName(name.try_into().unwrap())];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            vec![cert.der().clone(), self.der.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }

    /// A leaf for `names` written as PEM files (certificate chain, key), for peers that read files.
    pub fn leaf_pem_files(&self, names: &[&str]) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (cert_path, key_path) = (self.path("leaf.pem"), self.path("leaf.key"));
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (cert_path, key_path)
    }

    /// The CA's private key as a PKCS#8 PEM file, for a peer that makes its own leaves
    /// (tests/real/clients/state-server).
    pub fn key_pem_file(&self) -> PathBuf {
        let path = self.path("ca.key");
        std::fs::write(&path, self.issuer.key().serialize_pem()).unwrap();
        path
    }

    /// A file path inside the test's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A self-signed certificate for `names` marked `CA:TRUE`, as `openssl req -x509` makes it, valid
/// between two dates: the server's chain, and its PEM written to `dir` for `--ca-file`.
pub fn self_signed_ca_cert(
    dir: &Path,
    names: &[&str],
    not_before: (i32, u8, u8),
    not_after: (i32, u8, u8),
) -> (Chain, PathBuf) {
    self_signed_ca_cert_with(dir, names, |params| {
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
    })
}

/// [`self_signed_ca_cert`], valid now, with `edit` applied to its parameters; each PEM file has
/// a name of its own, so that several can share `dir`.
pub fn self_signed_ca_cert_with(
    dir: &Path,
    names: &[&str],
    edit: impl FnOnce(&mut CertificateParams),
) -> (Chain, PathBuf) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2090, 1, 1);
    edit(&mut params);
    let cert = params.self_signed(&key).unwrap();
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let pem = dir.join(format!("self-signed-ca-{}-{n}.pem", names.join("-")));
    std::fs::write(&pem, cert.pem()).unwrap();
    ((vec![cert.der().clone()], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()))), pem)
}

/// A TLS server that requires a client certificate signed by `ca` (mutual TLS), optionally
/// speaking TLS 1.2 only.
pub fn tls_mode_requiring_client_cert(chain: Chain, ca: &TestCa, tls12_only: bool) -> Mode {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der.clone()).unwrap();
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().unwrap();
    let versions: &[&rustls::SupportedProtocolVersion] =
        if tls12_only { &[&rustls::version::TLS12] } else { rustls::DEFAULT_VERSIONS };
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain.0, chain.1)
        .unwrap();
    Mode::Tls(Arc::new(config))
}

/// A TLS server with this certificate chain.
pub fn tls_mode(chain: Chain) -> Mode {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain.0, chain.1)
        .unwrap();
    Mode::Tls(Arc::new(config))
}

/// A self-signed leaf, as an ingress shows before its real certificate is issued.
pub fn self_signed(names: &[&str]) -> Chain {
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let cert = params.self_signed(&key).unwrap();
    (vec![cert.der().clone()], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())))
}

/// A TLS server with this chain that speaks only these cipher suites (its key exchange groups
/// and versions as rustls's ring provider has them, TLS 1.2 alone if `tls12_only`).
pub fn tls_mode_with_suites(chain: Chain, suites: &[rustls::SupportedCipherSuite], tls12_only: bool) -> Mode {
    let provider =
        rustls::crypto::CryptoProvider { cipher_suites: suites.to_vec(), ..rustls::crypto::ring::default_provider() };
    let versions: &[&rustls::SupportedProtocolVersion] =
        if tls12_only { &[&rustls::version::TLS12] } else { rustls::DEFAULT_VERSIONS };
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain.0, chain.1)
        .unwrap();
    Mode::Tls(Arc::new(config))
}

/// A TLS server that shows `chain` but signs its handshake with another key of the same type (a
/// renewed certificate deployed without its new key, or the reverse).
pub fn tls_mode_with_another_key(chain: Chain) -> Mode {
    let other = KeyPair::generate().unwrap();
    tls_mode_unchecked((chain.0, PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(other.serialize_der()))))
}

/// A TLS server with this chain and key, which [`tls_mode`] would refuse: rustls's server checks
/// that the key is the certificate's, parsing the certificate (and so refusing one with an
/// unknown critical extension).
pub fn tls_mode_unchecked(chain: Chain) -> Mode {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let signing = provider.key_provider.load_private_key(chain.1).unwrap();
    let certified = rustls::sign::CertifiedKey::new(chain.0, signing);
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(certified)));
    Mode::Tls(Arc::new(config))
}

/// A TLS server that offers only h2 in ALPN: rustls (as Go's crypto/tls) refuses a client that
/// offers only http/1.1 with a no_application_protocol alert.
pub fn h2_only(chain: Chain) -> Mode {
    let Mode::Tls(config) = tls_mode(chain) else { unreachable!() };
    let mut config = (*config).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Mode::Tls(Arc::new(config))
}
