//! The little of a certificate's DER that webpki does not give: a name's parts (for
//! `subject_hash`) and the validity period of a trusted certificate, which Go checks for a root
//! as for any certificate of a chain and webpki does not (a trust anchor has no dates).

/// One DER element: its tag, its content and what follows it (single-byte tags, lengths of up to
/// three bytes: a name is far shorter).
pub(super) fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if !(1..=3).contains(&n) || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0, |len, b| len << 8 | usize::from(*b));
        rest = &rest[n..];
        len
    };
    (tag & 0x1f != 0x1f && rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// A certificate's validity period, in seconds since the epoch: not before, not after.
pub(crate) fn validity(cert: &[u8]) -> Option<(u64, u64)> {
    let (0x30, cert, _) = tlv(cert)? else { return None };
    let (0x30, mut tbs, _) = tlv(cert)? else { return None };
    if tbs.first() == Some(&0xa0) {
        tbs = tlv(tbs)?.2;
    }
    // The serial number, the signature algorithm and the issuer, then the validity.
    for _ in 0..3 {
        tbs = tlv(tbs)?.2;
    }
    let (0x30, times, _) = tlv(tbs)? else { return None };
    let (tag, before, rest) = tlv(times)?;
    let (tag2, after, _) = tlv(rest)?;
    Some((time(tag, before)?, time(tag2, after)?))
}

/// A UTCTime (`YYMMDDHHMMSSZ`, years 1950 to 2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`), as DER
/// writes them, in seconds since the epoch.
fn time(tag: u8, text: &[u8]) -> Option<u64> {
    let (year, rest) = match (tag, text.len()) {
        (0x17, 13) => {
            let yy = number(&text[..2])?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &text[2..])
        }
        (0x18, 15) => (number(&text[..4])?, &text[4..]),
        _ => return None,
    };
    if rest[10] != b'Z' {
        return None;
    }
    let [month, day, hour, minute, second] = [0, 2, 4, 6, 8].map(|i| number(&rest[i..i + 2]));
    let (month, day) = (month?, day?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let (era, yoe) = (y / 400, y % 400);
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(days.checked_sub(719_468)? * 86_400 + hour? * 3_600 + minute? * 60 + second?)
}

fn number(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0, |n, d| d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_as_der_writes_them() {
        assert_eq!(time(0x17, b"700101000000Z"), Some(0));
        assert_eq!(time(0x17, b"000101000000Z"), Some(946_684_800));
        assert_eq!(time(0x18, b"20380119031408Z"), Some(2_147_483_648));
        assert_eq!(time(0x18, b"20240229235959Z"), Some(1_709_251_199));
        assert_eq!(time(0x17, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(time(0x17, b"000101000000+"), None);
        assert_eq!(time(0x18, b"20241301000000Z"), None);
    }

    #[test]
    fn a_certificates_validity_is_found() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["h.example".to_string()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2051, 1, 1);
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(validity(cert.der()), Some((946_684_800, 2_556_144_000)));
        assert_eq!(validity(b"\x30\x00"), None);
    }
}
