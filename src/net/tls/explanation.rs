//! A failed TLS handshake said so that the reader knows what to change, in words: never a
//! library's debug text (`Other(OtherError(CaUsedAsEndEntity))`, `BadSignature`, `received fatal
//! alert: ProtocolVersion`), which names a type, not a cause. What rustls reports only as a bare
//! alert or error, `refusal` finds out and says.

use super::refusal::date_secs;
use super::{Refusal, algorithms};
use rustls::{AlertDescription, CertificateError};

/// A TLS failure, said so that the reader knows what to change.
pub(crate) fn explain(host: &str, error: &rustls::Error) -> String {
    use rustls::Error as E;
    if let E::Other(other) | E::InvalidCertificate(CertificateError::Other(other)) = error
        && let Some(refusal) = other.0.downcast_ref::<Refusal>()
    {
        return refusal.explain(host);
    }
    match error {
        E::InvalidCertificate(cert) => explain_certificate(host, cert),
        E::AlertReceived(alert) => received_alert(host, *alert, error),
        E::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => format!(
            "{host} did not answer in TLS (its reply is not a TLS record): if this port serves plain HTTP, use an \
             http:// URL; if not, check the port"
        ),
        _ => format!("TLS handshake with {host} failed: {}", words(error)),
    }
}

/// The server asked for a client certificate, which the gate does not have.
pub(crate) fn client_certificate_required(host: &str) -> String {
    format!(
        "{host} requires a client certificate (mutual TLS), which the gate does not send; serve the discovery \
         document without client authentication, or point --discovery-url at an endpoint that does"
    )
}

/// The alert a server ended the handshake with (`error`), and what it usually means.
fn received_alert(host: &str, alert: AlertDescription, error: &rustls::Error) -> String {
    let hint = match alert {
        AlertDescription::CertificateRequired => return client_certificate_required(host),
        AlertDescription::HandshakeFailure => {
            return format!(
                "{host} broke off the TLS handshake (handshake_failure) after its hello; the gate offers {}",
                algorithms::OFFERED
            );
        }
        AlertDescription::ProtocolVersion => {
            "it speaks none of the TLS versions the gate offers, 1.2 and 1.3 (as Go's client): a server that \
             speaks only TLS 1.0 or 1.1 must be upgraded"
        }
        AlertDescription::UnrecognisedName => "it has no certificate for that name (SNI): use a name it serves",
        // internal_error and the rest: the server knows why.
        _ => "see its logs for why",
    };
    format!("{host} ended the TLS handshake ({}): {hint}", words(error))
}

fn explain_certificate(host: &str, cert: &CertificateError) -> String {
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
        CertificateError::BadSignature => format!(
            "certificate of {host} names a trusted CA as its issuer, but that CA's key does not verify it: the CA \
             file holds a CA of that name with another key (rotated or re-created?), not the one that signed this \
             certificate; give --ca-file the CA that issued it"
        ),
        CertificateError::UnknownIssuer => format!(
            "certificate for {host} is signed by an unknown CA (or is self-signed); trust that CA with --ca-file. \
             An ingress may still be showing its default certificate while the real one is issued"
        ),
        CertificateError::ExpiredContext { not_after, .. } => format!(
            "certificate for {host} has expired (not valid after {}); renew it, or set this machine's clock right",
            date(*not_after)
        ),
        CertificateError::NotValidYetContext { not_before, .. } => format!(
            "certificate for {host} is not valid yet (not before {}); a clock is wrong, this machine's or the issuer's",
            date(*not_before)
        ),
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => format!(
            "certificate of {host} is not for TLS servers: its extended key usage lacks server authentication; \
             reissue it with extendedKeyUsage=serverAuth"
        ),
        CertificateError::UnsupportedSignatureAlgorithmContext { signature_algorithm_id, .. } => {
            unsupported_algorithm(host, signature_algorithm_id)
        }
        CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext {
            signature_algorithm_id,
            public_key_algorithm_id,
        } => unsupported_algorithm(host, &[signature_algorithm_id.as_slice(), public_key_algorithm_id].concat()),
        // The rest, webpki's own errors among them (an unknown critical extension, …), by name.
        _ => format!("certificate for {host} rejected: {}", words(cert)),
    }
}

/// A library's error text with its debug names said as words: `UnsupportedCriticalExtension`
/// becomes `unsupported critical extension`, `Unknown(200)` `unknown 200`, and a struct's
/// fields go. Everything is lower-cased: this text is for names, not for sentences.
fn words(error: &dyn std::fmt::Display) -> String {
    let text = error.to_string();
    // rustls's wrapper of webpki's errors says nothing.
    let text = text.strip_prefix("Other(OtherError(").unwrap_or(&text);
    let mut out = Vec::with_capacity(text.len() + 8);
    let mut after_lower = false;
    // Bytes: only ASCII ones change, so the text stays UTF-8.
    for &b in text.as_bytes() {
        match b {
            b'{' => break,
            b'(' => out.push(b' '),
            b')' => {}
            _ => {
                if b.is_ascii_uppercase() && after_lower {
                    out.push(b' ');
                }
                out.push(b.to_ascii_lowercase());
            }
        }
        after_lower = b.is_ascii_lowercase() || b.is_ascii_digit();
    }
    while out.last() == Some(&b' ') {
        out.pop();
    }
    String::from_utf8(out).unwrap_or_default()
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

/// A certificate's date as HTTP writes one (`Mon, 01 Jan 2001 00:00:00 GMT`): the leaf's, or the
/// trusted CA's whose dates decided (`trusted::Anchors::verify_at`), so the operator can tell which.
fn date(t: rustls::pki_types::UnixTime) -> String {
    date_secs(t.as_secs())
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

    #[test]
    fn debug_names_are_said_as_words() {
        assert_eq!(words(&"Other(OtherError(UnsupportedCriticalExtension))"), "unsupported critical extension");
        assert_eq!(words(&"Unknown(200)"), "unknown 200");
        assert_eq!(words(&"Ünknown(é)"), "Ünknown é");
        assert_eq!(words(&"received fatal alert: UnknownCA"), "received fatal alert: unknown ca");
        assert_eq!(words(&"InappropriateMessage { expect_types: [Handshake] }"), "inappropriate message");
    }

    #[test]
    fn every_alert_is_said_in_words() {
        let camel = |w: &str| w.as_bytes().windows(2).any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
        for code in 0..=u8::MAX {
            let said = explain("h", &rustls::Error::AlertReceived(AlertDescription::from(code)));
            let debug = said.split(|c: char| !c.is_ascii_alphanumeric()).find(|w| camel(w) && *w != "ChaCha20");
            assert_eq!(debug, None, "{code}: {said}");
        }
        let said = explain("h", &rustls::Error::AlertReceived(AlertDescription::ProtocolVersion));
        assert!(said.starts_with("h ended the TLS handshake (received fatal alert: protocol version): "), "{said}");
    }
}
