//! The name under which a hashed certificate directory files a CA: OpenSSL's `X509_NAME_hash`,
//! which `c_rehash`, `openssl rehash` and Debian's `update-ca-certificates` name their links
//! after (`<hash>.0`, `<hash>.1`, … for CAs of one subject). It is the first four bytes, read
//! little-endian, of the SHA-1 of the name's canonical form: every string value in UTF-8, ASCII
//! letters in lower case, leading and trailing spaces dropped and each run of spaces made one,
//! each RDN encoded as a SET again, and no outer SEQUENCE.
//!
//! Only a shortcut: a name this gets wrong (or one OpenSSL would not hash) finds no link, and the
//! store is then read whole, as Go reads it.

use super::der::tlv;

/// The hash of a name given as its DER content (the RDNs, without the outer SEQUENCE's tag and
/// length, as webpki gives a certificate's issuer), or `None` if it is not such DER.
pub(crate) fn subject_hash(name: &[u8]) -> Option<u32> {
    let mut canon = Vec::with_capacity(name.len());
    let mut rdns = name;
    while !rdns.is_empty() {
        let (0x31, mut atvs, rest) = tlv(rdns)? else { return None };
        rdns = rest;
        let mut entries = Vec::new();
        while !atvs.is_empty() {
            let (0x30, atv, rest) = tlv(atvs)? else { return None };
            atvs = rest;
            let (0x06, oid, value) = tlv(atv)? else { return None };
            let (tag, text, end) = tlv(value)?;
            if !end.is_empty() {
                return None;
            }
            let mut entry = Vec::with_capacity(atv.len() + 4);
            put(&mut entry, 0x06, oid);
            match utf8(tag, text) {
                Some(text) => put(&mut entry, 0x0c, &canonical(&text?)),
                // Not a string type OpenSSL converts: its encoding as it is.
                None => entry.extend_from_slice(value),
            }
            let mut wrapped = Vec::with_capacity(entry.len() + 4);
            put(&mut wrapped, 0x30, &entry);
            entries.push(wrapped);
        }
        // DER orders a SET's members by their encodings.
        entries.sort();
        put(&mut canon, 0x31, &entries.concat());
    }
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &canon);
    Some(u32::from_le_bytes(digest.as_ref().get(..4)?.try_into().ok()?))
}

fn put(out: &mut Vec<u8>, tag: u8, content: &[u8]) {
    out.push(tag);
    let len = content.len();
    match len {
        0..0x80 => out.push(len as u8),
        0x80..0x100 => out.extend([0x81, len as u8]),
        _ => out.extend([0x82, (len >> 8) as u8, len as u8]),
    }
    out.extend_from_slice(content);
}

/// A string value in UTF-8 as OpenSSL converts it (`ASN1_STRING_to_UTF8`): one byte a character
/// for the PrintableString, T61String, IA5String and VisibleString, two for BMPString, four for
/// UniversalString. `None` for a type it leaves as it is; `Some(None)` for one it cannot convert.
fn utf8(tag: u8, bytes: &[u8]) -> Option<Option<Vec<u8>>> {
    let chars = |width: usize| -> Option<Vec<u8>> {
        if !bytes.len().is_multiple_of(width) {
            return None;
        }
        let units = bytes.chunks(width).map(|c| c.iter().fold(0, |v, b| v << 8 | u32::from(*b)));
        units.map(char::from_u32).collect::<Option<String>>().map(String::into_bytes)
    };
    Some(match tag {
        0x0c => std::str::from_utf8(bytes).ok().map(|_| bytes.to_vec()),
        0x13 | 0x14 | 0x16 | 0x1a => chars(1),
        0x1e => chars(2),
        0x1c => chars(4),
        _ => return None,
    })
}

/// OpenSSL's canonical form of a value in UTF-8: trimmed, runs of spaces made one, ASCII letters
/// in lower case, other bytes as they are.
fn canonical(text: &[u8]) -> Vec<u8> {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = text.iter().position(|b| !space(b)).unwrap_or(text.len());
    let end = text.iter().rposition(|b| !space(b)).map_or(start, |i| i + 1);
    let mut out = Vec::with_capacity(end - start);
    for &b in &text[start..end] {
        if !space(&b) {
            out.push(b.to_ascii_lowercase());
        } else if out.last() != Some(&b' ') {
            out.push(b' ');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes OpenSSL 3 gives (`openssl x509 -hash`; the names of Debian's links in
    /// `/etc/ssl/certs`) for roots whose subjects mix PrintableString, UTF8String (Hungarian accents), IA5String (an
    /// e-mail address) and upper and lower case.
    #[test]
    fn names_hash_as_openssl_hashes_them() {
        for (name, hash) in KNOWN {
            let root = webpki_roots::TLS_SERVER_ROOTS.iter().find(|r| contains(&r.subject, name.as_bytes()));
            let root = root.unwrap_or_else(|| panic!("{name} is not among Mozilla's roots"));
            assert_eq!(subject_hash(&root.subject).map(|h| format!("{h:08x}")).as_deref(), Some(*hash), "{name}");
        }
    }

    const KNOWN: &[(&str, &str)] = &[
        ("ISRG Root X1", "4042bcee"),
        ("NetLock Arany", "988a38cb"),
        ("e-Szigno Root CA 2009", "8160b96c"),
        ("GlobalSign Root R46", "002c0b4f"),
        ("USERTrust RSA Certification Authority", "fc5a8f99"),
        ("DigiCert Global Root G2", "607986c7"),
    ];

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn values_are_made_canonical_as_openssl_makes_them() {
        assert_eq!(canonical(b"  Foo \t\n Bar  "), b"foo bar");
        assert_eq!(canonical(b" \x0b "), b"");
        assert_eq!(canonical("Ünï CODE".as_bytes()), "Ünï code".as_bytes());
        assert_eq!(utf8(0x14, b"\xe9"), Some(Some("é".as_bytes().to_vec())));
        assert_eq!(utf8(0x1e, b"\x00A\x00b"), Some(Some(b"Ab".to_vec())));
        assert_eq!(utf8(0x1e, b"\xd8\x00"), Some(None), "a lone surrogate");
        assert_eq!(utf8(0x12, b"123"), None, "NumericString is left as it is");
        assert_eq!(subject_hash(b"\x31\x03\x30\x01"), None);
        assert_eq!(subject_hash(b""), Some(u32::from_le_bytes([0xda, 0x39, 0xa3, 0xee])), "SHA-1 of nothing");
    }
}
