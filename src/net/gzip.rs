//! A gzip body (RFC 1952) decoded as Go's transport decodes it: Go asks for gzip itself and hands
//! the caller the decoded bytes (`compress/gzip`, multistream: members may follow each other;
//! each member's CRC-32 and length are checked; anything after the last member that is not
//! another member is an error). The decoded size is bounded: a small bomb must stop at the
//! limit, with a failure that names it, not fill the memory.

use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};

/// Why a gzip body could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum GzipProblem {
    /// The decoded body would pass `limit` bytes.
    TooLarge { limit: usize },
    /// Not gzip, or damaged; the words say where.
    Invalid(&'static str),
}

/// The decoded body of `input`, one or more gzip members, at most `limit` bytes.
pub(crate) fn decode(mut input: &[u8], limit: usize) -> Result<Vec<u8>, GzipProblem> {
    let mut out = Vec::new();
    // An empty body decodes to nothing (Go's reader reports the end at once).
    while !input.is_empty() {
        let start = out.len();
        let deflated = header_len(input)?;
        input = &input[deflated..];
        let used = inflate(input, &mut out, limit)?;
        input = &input[used..];
        let [c0, c1, c2, c3, s0, s1, s2, s3, ..] = *input else {
            return Err(GzipProblem::Invalid("the gzip trailer is cut short"));
        };
        if u32::from_le_bytes([c0, c1, c2, c3]) != crc32(&out[start..]) {
            return Err(GzipProblem::Invalid("the gzip checksum does not match the data"));
        }
        // ISIZE is the member's length modulo 2^32: the truncation is the format's.
        #[allow(clippy::cast_possible_truncation)]
        let size = (out.len() - start) as u32;
        if u32::from_le_bytes([s0, s1, s2, s3]) != size {
            return Err(GzipProblem::Invalid("the gzip length does not match the data"));
        }
        input = &input[8..];
    }
    Ok(out)
}

/// The length of a member's header (RFC 1952 §2.3), checked as Go checks it.
fn header_len(input: &[u8]) -> Result<usize, GzipProblem> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let bad = GzipProblem::Invalid("the body is not gzip (bad gzip header)");
    let &[0x1f, 0x8b, 8, flags, _, _, _, _, _, _, ..] = input else {
        return Err(bad);
    };
    if flags & 0xe0 != 0 {
        return Err(bad);
    }
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len = input.get(at..at + 2).ok_or(GzipProblem::Invalid("the gzip header is cut short"))?;
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = input.get(at..).unwrap_or_default();
            at += 1 + rest.iter().position(|&b| b == 0).ok_or(GzipProblem::Invalid("the gzip header is cut short"))?;
        }
    }
    if flags & FHCRC != 0 {
        let sum = input.get(at..at + 2).ok_or(GzipProblem::Invalid("the gzip header is cut short"))?;
        #[allow(clippy::cast_possible_truncation)]
        let expected = crc32(&input[..at]) as u16;
        if u16::from_le_bytes([sum[0], sum[1]]) != expected {
            return Err(GzipProblem::Invalid("the gzip header checksum does not match"));
        }
        at += 2;
    }
    if at > input.len() {
        return Err(GzipProblem::Invalid("the gzip header is cut short"));
    }
    Ok(at)
}

/// Inflates one raw deflate stream from the start of `input`, appending to `out` (which must
/// stay within `limit`); returns how many input bytes the stream took.
fn inflate(input: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<usize, GzipProblem> {
    let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let mut state = Box::<DecompressorOxide>::default();
    let mut out_pos = out.len();
    let mut in_pos = 0;
    loop {
        if out.len() == out_pos {
            if out.len() >= limit {
                return Err(GzipProblem::TooLarge { limit });
            }
            // Grow by doubling from a small start: a normal document never costs more.
            let grown = (out.len().max(4096) * 2).min(limit);
            out.resize(grown, 0);
        }
        let (status, used, written) = decompress(&mut state, &input[in_pos..], out, out_pos, flags);
        in_pos += used;
        out_pos += written;
        match status {
            TINFLStatus::Done => {
                out.truncate(out_pos);
                return Ok(in_pos);
            }
            TINFLStatus::HasMoreOutput => {}
            TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
                out.truncate(out_pos);
                return Err(GzipProblem::Invalid("the gzip data is cut short"));
            }
            _ => {
                out.truncate(out_pos);
                return Err(GzipProblem::Invalid("the gzip data is corrupt"));
            }
        }
    }
}

/// CRC-32 (IEEE, reflected), as gzip's trailer holds it.
fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    !data.iter().fold(!0u32, |c, &b| TABLE[usize::from((c as u8) ^ b)] ^ (c >> 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `printf '{"a":1}' | gzip -n`
    const MEMBER: &[u8] = &[
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xab, 0x56, 0x4a, 0x54, 0xb2, 0x32, 0xac, 0x05,
        0x00, 0xaf, 0xac, 0x1b, 0x56, 0x07, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn one_member_and_several_decode_and_damage_fails() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926, "the standard check value");
        assert_eq!(decode(MEMBER, 1024).unwrap(), br#"{"a":1}"#);
        assert_eq!(decode(&[MEMBER, MEMBER].concat(), 1024).unwrap(), br#"{"a":1}{"a":1}"#);
        assert_eq!(decode(b"", 1024).unwrap(), b"");
        let invalid = |input: &[u8]| matches!(decode(input, 1024), Err(GzipProblem::Invalid(_)));
        assert!(invalid(br#"{"a":1}"#), "not gzip");
        assert!(invalid(&MEMBER[..MEMBER.len() - 1]), "trailer cut");
        assert!(invalid(&MEMBER[..15]), "data cut");
        assert!(invalid(&[MEMBER, b"x"].concat()), "garbage after the member");
        let mut bad_crc = MEMBER.to_vec();
        bad_crc[19] ^= 1;
        assert!(invalid(&bad_crc));
    }

    #[test]
    fn a_bomb_stops_at_the_limit() {
        // The member repeated: the decoded total passes the limit mid-member. (The integration
        // tests send a real bomb, 16 MiB of zeros in a few KiB.)
        let many = MEMBER.repeat(100);
        assert_eq!(decode(&many, 699), Err(GzipProblem::TooLarge { limit: 699 }));
        assert_eq!(decode(&many, 700).unwrap().len(), 700);
    }
}
