//! TLS with rustls: Mozilla's roots plus the user's CA files and Go's `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` (or, as oauth2-proxy does, its CA files alone), always verified, and failures
//! said so that the reader knows what to change.
//!
//! ureq's own rustls connector can trust either Mozilla's roots or a given list, not both, so
//! this module supplies the connector. There is deliberately no way to switch verification off.
//! The one widening is what Go and curl also accept: a server certificate that is byte for byte
//! one of the trusted certificates beyond Mozilla's (the self-signed certificate people hand to
//! oauth2-proxy's `--provider-ca-file`), still checked for its name and validity period.

use crate::config::Trust;
use crate::progress::{Progress, Stage};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, WebPkiServerVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{
    AlertDescription, CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore,
    SignatureScheme, StreamOwned,
};
use std::io::{Read, Write};
use std::sync::Arc;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport, TransportAdapter,
};
use webpki::ring as algs;

/// What every TLS connection shares: ring, and the certificate verifier.
#[derive(Debug, Clone)]
pub(crate) struct TlsSettings {
    provider: Arc<CryptoProvider>,
    verifier: Arc<GateVerifier>,
}

impl TlsSettings {
    /// Mozilla's roots (when `mozilla`) plus `extra_roots` (already checked one by one when the
    /// configuration was read).
    pub(crate) fn new(trust: &Trust) -> Result<TlsSettings, rustls::client::VerifierBuilderError> {
        let extra_roots = &trust.roots;
        let provider = Arc::new(verify_only_provider());
        let mozilla = if trust.mozilla { webpki_roots::TLS_SERVER_ROOTS } else { &[] };
        let mut roots = RootCertStore { roots: mozilla.to_vec() };
        let (_added, _ignored) = roots.add_parsable_certificates(extra_roots.iter().cloned());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build()?;
        Ok(TlsSettings { provider, verifier: Arc::new(GateVerifier { webpki, pinned: extra_roots.to_vec() }) })
    }

    /// A client configuration for one connection, reporting to `progress` whether the server
    /// asks for a client certificate.
    fn client_config(&self, progress: Arc<Progress>) -> Result<Arc<ClientConfig>, rustls::Error> {
        let mut config = ClientConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(self.verifier.clone())
            .with_client_cert_resolver(Arc::new(NoClientCert { progress }));
        // ALPN as Go offers it, less h2 (no HTTP/2 here): a server that speaks only h2 then says
        // so in the handshake (no_application_protocol) rather than in frames.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// ring, as rustls's `ring::default_provider()` sets it up, less what a client that verifies and
/// never signs has no use for: no private-key loading (so none of ring's signing code is linked)
/// and no ChaCha20-Poly1305 suites (every TLS 1.2 and 1.3 server offers AES-GCM, which TLS 1.3
/// makes mandatory). Together about 60 KB of the static binary, which has to stay within 2 MiB.
fn verify_only_provider() -> CryptoProvider {
    use rustls::crypto::ring::{cipher_suite as suite, kx_group};
    CryptoProvider {
        cipher_suites: vec![
            suite::TLS13_AES_256_GCM_SHA384,
            suite::TLS13_AES_128_GCM_SHA256,
            suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ],
        kx_groups: vec![kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1],
        signature_verification_algorithms: SIGNATURE_ALGORITHMS,
        secure_random: &SystemRandom,
        key_provider: &NoPrivateKeys,
    }
}

/// The signature algorithms of rustls's ring provider (the same table, which it does not export).
static SIGNATURE_ALGORITHMS: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: &[
        algs::ECDSA_P256_SHA256,
        algs::ECDSA_P256_SHA384,
        algs::ECDSA_P384_SHA256,
        algs::ECDSA_P384_SHA384,
        algs::ED25519,
        algs::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
        algs::RSA_PSS_2048_8192_SHA384_LEGACY_KEY,
        algs::RSA_PSS_2048_8192_SHA512_LEGACY_KEY,
        algs::RSA_PKCS1_2048_8192_SHA256,
        algs::RSA_PKCS1_2048_8192_SHA384,
        algs::RSA_PKCS1_2048_8192_SHA512,
        algs::RSA_PKCS1_2048_8192_SHA256_ABSENT_PARAMS,
        algs::RSA_PKCS1_2048_8192_SHA384_ABSENT_PARAMS,
        algs::RSA_PKCS1_2048_8192_SHA512_ABSENT_PARAMS,
    ],
    mapping: &[
        // For TLS 1.2 the curve is not fixed by the SignatureScheme; for TLS 1.3 it is.
        (SignatureScheme::ECDSA_NISTP384_SHA384, &[algs::ECDSA_P384_SHA384, algs::ECDSA_P256_SHA384]),
        (SignatureScheme::ECDSA_NISTP256_SHA256, &[algs::ECDSA_P256_SHA256, algs::ECDSA_P384_SHA256]),
        (SignatureScheme::ED25519, &[algs::ED25519]),
        (SignatureScheme::RSA_PSS_SHA512, &[algs::RSA_PSS_2048_8192_SHA512_LEGACY_KEY]),
        (SignatureScheme::RSA_PSS_SHA384, &[algs::RSA_PSS_2048_8192_SHA384_LEGACY_KEY]),
        (SignatureScheme::RSA_PSS_SHA256, &[algs::RSA_PSS_2048_8192_SHA256_LEGACY_KEY]),
        (SignatureScheme::RSA_PKCS1_SHA512, &[algs::RSA_PKCS1_2048_8192_SHA512]),
        (SignatureScheme::RSA_PKCS1_SHA384, &[algs::RSA_PKCS1_2048_8192_SHA384]),
        (SignatureScheme::RSA_PKCS1_SHA256, &[algs::RSA_PKCS1_2048_8192_SHA256]),
    ],
};

#[derive(Debug)]
struct SystemRandom;

impl rustls::crypto::SecureRandom for SystemRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), rustls::crypto::GetRandomFailed> {
        use ring::rand::SecureRandom;
        ring::rand::SystemRandom::new().fill(buf).map_err(|_| rustls::crypto::GetRandomFailed)
    }
}

/// The gate never loads a private key.
#[derive(Debug)]
struct NoPrivateKeys;

impl rustls::crypto::KeyProvider for NoPrivateKeys {
    fn load_private_key(
        &self,
        _key: rustls::pki_types::PrivateKeyDer<'static>,
    ) -> Result<Arc<dyn rustls::sign::SigningKey>, rustls::Error> {
        Err(rustls::Error::General("wait-for-idp loads no private keys".into()))
    }
}

/// webpki's verification, plus one case it refuses: a server certificate that is byte-identical
/// to a trusted certificate beyond Mozilla's (a CA file's, `SSL_CERT_*`'s) but marked `CA:TRUE`
/// (what `openssl req -x509` makes), which webpki calls `CaUsedAsEndEntity`. webpki checks the
/// validity period before the CA flag, so that error means the dates were fine (a test holds
/// this); the name is checked here.
#[derive(Debug)]
struct GateVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for GateVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(e) if is_ca_used_as_end_entity(&e) && self.pinned.iter().any(|c| c.as_ref() == end_entity.as_ref()) => {
                verify_name(end_entity, server_name).map(|()| ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

fn is_ca_used_as_end_entity(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
            matches!(other.0.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity))
        }
        _ => false,
    }
}

fn verify_name(end_entity: &CertificateDer<'_>, server_name: &ServerName<'_>) -> Result<(), rustls::Error> {
    let cert = webpki::EndEntityCert::try_from(end_entity)
        .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
    cert.verify_is_valid_for_subject_name(server_name).map_err(|e| match e {
        webpki::Error::CertNotValidForName(context) => {
            rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
                expected: context.expected,
                presented: context.presented,
            })
        }
        _ => rustls::Error::InvalidCertificate(CertificateError::NotValidForName),
    })
}

/// The gate has no client certificate; this only notes that the server asked for one, so that a
/// handshake that then breaks off (TLS 1.2 servers often just close: "broken pipe") is explained.
#[derive(Debug)]
struct NoClientCert {
    progress: Arc<Progress>,
}

impl ResolvesClientCert for NoClientCert {
    fn resolve(&self, _hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.progress.note_client_cert_request();
        None
    }

    fn has_certs(&self) -> bool {
        false
    }
}

/// Wraps the chained transport in TLS when the URL is https.
#[derive(Debug)]
pub(crate) struct TlsConnector {
    settings: TlsSettings,
    progress: Arc<Progress>,
}

impl TlsConnector {
    pub(crate) fn new(settings: TlsSettings, progress: Arc<Progress>) -> Self {
        TlsConnector { settings, progress }
    }
}

impl<In: Transport> Connector<In> for TlsConnector {
    type Out = Either<In, TlsTransport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else { return Ok(None) };
        let host = crate::url::bare_host(details.uri.host().unwrap_or_default());
        if !details.needs_tls() || transport.is_tls() {
            // Last in the chain: the connection is made, the request goes out next.
            self.progress.enter(Stage::AwaitingResponse, host);
            return Ok(Some(Either::A(transport)));
        }
        self.progress.enter(Stage::TlsHandshake, host);
        let name = ServerName::try_from(host.to_string())
            .map_err(|_| ureq::Error::Tls("the host is not a valid TLS server name"))?;
        let config = self.settings.client_config(self.progress.clone()).map_err(ureq::Error::Rustls)?;
        let mut conn = ClientConnection::new(config, name).map_err(ureq::Error::Rustls)?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        if let Err(e) = conn.complete_io(&mut sock) {
            // Keep the typed rustls error: it tells an untrusted CA from a wrong name.
            return Err(match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                Some(tls) => ureq::Error::Rustls(tls.clone()),
                None => ureq::Error::from(e),
            });
        }
        self.progress.enter(Stage::AwaitingResponse, host);
        let buffers = LazyBuffers::new(details.config.input_buffer_size(), details.config.output_buffer_size());
        Ok(Some(Either::B(TlsTransport { buffers, stream: StreamOwned { conn, sock } })))
    }
}

/// An established TLS session over the chained transport.
pub(crate) struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl std::fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsTransport")
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

/// A TLS failure, said so that the reader knows what to change.
pub(crate) fn explain(host: &str, error: &rustls::Error) -> String {
    match error {
        rustls::Error::InvalidCertificate(cert) => explain_certificate(host, cert, error),
        rustls::Error::AlertReceived(AlertDescription::CertificateRequired) => client_certificate_required(host),
        rustls::Error::AlertReceived(AlertDescription::HandshakeFailure) => format!(
            "{host} broke off the TLS handshake (handshake_failure): no TLS version, cipher or signature algorithm in \
             common. A server certificate with a P-521 or Ed448 key causes this: this build's crypto library (ring) \
             verifies only RSA, ECDSA P-256/P-384 and Ed25519; reissue the certificate with one of those"
        ),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => format!(
            "TLS handshake with {host} failed ({error}); is this port speaking plain HTTP? Then use an http:// URL"
        ),
        _ => format!("TLS handshake with {host} failed: {error}"),
    }
}

/// The server asked for a client certificate, which the gate does not have.
pub(crate) fn client_certificate_required(host: &str) -> String {
    format!(
        "{host} requires a client certificate (mutual TLS), which the gate does not send; serve the discovery \
         document without client authentication, or point --discovery-url at an endpoint that does"
    )
}

fn explain_certificate(host: &str, cert: &CertificateError, error: &rustls::Error) -> String {
    match cert {
        CertificateError::NotValidForNameContext { presented, .. } => {
            let ip = host.parse::<std::net::IpAddr>().is_ok();
            let names: Vec<(&str, &str)> = presented.iter().map(|p| presented_name(p)).collect();
            if ip && names.iter().any(|(kind, name)| *kind == "DnsName" && *name == host) {
                return format!(
                    "certificate lists {host} as a DNS name, not as an IP address; a client connecting to an IP \
                     address needs it as an IP address entry (subjectAltName IP:{host}): reissue it, or use a host \
                     name it lists"
                );
            }
            let list = names.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ");
            format!(
                "certificate is for {}, not {host}; use the name it was issued for, or reissue it for {host}",
                if list.is_empty() { "no name at all" } else { &list }
            )
        }
        CertificateError::NotValidForName => {
            format!("certificate is not valid for {host}; use the name it was issued for, or reissue it")
        }
        CertificateError::UnknownIssuer => format!(
            "certificate for {host} is signed by an unknown CA (or is self-signed); trust that CA with --ca-file. \
             An ingress may still be showing its default certificate while the real one is issued"
        ),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            format!("certificate for {host} has expired ({error})")
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            format!("certificate for {host} is not valid yet; check the clocks ({error})")
        }
        CertificateError::UnsupportedSignatureAlgorithmContext { signature_algorithm_id, .. } => {
            unsupported_algorithm(host, signature_algorithm_id)
        }
        CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext {
            signature_algorithm_id,
            public_key_algorithm_id,
        } => unsupported_algorithm(host, &[signature_algorithm_id.as_slice(), public_key_algorithm_id].concat()),
        #[allow(deprecated)]
        CertificateError::UnsupportedSignatureAlgorithm => unsupported_algorithm(host, &[]),
        _ => format!("certificate for {host} rejected: {error}"),
    }
}

/// webpki renders presented names as `DnsName("a.example")` or `IpAddress(192.0.2.1)`.
fn presented_name(p: &str) -> (&str, &str) {
    match p.split_once('(') {
        Some((kind, rest)) => (kind, rest.trim_end_matches(')').trim_matches('"')),
        None => ("", p),
    }
}

/// Algorithm identifiers a reader will recognise, by the DER bytes of their OIDs.
const ALGORITHMS: &[(&[u8], &str)] = &[
    (&[0x2b, 0x81, 0x04, 0x00, 0x23], "an ECDSA P-521 key"),
    (&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04], "ECDSA with SHA-512 (P-521)"),
    (&[0x2b, 0x65, 0x71], "Ed448"),
    (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05], "RSA with SHA-1"),
    (&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01], "ECDSA with SHA-1"),
];

fn unsupported_algorithm(host: &str, der: &[u8]) -> String {
    let named = ALGORITHMS.iter().find(|(oid, _)| der.windows(oid.len()).any(|w| w == *oid)).map(|(_, n)| *n);
    format!(
        "certificate chain of {host} is signed with {}, which this build cannot verify: its crypto library (ring) \
         checks RSA (SHA-256 or better), ECDSA P-256/P-384 and Ed25519 signatures only; reissue the certificate or \
         its CA with one of those",
        named.unwrap_or("an algorithm")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presented_names_are_read_back() {
        assert_eq!(presented_name("DnsName(\"a.example\")"), ("DnsName", "a.example"));
        assert_eq!(presented_name("IpAddress(192.0.2.1)"), ("IpAddress", "192.0.2.1"));
    }

    #[test]
    fn unsupported_algorithms_are_named() {
        let p521 = [0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23];
        assert!(unsupported_algorithm("h", &p521).contains("an ECDSA P-521 key"));
        assert!(unsupported_algorithm("h", &[1, 2]).contains("signed with an algorithm, which"));
    }
}
