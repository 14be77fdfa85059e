//! The causes of a failed handshake that rustls reports only as a bare alert or "bad signature",
//! found out from what the handshake showed (how far it got, the server's certificate), so that
//! the failure can name them.

use rustls::pki_types::CertificateDer;
use std::fmt;

/// A handshake the gate ended, or the server ended, for a reason found out here.
pub(crate) enum Refusal {
    /// The server answered the gate's first message with a handshake_failure alert.
    NothingInCommon,
    /// The server's certificate has a key the gate cannot check a handshake signature with.
    LeafKey(Key),
    /// The server's handshake signature does not verify with its certificate's key.
    HandshakeSignature,
    /// The server's certificate is marked as a CA (`CA:TRUE`) and is not itself trusted;
    /// `self_signed` when it names itself as its issuer.
    CaCertificate { self_signed: bool },
    /// No trusted CA signs the server's certificate: its issuer's name, to say which CA is
    /// missing, and whether it is self-signed.
    UnknownIssuer { issuer: Option<String>, self_signed: bool },
    /// The trusted CA that would verify the chain is outside its validity period: `expired`, or
    /// not valid yet, `at` the date passed (or to come), in seconds since the epoch.
    TrustedCaDates { expired: bool, at: u64 },
}

impl std::error::Error for Refusal {}

/// As `Display`: a derived `Debug` is code for a text no one reads.
impl fmt::Debug for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

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
            Refusal::HandshakeSignature => format!(
                "{host} signed the TLS handshake with a key that is not its certificate's: the server holds a \
                 certificate and a private key that do not belong together (one renewed without the other?); \
                 deploy the matching pair"
            ),
            Refusal::CaCertificate { self_signed } => format!(
                "certificate of {host} is {}marked as a CA (CA:TRUE) and not itself trusted: give this certificate \
                 to --ca-file, which trusts it as Go does (its name, dates and usage still checked){}",
                if *self_signed { "self-signed (as `openssl req -x509` makes it) and " } else { "" },
                if *self_signed {
                    ""
                } else {
                    ", or reissue it with CA:FALSE: Go also accepts it under its CA, this gate's verifier (webpki) \
                     does not"
                }
            ),
            Refusal::UnknownIssuer { issuer, self_signed } => {
                let named = issuer.as_deref().map(|i| format!(" \"{}\"", crate::screen_text::quoted(i, 200)));
                let named = named.unwrap_or_default();
                let whose = if *self_signed { format!(" (it is self-signed, as{named})") } else { named };
                format!(
                    "certificate for {host} is signed by an unknown CA{whose}; trust that CA with --ca-file{}. An \
                     ingress may still be showing its default certificate while the real one is issued",
                    if *self_signed { ", or give this certificate itself" } else { "" }
                )
            }
            Refusal::TrustedCaDates { expired: true, at } => format!(
                "the trusted CA that issued the certificate for {host} has expired (not valid after {}); the \
                 certificate itself may be fine, but Go trusts no CA outside its dates: give --ca-file the CA \
                 renewed, or set this machine's clock right",
                date_secs(*at)
            ),
            Refusal::TrustedCaDates { expired: false, at } => format!(
                "the trusted CA that issued the certificate for {host} is not valid yet (not before {}); a clock \
                 is wrong, this machine's or the CA's",
                date_secs(*at)
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

const EXTENDED_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
const SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
const ANY_USAGE: &[u8] = &[0x55, 0x1d, 0x25, 0x00];

/// What the gate needs to know of a CA certificate a server shows as its own, read from DER that
/// webpki has parsed: whether Go lets it serve TLS (it has no extended key usage, or one that
/// lists serverAuth or any usage: `checkChainForKeyUsage`), and whether it is self-signed (it
/// names itself as its issuer).
pub(crate) fn read_ca_certificate(cert: &[u8]) -> (bool, bool) {
    let (serves_tls, self_signed, _) = read_certificate(cert);
    (serves_tls, self_signed)
}

/// The name a certificate's issuer goes by (its common name, else its organisation), and whether
/// it is self-signed: to say which CA a chain needs.
pub(crate) fn issuer_of(cert: &[u8]) -> (Option<String>, bool) {
    let (_, self_signed, issuer) = read_certificate(cert);
    let attribute = |wanted: &[u8]| {
        // Name: a SEQUENCE of SETs of SEQUENCE { type, value }.
        let mut sets = issuer?;
        while let Some((_, set, rest)) = tlv(sets) {
            sets = rest;
            let (_, pair, _) = tlv(set)?;
            let (_, oid, value) = tlv(pair)?;
            if oid == wanted {
                return Some(String::from_utf8_lossy(tlv(value)?.1).into_owned());
            }
        }
        None
    };
    (attribute(&[0x55, 0x04, 0x03]).or_else(|| attribute(&[0x55, 0x04, 0x0a])), self_signed)
}

/// Whether the certificate may serve TLS, whether it is self-signed, and its issuer's Name.
fn read_certificate(cert: &[u8]) -> (bool, bool, Option<&[u8]>) {
    // The TBSCertificate's fields: the version ([0]), then serial, signature algorithm, issuer,
    // validity, subject, key, and the extensions ([3]).
    let (mut serves_tls, mut issuer, mut n) = (true, None, 0);
    let mut self_signed = false;
    let mut fields = contents(contents(cert));
    while let Some((tag, field, rest)) = tlv(fields) {
        fields = rest;
        match (tag, n) {
            (0xa0, _) => continue,
            (0xa3, _) => serves_tls = usage_allows_tls(contents(field)),
            (_, 2) => issuer = Some(field),
            (_, 4) => self_signed = issuer == Some(field),
            _ => {}
        }
        n += 1;
    }
    (serves_tls, self_signed, issuer)
}

/// Whether these extensions allow serving TLS. Each holds its OID, whether it is critical, and
/// its value: for the extended key usage, a list of OIDs.
fn usage_allows_tls(mut extensions: &[u8]) -> bool {
    while let Some((_, extension, rest)) = tlv(extensions) {
        extensions = rest;
        let Some((_, EXTENDED_KEY_USAGE, mut value)) = tlv(extension) else { continue };
        while let Some((_, element, rest)) = tlv(value) {
            if rest.is_empty() {
                value = contents(element);
                break;
            }
            value = rest;
        }
        while let Some((_, oid, rest)) = tlv(value) {
            if oid == SERVER_AUTH || oid == ANY_USAGE {
                return true;
            }
            value = rest;
        }
        return false;
    }
    true
}

/// The contents of the DER element at the start of `input`, or nothing.
fn contents(input: &[u8]) -> &[u8] {
    tlv(input).map_or(&[], |(_, contents, _)| contents)
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

/// A date in seconds since the epoch, as certificate messages say it.
pub(super) fn date_secs(secs: u64) -> String {
    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, ExtendedKeyUsagePurpose as Usage, KeyPair};

    fn with_usages(usages: Vec<Usage>) -> Vec<u8> {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.extended_key_usages = usages;
        params.self_signed(&KeyPair::generate().unwrap()).unwrap().der().to_vec()
    }

    #[test]
    fn a_certificate_naming_itself_as_issuer_is_self_signed() {
        assert!(read_ca_certificate(&with_usages(vec![])).1);
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(vec![]).unwrap();
        ca.distinguished_name.push(rcgen::DnType::CommonName, "a CA");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let leaf = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        assert!(!read_ca_certificate(leaf.signed_by(&KeyPair::generate().unwrap(), &issuer).unwrap().der()).1);
    }

    /// As Go's `checkChainForKeyUsage` decides for a certificate that is its own chain.
    #[test]
    fn a_certificate_serves_tls_without_a_usage_or_with_server_auth_or_any() {
        let serves_tls = |der: &[u8]| read_ca_certificate(der).0;
        assert!(serves_tls(&with_usages(vec![])));
        assert!(serves_tls(&with_usages(vec![Usage::ClientAuth, Usage::ServerAuth])));
        assert!(serves_tls(&with_usages(vec![Usage::Any])));
        assert!(!serves_tls(&with_usages(vec![Usage::ClientAuth])));
        assert!(!serves_tls(&with_usages(vec![Usage::CodeSigning, Usage::EmailProtection])));
    }
}
