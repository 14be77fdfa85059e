//! What the gate's TLS offers and verifies: ring, as rustls's `ring::default_provider()` sets it
//! up, cut to what Go's client (crypto/tls, Go 1.26) offers by default and ring implements, less
//! what a client that verifies and never signs has no use for (no private-key loading, so none of
//! ring's signing code is linked).
//!
//! Go offers, and ring cannot do: the CBC suites of TLS 1.2 (rustls has none), the key exchanges
//! X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024 and P-521, and P-521 signatures. A server
//! that insists on one of those ends the handshake, and the failure names it (`super::failure`).

use rustls::SignatureScheme;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm, alg_id};
use std::sync::Arc;
use webpki::ring as algs;

/// Go's default suites in Go's order (AES-GCM first, as on hardware with AES instructions), those
/// rustls implements: all of TLS 1.3's, and TLS 1.2's AEAD suites with ECDHE. ChaCha20-Poly1305
/// is what a server without AES instructions prefers: RustCrypto's (`super::chacha`).
pub(super) fn verify_only_provider() -> CryptoProvider {
    use rustls::crypto::ring::{cipher_suite as suite, kx_group};
    let mut chacha = super::chacha::suites();
    CryptoProvider {
        cipher_suites: [suite::TLS13_AES_128_GCM_SHA256, suite::TLS13_AES_256_GCM_SHA384]
            .into_iter()
            .chain(chacha.next())
            .chain([
                suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
                suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            ])
            .chain(chacha)
            .collect(),
        kx_groups: vec![kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1],
        signature_verification_algorithms: SIGNATURE_ALGORITHMS,
        secure_random: &SystemRandom,
        key_provider: &NoPrivateKeys,
    }
}

/// What the gate says it offers when a server finds nothing in common.
pub(super) const OFFERED: &str =
    "TLS 1.2 and 1.3 with AES-GCM or ChaCha20-Poly1305, key exchange X25519, P-256 or P-384";

/// The signature algorithms of rustls's ring provider (the same table, which it does not export),
/// with RSA keys from 1024 bits as Go accepts them (ring's legacy PKCS#1 algorithms; ring has no
/// 1024-bit RSA-PSS nor PKCS#1 with SHA-384 below 2048 bits).
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
        RSA_PKCS1_1024_8192_SHA256,
        algs::RSA_PKCS1_2048_8192_SHA384,
        RSA_PKCS1_1024_8192_SHA512,
        RSA_PKCS1_1024_8192_SHA256_ABSENT_PARAMS,
        algs::RSA_PKCS1_2048_8192_SHA384_ABSENT_PARAMS,
        RSA_PKCS1_1024_8192_SHA512_ABSENT_PARAMS,
    ],
    // In Go's order (crypto/tls `defaultSupportedSignatureAlgorithms`), less SHA-1, which Go 1.26
    // no longer accepts, and P-521, which `GateVerifier` adds: a server picking among its
    // certificates and algorithms then picks what it would pick for the proxy.
    mapping: &[
        (SignatureScheme::RSA_PSS_SHA256, &[algs::RSA_PSS_2048_8192_SHA256_LEGACY_KEY]),
        // For TLS 1.2 the curve is not fixed by the SignatureScheme; for TLS 1.3 it is.
        (SignatureScheme::ECDSA_NISTP256_SHA256, &[algs::ECDSA_P256_SHA256, algs::ECDSA_P384_SHA256]),
        (SignatureScheme::ED25519, &[algs::ED25519]),
        (SignatureScheme::RSA_PSS_SHA384, &[algs::RSA_PSS_2048_8192_SHA384_LEGACY_KEY]),
        (SignatureScheme::RSA_PSS_SHA512, &[algs::RSA_PSS_2048_8192_SHA512_LEGACY_KEY]),
        (SignatureScheme::RSA_PKCS1_SHA256, &[RSA_PKCS1_1024_8192_SHA256]),
        (SignatureScheme::RSA_PKCS1_SHA384, &[algs::RSA_PKCS1_2048_8192_SHA384]),
        (SignatureScheme::RSA_PKCS1_SHA512, &[RSA_PKCS1_1024_8192_SHA512]),
        (SignatureScheme::ECDSA_NISTP384_SHA384, &[algs::ECDSA_P384_SHA384, algs::ECDSA_P256_SHA384]),
    ],
};

/// A ring RSA algorithm under webpki's interface, as webpki wraps its own.
#[derive(Debug)]
struct Rsa {
    signature_alg_id: AlgorithmIdentifier,
    verification_alg: &'static ring::signature::RsaParameters,
}

impl SignatureVerificationAlgorithm for Rsa {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::RSA_ENCRYPTION
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg_id
    }

    fn verify_signature(&self, public_key: &[u8], message: &[u8], signature: &[u8]) -> Result<(), InvalidSignature> {
        ring::signature::UnparsedPublicKey::new(self.verification_alg, public_key)
            .verify(message, signature)
            .map_err(|_| InvalidSignature)
    }
}

use ring::signature::{RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY, RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY};

static RSA_PKCS1_1024_8192_SHA256: &dyn SignatureVerificationAlgorithm = &Rsa {
    signature_alg_id: alg_id::RSA_PKCS1_SHA256,
    verification_alg: &RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
};
static RSA_PKCS1_1024_8192_SHA512: &dyn SignatureVerificationAlgorithm = &Rsa {
    signature_alg_id: alg_id::RSA_PKCS1_SHA512,
    verification_alg: &RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY,
};
/// The same, with the NULL parameters left out of the signature's algorithm identifier (what
/// some encoders write; webpki accepts both).
static RSA_PKCS1_1024_8192_SHA256_ABSENT_PARAMS: &dyn SignatureVerificationAlgorithm = &Rsa {
    signature_alg_id: AlgorithmIdentifier::from_slice(&[
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b,
    ]),
    verification_alg: &RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
};
static RSA_PKCS1_1024_8192_SHA512_ABSENT_PARAMS: &dyn SignatureVerificationAlgorithm = &Rsa {
    signature_alg_id: AlgorithmIdentifier::from_slice(&[
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d,
    ]),
    verification_alg: &RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY,
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
