//! ChaCha20-Poly1305 for TLS 1.2 and 1.3, as Go's client offers it, from RustCrypto's portable
//! code: ring's, with its assembly, costs 52 KiB of the static binary, this 16 KiB. The suites are
//! ring's AES-128-GCM ones (the same hash, key exchange and signatures) with this AEAD in place.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Tag};
use rustls::crypto::cipher::{
    AeadKey, InboundOpaqueMessage, InboundPlainMessage, Iv, KeyBlockShape, MessageDecrypter, MessageEncrypter, Nonce,
    OutboundOpaqueMessage, OutboundPlainMessage, PrefixedPayload, Tls12AeadAlgorithm, Tls13AeadAlgorithm,
    UnsupportedOperationError, make_tls12_aad, make_tls13_aad,
};
use rustls::crypto::ring::cipher_suite as ring;
use rustls::{
    CipherSuite, CipherSuiteCommon, ConnectionTrafficSecrets, ContentType, Error, ProtocolVersion,
    SupportedCipherSuite, Tls12CipherSuite, Tls13CipherSuite,
};

/// TLS_CHACHA20_POLY1305_SHA256 and TLS 1.2's two ECDHE ChaCha20 suites, in Go's order. Made
/// for each HTTP client (one per issuer) and kept for the process's life, as rustls's own suites
/// are statics: a few hundred bytes.
pub(super) fn suites() -> impl Iterator<Item = SupportedCipherSuite> {
    let chacha = [
        (ring::TLS13_AES_128_GCM_SHA256, CipherSuite::TLS13_CHACHA20_POLY1305_SHA256),
        (ring::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
        (ring::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
    ];
    chacha.into_iter().map(|(aes, id)| match aes {
        SupportedCipherSuite::Tls13(aes) => SupportedCipherSuite::Tls13(Box::leak(Box::new(Tls13CipherSuite {
            common: common(&aes.common, id),
            aead_alg: &ChaCha,
            quic: None,
            ..*aes
        }))),
        SupportedCipherSuite::Tls12(aes) => SupportedCipherSuite::Tls12(Box::leak(Box::new(Tls12CipherSuite {
            common: common(&aes.common, id),
            aead_alg: &ChaCha,
            ..*aes
        }))),
    })
}

/// AES-GCM's, under ChaCha20's name, without its limit: RFC 8446 sets none for ChaCha20.
fn common(aes: &CipherSuiteCommon, suite: CipherSuite) -> CipherSuiteCommon {
    CipherSuiteCommon { suite, hash_provider: aes.hash_provider, confidentiality_limit: u64::MAX }
}

const TAG_LEN: usize = 16;

/// The AEAD, for TLS 1.3's records (content type inside, fixed header as AAD) and TLS 1.2's.
struct ChaCha;

struct Cipher {
    aead: ChaCha20Poly1305,
    iv: Iv,
    tls13: bool,
}

impl Cipher {
    /// rustls hands over keys of `key_len()` (`enc_key_len` for TLS 1.2): 32 bytes.
    fn boxed(key: &AeadKey, iv: Iv, tls13: bool) -> Box<Cipher> {
        let aead = ChaCha20Poly1305::new(chacha20poly1305::Key::from_slice(key.as_ref()));
        Box::new(Cipher { aead, iv, tls13 })
    }

    /// The additional data: TLS 1.3's record header, or TLS 1.2's sequence number and header.
    fn aad(&self, seq: u64, typ: ContentType, version: ProtocolVersion, record_len: usize) -> ([u8; 13], usize) {
        let mut aad = [0; 13];
        if self.tls13 {
            aad[..5].copy_from_slice(&make_tls13_aad(record_len));
            (aad, 5)
        } else {
            (make_tls12_aad(seq, typ, version, record_len - TAG_LEN), 13)
        }
    }
}

impl MessageEncrypter for Cipher {
    fn encrypt(&mut self, msg: OutboundPlainMessage<'_>, seq: u64) -> Result<OutboundOpaqueMessage, Error> {
        let total = self.encrypted_payload_len(msg.payload.len());
        let mut payload = PrefixedPayload::with_capacity(total);
        payload.extend_from_chunks(&msg.payload);
        let (typ, version) = if self.tls13 {
            payload.extend_from_slice(&msg.typ.to_array());
            (ContentType::ApplicationData, ProtocolVersion::TLSv1_2)
        } else {
            (msg.typ, msg.version)
        };
        let (aad, aad_len) = self.aad(seq, msg.typ, msg.version, total);
        let nonce = Nonce::new(&self.iv, seq).0;
        let tag = self
            .aead
            .encrypt_in_place_detached(&nonce.into(), &aad[..aad_len], payload.as_mut())
            .map_err(|_| Error::EncryptError)?;
        payload.extend_from_slice(&tag);
        Ok(OutboundOpaqueMessage::new(typ, version, payload))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len + usize::from(self.tls13) + TAG_LEN
    }
}

impl MessageDecrypter for Cipher {
    fn decrypt<'a>(&mut self, mut msg: InboundOpaqueMessage<'a>, seq: u64) -> Result<InboundPlainMessage<'a>, Error> {
        let len = msg.payload.len();
        if len < TAG_LEN {
            return Err(Error::DecryptError);
        }
        let (aad, aad_len) = self.aad(seq, msg.typ, msg.version, len);
        let nonce = Nonce::new(&self.iv, seq).0;
        let (text, tag) = msg.payload.split_at_mut(len - TAG_LEN);
        let tag = Tag::clone_from_slice(tag);
        self.aead
            .decrypt_in_place_detached(&nonce.into(), &aad[..aad_len], text, &tag)
            .map_err(|_| Error::DecryptError)?;
        msg.payload.truncate(len - TAG_LEN);
        if self.tls13 { msg.into_tls13_unpadded_message() } else { Ok(msg.into_plain_message()) }
    }
}

impl Tls13AeadAlgorithm for ChaCha {
    fn encrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageEncrypter> {
        Cipher::boxed(&key, iv, true)
    }

    fn decrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageDecrypter> {
        Cipher::boxed(&key, iv, true)
    }

    fn key_len(&self) -> usize {
        32
    }

    fn extract_keys(&self, key: AeadKey, iv: Iv) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        Ok(ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv })
    }
}

impl Tls12AeadAlgorithm for ChaCha {
    fn encrypter(&self, key: AeadKey, iv: &[u8], _explicit: &[u8]) -> Box<dyn MessageEncrypter> {
        Cipher::boxed(&key, Iv::copy(iv), false)
    }

    fn decrypter(&self, key: AeadKey, iv: &[u8]) -> Box<dyn MessageDecrypter> {
        Cipher::boxed(&key, Iv::copy(iv), false)
    }

    fn key_block_shape(&self) -> KeyBlockShape {
        KeyBlockShape { enc_key_len: 32, fixed_iv_len: 12, explicit_nonce_len: 0 }
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: &[u8],
        _explicit: &[u8],
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        Ok(ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv: Iv::copy(iv) })
    }
}
