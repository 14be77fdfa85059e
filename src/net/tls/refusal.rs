//! The causes of a failed handshake that rustls reports only as a bare alert or "bad signature",
//! found out from what the handshake showed (how far it got, the server's certificate), so that
//! the failure can name them.

use rustls::pki_types::CertificateDer;
use std::fmt;

/// A handshake the gate ended, or the server ended, for a reason found out here.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The server answered the gate's first message with a handshake_failure alert.
    NothingInCommon,
    /// The server's certificate has a key the gate cannot check a handshake signature with.
    LeafKey(Key),
}

impl std::error::Error for Refusal {}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Said in full by `explain`; this is for logs of the error value itself.
        f.write_str("TLS handshake refused")
    }
}

impl Refusal {
    /// The failure, said for `host`.
    pub(crate) fn explain(&self, host: &str) -> String {
        match self {
            Refusal::NothingInCommon => format!(
                "{host} refused the TLS handshake at the gate's first message (handshake_failure): it accepts none of \
                 what the gate offers ({}). Not supported: servers that accept only CBC suites (TLS 1.2) or \
                 only P-521 or post-quantum key exchange, and certificates with a P-521 key (over TLS 1.2) or an \
                 Ed448 key",
                super::algorithms::OFFERED
            ),
            Refusal::LeafKey(Key::Rsa(bits)) => format!(
                "server certificate of {host} has an RSA key of {bits} bits, and the server signs with RSA-PSS (as \
                 TLS 1.3 requires), which this build's crypto library (ring) verifies only from 2048 bits; reissue \
                 the certificate with a key of 2048 bits or more"
            ),
            Refusal::LeafKey(key) => format!(
                "server certificate of {host} has {key}, which this build cannot verify: its crypto library (ring) \
                 checks RSA, ECDSA P-256/P-384 and Ed25519 keys only; reissue the certificate with one of those"
            ),
        }
    }
}

/// A certificate's public key, as far as the gate tells them apart.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// RSA, with the modulus's size in bits.
    Rsa(usize),
    EcdsaP521,
    Other,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Rsa(bits) => write!(f, "an RSA key of {bits} bits"),
            Key::EcdsaP521 => f.write_str("an ECDSA P-521 key"),
            Key::Other => f.write_str("another key"),
        }
    }
}

const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const SECP521R1: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x23];

/// The key of a certificate, read from its SubjectPublicKeyInfo; `None` if it cannot be parsed.
pub(crate) fn key_of(cert: &CertificateDer<'_>) -> Option<Key> {
    let cert = webpki::EndEntityCert::try_from(cert).ok()?;
    let spki = cert.subject_public_key_info();
    let (_, spki, _) = tlv(spki.as_ref())?;
    let (_, algorithm, rest) = tlv(spki)?;
    let (_, oid, params) = tlv(algorithm)?;
    if oid == RSA_ENCRYPTION {
        let (_, bits, _) = tlv(rest)?;
        let (_, rsa_key, _) = tlv(bits.get(1..)?)?;
        let (_, modulus, _) = tlv(rsa_key)?;
        let leading_zeros = modulus.iter().take_while(|b| **b == 0).count();
        let modulus = &modulus[leading_zeros..];
        let first = *modulus.first()?;
        return Some(Key::Rsa(modulus.len() * 8 - first.leading_zeros() as usize));
    }
    Some(if tlv(params).is_some_and(|(_, curve, _)| curve == SECP521R1) { Key::EcdsaP521 } else { Key::Other })
}

/// One DER element: its tag, its contents and what follows.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = match first {
        0..=0x7f => (usize::from(first), rest),
        0x81..=0x84 => {
            let n = usize::from(first - 0x80);
            let (bytes, rest) = (rest.get(..n)?, rest.get(n..)?);
            (bytes.iter().fold(0usize, |acc, b| acc << 8 | usize::from(*b)), rest)
        }
        _ => return None,
    };
    Some((tag, rest.get(..len)?, rest.get(len..)?))
}
