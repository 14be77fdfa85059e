//! TLS with rustls: what `config::Trust` decided (Mozilla's roots for the system's, the user's CA
//! files, Go's `SSL_CERT_FILE` and `SSL_CERT_DIR`), always verified, offering what Go's client
//! offers where ring can (`algorithms`), and failures said so that the reader knows what to change
//! (`refusal` finds the causes rustls does not name).
//!
//! ureq's own rustls connector can trust either Mozilla's roots or a given list, not both, so
//! this module supplies the connector. There is deliberately no way to switch verification off.
//! The one widening is what Go and curl also accept: a server certificate that is byte for byte
//! one of the trusted certificates beyond Mozilla's (the self-signed certificate people hand to
//! oauth2-proxy's `--provider-ca-file`), still checked for its name and validity period.

use crate::config::Trust;
use crate::progress::{Progress, Stage};
use crate::trust_store::certificate_digest;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::sign::CertifiedKey;
use rustls::{
    AlertDescription, CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme,
    StreamOwned,
};
use std::io::{Read, Write};
use std::sync::Arc;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport, TransportAdapter,
};

mod algorithms;
mod chacha;
mod explanation;
mod refusal;
mod trusted;

use algorithms::verify_only_provider;
pub(crate) use explanation::{client_certificate_required, explain};
pub(crate) use refusal::Refusal;
use trusted::Trusted;

/// What every TLS connection shares: ring, and the certificate verifier.
#[derive(Debug, Clone)]
pub(crate) struct TlsSettings {
    provider: Arc<CryptoProvider>,
    verifier: Arc<GateVerifier>,
}

impl TlsSettings {
    /// Mozilla's roots (when `trust.mozilla`) plus the other trusted certificates, parsed into
    /// anchors when the configuration was read, and Go's store, read when a chain needs it
    /// (`trusted`). Fails only when nothing at all is trusted.
    pub(crate) fn new(trust: &Trust) -> Result<TlsSettings, rustls::client::VerifierBuilderError> {
        let provider = Arc::new(verify_only_provider());
        let trusted = Trusted::new(trust);
        if trusted.is_empty() {
            return Err(rustls::client::VerifierBuilderError::NoRootAnchors);
        }
        let algorithms = provider.signature_verification_algorithms;
        Ok(TlsSettings { provider, verifier: Arc::new(GateVerifier { algorithms, trusted }) })
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
        // No session cache, as Go's http.Transport has none by default: every connection is new
        // anyway, and rustls's default cache reserved room for 256 servers in every connection.
        config.resumption = rustls::client::Resumption::disabled();
        Ok(Arc::new(config))
    }
}

/// webpki's verification, with the anchors `trusted` chooses for the chain and the time, plus
/// the server certificates it refuses that are themselves trusted ([`verify_pinned`]), whatever
/// it refused them for (an unknown signer, `CA:TRUE`, which webpki calls `CaUsedAsEndEntity`),
/// and an untrusted `CA:TRUE` one said as such ([`refuse_ca_certificate`]).
#[derive(Debug)]
struct GateVerifier {
    algorithms: WebPkiSupportedAlgorithms,
    trusted: Trusted,
}

impl ServerCertVerifier for GateVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        let algorithms = self.algorithms.all;
        let verify = |anchors: &trusted::Anchors| {
            anchors.verify_at(now, |roots| {
                match verify_server_cert_signed_by_trust_anchor(&cert, roots, intermediates, now, algorithms) {
                    // A trusted certificate is trusted as itself, whatever webpki found (an
                    // unknown signer, a CA flag): one rule for both, Go's.
                    Err(e) if anchors.pinned.contains(&certificate_digest(end_entity)) => {
                        verify_pinned(&cert, end_entity, server_name, now, e)
                    }
                    Err(e) if is_ca_used_as_end_entity(&e) => refuse_ca_certificate(&cert, end_entity, server_name),
                    other => other,
                }
            })
        };
        self.trusted.decide(end_entity, intermediates, verify).map_err(|e| match e {
            // Named, so that the user sees which CA is missing (issue 36).
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                let (issuer, self_signed) = refusal::issuer_of(end_entity);
                let refusal = Refusal::UnknownIssuer { issuer, self_signed };
                rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(refusal))))
            }
            e => e,
        })?;
        verify_server_name(&cert, server_name).map(|()| ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms).map_err(|e| name_leaf_key(cert, e))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        if dss.scheme == SignatureScheme::ECDSA_NISTP521_SHA512 {
            return Err(name_leaf_key(cert, rustls::Error::General("P-521".into())));
        }
        verify_tls13_signature(message, cert, dss, &self.algorithms).map_err(|e| name_leaf_key(cert, e))
    }

    /// ring's, and P-521's as Go offers it, though ring cannot check it: a server with a P-521
    /// certificate then sends it (rather than refusing the handshake unexplained), the gate names
    /// its key, and a server with several certificates picks the one it would show the proxy.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        let mut schemes = self.algorithms.supported_schemes();
        schemes.push(SignatureScheme::ECDSA_NISTP521_SHA512);
        schemes
    }
}

/// A server certificate marked `CA:TRUE`, its dates good, and not itself trusted: refused, saying
/// why, after the name and the usage Go would check first.
fn refuse_ca_certificate(
    cert: &ParsedCertificate<'_>,
    end_entity: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
) -> Result<(), rustls::Error> {
    verify_server_name(cert, server_name)?;
    let (serves_tls, self_signed) = refusal::read_ca_certificate(end_entity);
    if !serves_tls {
        return Err(rustls::Error::InvalidCertificate(CertificateError::InvalidPurpose));
    }
    let refusal = Refusal::CaCertificate { self_signed };
    Err(rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(refusal)))))
}

/// A server certificate that is byte for byte a trusted one beyond Mozilla's (a CA file's,
/// `SSL_CERT_*`'s), which webpki refused (its signer unknown: the usual way to pin a provider's
/// own certificate, `CA:FALSE`; or marked `CA:TRUE`, as `openssl req -x509` makes it): trusted as itself, as Go's `Verify` takes a leaf its roots
/// contain, once its dates, its name and its usage pass, in Go's order (issue 36). Dates that
/// cannot be read leave webpki's refusal standing.
fn verify_pinned(
    cert: &ParsedCertificate<'_>,
    end_entity: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    now: UnixTime,
    refused: rustls::Error,
) -> Result<(), rustls::Error> {
    let Some((not_before, not_after)) = crate::trust_store::certificate_validity(end_entity) else {
        return Err(refused);
    };
    let at = |secs| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
    if now.as_secs() > not_after {
        return Err(rustls::Error::InvalidCertificate(CertificateError::ExpiredContext {
            time: now,
            not_after: at(not_after),
        }));
    }
    if now.as_secs() < not_before {
        return Err(rustls::Error::InvalidCertificate(CertificateError::NotValidYetContext {
            time: now,
            not_before: at(not_before),
        }));
    }
    verify_server_name(cert, server_name)?;
    match refusal::read_ca_certificate(end_entity).0 {
        true => Ok(()),
        false => Err(rustls::Error::InvalidCertificate(CertificateError::InvalidPurpose)),
    }
}

/// A handshake signature that fails to verify because of the server certificate's key (P-521,
/// or RSA under 2048 bits signing with RSA-PSS), or because the server's key is not its
/// certificate's, said as such (rustls calls the last one a bad certificate signature).
fn name_leaf_key(cert: &CertificateDer<'_>, error: rustls::Error) -> rustls::Error {
    match refusal::key_of(cert) {
        Some(key @ refusal::Key::EcdsaP521) => other(Refusal::LeafKey(key)),
        Some(refusal::Key::Rsa(bits)) if bits < 2048 => other(Refusal::LeafKey(refusal::Key::Rsa(bits))),
        // `matches!`, not `==`: rustls's `PartialEq` for its errors is 2 KB of code.
        _ if matches!(error, rustls::Error::InvalidCertificate(CertificateError::BadSignature)) => {
            other(Refusal::HandshakeSignature)
        }
        _ => error,
    }
}

#[inline(never)]
fn other(refusal: Refusal) -> rustls::Error {
    rustls::Error::Other(rustls::OtherError(Arc::new(refusal)))
}

fn is_ca_used_as_end_entity(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
            matches!(other.0.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity))
        }
        _ => false,
    }
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
                // A refusal before the server's hello: nothing the gate offers suits it.
                Some(rustls::Error::AlertReceived(AlertDescription::HandshakeFailure))
                    if conn.protocol_version().is_none() =>
                {
                    ureq::Error::Rustls(other(Refusal::NothingInCommon))
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Made with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-521` and `-newkey rsa:1024`.
    const P521: &str = "-----BEGIN CERTIFICATE-----\nMIIB/TCCAV6gAwIBAgIUDm3MK2R+p4osBpeItb0+xlRrURMwCgYIKoZIzj0EAwIw\nDzENMAsGA1UEAwwEcDUyMTAgFw0yNjEyMDExNjE4NTJaGA8yMTI2MTEwNzE2MTg1\nMlowDzENMAsGA1UEAwwEcDUyMTCBmzAQBgcqhkjOPQIBBgUrgQQAIwOBhgAEAAJJ\nNme8ODkY5HEvat2jDTT99w6jUtqZjJZvZLwl2BYpgW6PZuRuSoMZsmaVaZp7Y32t\no5FZqUHAp+tKI6Jc6iWNAP5xDF9i3OkXynAZEUhSFboqqvKcrOiLKrKT5Hyk7VCc\nqWwCQvWN2iXRZTKs3dU4j22iFgugkPAW1GzxdKR6pvgyo1MwUTAdBgNVHQ4EFgQU\nx9wg/IN3W5C5m4KYR8lQru29e0kwHwYDVR0jBBgwFoAUx9wg/IN3W5C5m4KYR8lQ\nru29e0kwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgOBjAAwgYgCQgGnl/p/\nsbvQ9XEDCfdik21o5DZtzi2ukG3oWv3QZS7YAgI73gdHr7P0YbHJM1Ya5lgw5YCG\nVvA8BBPM3HZcnrBVDwJCAY3TDmj+Rz9M9HFtlRWP481cGvZYmmbwXaImRjyWc3kg\nFD9Fkg8RUgEKGF9xnXOAJEnIDGoCceACliQqZwE2Ix7B\n-----END CERTIFICATE-----\n";
    const RSA_1024: &str = "-----BEGIN CERTIFICATE-----\nMIICAjCCAWugAwIBAgIUTgQTk0aWVKYqXtoFGmNVFOLLr3IwDQYJKoZIhvcNAQEL\nBQAwEjEQMA4GA1UEAwwHcnNhMTAyNDAgFw0yNjEyMDExNjE4NTJaGA8yMTI2MTEw\nNzE2MTg1MlowEjEQMA4GA1UEAwwHcnNhMTAyNDCBnzANBgkqhkiG9w0BAQEFAAOB\njQAwgYkCgYEA0wA2p1lK6tfJC2xupcd4AsadC4PIpHBTvYSd012JQZIOkiWdw1ZA\n2Psi+rLXhQ0uUzby4FvOtVMAQDOSBV6eGxxJLsHtKTPq0WXZstTLdlf1NU/tlAKE\n6x8eCpqAGlie+Z27kN7zkJ8RHMvLOpXlgIOTF3LF5czcPhUAMzcDEIMCAwEAAaNT\nMFEwHQYDVR0OBBYEFNOFEZk0o+8l9sGYsQ/a4qrd7YQQMB8GA1UdIwQYMBaAFNOF\nEZk0o+8l9sGYsQ/a4qrd7YQQMA8GA1UdEwEB/wQFMAMBAf8wDQYJKoZIhvcNAQEL\nBQADgYEABdUvx+VTrKTIEuvFYC4ej0fUxM5kK2k68wUjVzlhDSu1AoS4Yyf+5w8k\nD4oP9ceXcY3NWvVTOTtqms86bMNt/cyWzP4u5e8+dLAW/dnP5x1zTeJY1ZwIhPqS\n9mc8JKunsvmnRYJpY/Wvms1KLWAOKTkQnUMY1BNMwFHUtOyJwls=\n-----END CERTIFICATE-----\n";

    fn der(pem: &str) -> CertificateDer<'static> {
        use rustls::pki_types::pem::PemObject;
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }

    #[test]
    fn leaf_keys_are_read_from_the_certificate() {
        assert_eq!(refusal::key_of(&der(P521)), Some(refusal::Key::EcdsaP521));
        assert_eq!(refusal::key_of(&der(RSA_1024)), Some(refusal::Key::Rsa(1024)));
        let e = name_leaf_key(&der(RSA_1024), rustls::Error::General("x".into()));
        assert!(explain("h", &e).starts_with("server certificate of h has an RSA key of 1024 bits"), "{e}");
        let e = name_leaf_key(&der(P521), rustls::Error::General("x".into()));
        assert!(explain("h", &e).starts_with("server certificate of h has an ECDSA P-521 key, which"), "{e}");
    }

    /// Go's default suites that rustls implements, TLS 1.2's with ChaCha20 too; its groups less
    /// the post-quantum ones and P-521.
    #[test]
    fn the_gate_offers_what_go_offers_where_ring_can() {
        let provider = verify_only_provider();
        let suites: Vec<String> = provider.cipher_suites.iter().map(|s| format!("{:?}", s.suite())).collect();
        assert!(suites.contains(&"TLS13_CHACHA20_POLY1305_SHA256".to_string()), "{suites:?}");
        assert!(suites.contains(&"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256".to_string()), "{suites:?}");
        assert_eq!(suites.len(), 9);
        let groups: Vec<String> = provider.kx_groups.iter().map(|g| format!("{:?}", g.name())).collect();
        assert_eq!(groups, ["X25519", "secp256r1", "secp384r1"]);
    }
}
