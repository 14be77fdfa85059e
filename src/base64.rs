//! Base64, standard alphabet, in the one place the gate needs it: encoded to find a secret a
//! server echoes (`secret_forms`) and to send proxy credentials (`Basic`), decoded to read PEM
//! blocks (`config::files`). Issue 37 found an encoder and a decoder in two modules.

/// Standard base64 without padding.
pub(crate) fn encode(bytes: &[u8]) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(bytes.len() * 4 / 3 + 3);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]);
        }
    }
    out
}

/// Standard base64 with padding: `Basic` credentials, as Go's `basicAuth` writes them.
pub(crate) fn encode_padded(bytes: &[u8]) -> String {
    let mut out = String::from_utf8(encode(bytes)).unwrap_or_default();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// Standard base64 with padding, whitespace ignored, as Go's `pem.Decode` reads a block's body. A
/// system store holds hundreds of certificates: this is a plain decoder (rustls's is constant-time,
/// as private keys need, and several times slower), for public data.
pub(crate) fn decode(text: &[u8]) -> Option<Vec<u8>> {
    /// Each byte's value, or SKIP (whitespace), PAD or BAD.
    const SKIP: u8 = 64;
    const PAD: u8 = 65;
    const BAD: u8 = 66;
    const TABLE: [u8; 256] = {
        let mut table = [BAD; 256];
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut i = 0;
        while i < 64 {
            table[alphabet[i] as usize] = i as u8;
            i += 1;
        }
        (table[b' ' as usize], table[b'\t' as usize], table[b'\r' as usize], table[b'\n' as usize]) =
            (SKIP, SKIP, SKIP, SKIP);
        table[b'=' as usize] = PAD;
        table
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits, mut digits, mut padding) = (0u32, 0u32, 0usize, 0usize);
    for &c in text {
        match TABLE[usize::from(c)] {
            SKIP => {}
            PAD => padding += 1,
            BAD => return None,
            _ if padding > 0 => return None,
            value => {
                (acc, bits, digits) = ((acc << 6 | u32::from(value)) & 0xffff, bits + 6, digits + 1);
                if bits >= 8 {
                    bits -= 8;
                    out.push((acc >> bits) as u8);
                }
            }
        }
    }
    (digits % 4 != 1 && padding == (4 - digits % 4) % 4).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_standard_with_padding() {
        assert_eq!(decode(b"TWFu"), Some(b"Man".to_vec()));
        assert_eq!(decode(b"TWE=\n"), Some(b"Ma".to_vec()));
        assert_eq!(decode(b"TQ=="), Some(b"M".to_vec()));
        assert_eq!(decode(b""), Some(Vec::new()));
        for bad in [&b"TWE"[..], b"TQ=", b"T===", b"TW=u", b"TWF-"] {
            assert_eq!(decode(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn encoded_with_and_without_padding() {
        assert_eq!((encode(b"Man"), encode(b"Ma"), encode(b"M")), (b"TWFu".to_vec(), b"TWE".to_vec(), b"TQ".to_vec()));
        assert_eq!(
            (encode_padded(b"Ma"), encode_padded(b"M"), encode_padded(b"")),
            ("TWE=".into(), "TQ==".into(), String::new())
        );
        assert_eq!(decode(encode_padded(b"any bytes \xff").as_bytes()), Some(b"any bytes \xff".to_vec()));
    }
}
