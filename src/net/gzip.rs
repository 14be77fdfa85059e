//! A gzip body (RFC 1952) decoded as Go's transport decodes it: Go asks for gzip itself and hands
//! the caller the decoded bytes (`compress/gzip`, multistream: members may follow each other;
//! each member's CRC-32 and length are checked; anything after the last member that is not
//! another member is an error). The decoded size is bounded: a small bomb must stop at the
//! limit, with a failure that names it, not fill the memory.

use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};
use std::io::{self, BufRead, BufReader, Read};

/// Why a gzip body could not be decoded.
#[derive(Debug)]
pub(crate) enum GzipProblem {
    /// The decoded body would pass `limit` bytes.
    TooLarge { limit: usize },
    /// Not gzip, or damaged; the words say where.
    Invalid(&'static str),
    /// Reading the body failed.
    Read(io::Error),
}

/// How much of the compressed body is held at a time: it is decoded as it arrives, so a body
/// that hardly compresses costs its decoded size, not twice that.
const INPUT_BUFFER: usize = 32 * 1024;

/// The decoded body of `input`, one or more gzip members, at most `limit` bytes, read as it
/// arrives.
pub(crate) fn decode(input: impl Read, limit: usize) -> Result<Vec<u8>, GzipProblem> {
    let mut input = BufReader::with_capacity(INPUT_BUFFER, input);
    let mut out = Vec::new();
    // An empty body decodes to nothing (Go's reader reports the end at once).
    while !input.fill_buf().map_err(GzipProblem::Read)?.is_empty() {
        let start = out.len();
        header(&mut input)?;
        inflate(&mut input, &mut out, limit)?;
        let mut trailer = [0; 8];
        if !fill(&mut input, &mut trailer)? {
            return Err(GzipProblem::Invalid("the gzip trailer is cut short"));
        }
        let [c0, c1, c2, c3, s0, s1, s2, s3] = trailer;
        if u32::from_le_bytes([c0, c1, c2, c3]) != crc32(0, &out[start..]) {
            return Err(GzipProblem::Invalid("the gzip checksum does not match the data"));
        }
        // ISIZE is the member's length modulo 2^32: the truncation is the format's.
        #[allow(clippy::cast_possible_truncation)]
        let size = (out.len() - start) as u32;
        if u32::from_le_bytes([s0, s1, s2, s3]) != size {
            return Err(GzipProblem::Invalid("the gzip length does not match the data"));
        }
    }
    Ok(out)
}

/// Fills `buf` from `input`; false when the input ends first.
fn fill(input: &mut impl Read, buf: &mut [u8]) -> Result<bool, GzipProblem> {
    let mut at = 0;
    while at < buf.len() {
        match input.read(&mut buf[at..]).map_err(GzipProblem::Read)? {
            0 => return Ok(false),
            n => at += n,
        }
    }
    Ok(true)
}

/// Reads a member's header (RFC 1952 §2.3), checked as Go checks it.
fn header(input: &mut impl Read) -> Result<(), GzipProblem> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let bad = GzipProblem::Invalid("the body is not gzip (bad gzip header)");
    let cut = || GzipProblem::Invalid("the gzip header is cut short");
    let mut fixed = [0; 10];
    let whole = fill(input, &mut fixed)?;
    let (true, [0x1f, 0x8b, 8, flags, ..]) = (whole, fixed) else {
        return Err(bad);
    };
    if flags & 0xe0 != 0 {
        return Err(bad);
    }
    let mut crc = crc32(0, &fixed);
    // The header's next `n` bytes, or through the next zero byte when `n` is `None`.
    let mut take = |n: Option<usize>, crc: &mut u32| -> Result<Vec<u8>, GzipProblem> {
        let mut bytes = Vec::new();
        let mut byte = [0];
        while n.is_none_or(|n| bytes.len() < n) {
            if !fill(input, &mut byte)? {
                return Err(cut());
            }
            *crc = crc32(*crc, &byte);
            bytes.push(byte[0]);
            if n.is_none() && byte[0] == 0 {
                break;
            }
        }
        Ok(bytes)
    };
    if flags & FEXTRA != 0 {
        let len = take(Some(2), &mut crc)?;
        take(Some(usize::from(u16::from_le_bytes([len[0], len[1]]))), &mut crc)?;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            take(None, &mut crc)?;
        }
    }
    if flags & FHCRC != 0 {
        let sum = take(Some(2), &mut 0)?;
        #[allow(clippy::cast_possible_truncation)]
        let expected = crc as u16;
        if u16::from_le_bytes([sum[0], sum[1]]) != expected {
            return Err(GzipProblem::Invalid("the gzip header checksum does not match"));
        }
    }
    Ok(())
}

/// Inflates one raw deflate stream from `input`, appending to `out` (which must stay within
/// `limit`), as the input arrives.
fn inflate(input: &mut impl BufRead, out: &mut Vec<u8>, limit: usize) -> Result<(), GzipProblem> {
    let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let mut state = Box::<DecompressorOxide>::default();
    let mut out_pos = out.len();
    loop {
        if out.len() == out_pos {
            if out.len() >= limit {
                return Err(GzipProblem::TooLarge { limit });
            }
            // Grow by doubling from a small start: a normal document never costs more.
            let grown = (out.len().max(4096) * 2).min(limit);
            out.resize(grown, 0);
        }
        let available = input.fill_buf().map_err(GzipProblem::Read)?;
        let ended = available.is_empty();
        let more = if ended { 0 } else { inflate_flags::TINFL_FLAG_HAS_MORE_INPUT };
        let (status, used, written) = decompress(&mut state, available, out, out_pos, flags | more);
        input.consume(used);
        out_pos += written;
        match status {
            TINFLStatus::Done => {
                out.truncate(out_pos);
                return Ok(());
            }
            TINFLStatus::HasMoreOutput => {}
            TINFLStatus::NeedsMoreInput if !ended => {}
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

/// CRC-32 (IEEE, reflected), as gzip's trailer holds it: of `data` after data whose CRC was
/// `crc` (0 for none).
fn crc32(crc: u32, data: &[u8]) -> u32 {
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
    !data.iter().fold(!crc, |c, &b| TABLE[usize::from((c as u8) ^ b)] ^ (c >> 8))
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
        assert_eq!(crc32(0, b"123456789"), 0xcbf4_3926, "the standard check value");
        assert_eq!(crc32(crc32(0, b"1234"), b"56789"), 0xcbf4_3926, "continued");
        assert_eq!(decode(MEMBER, 1024).unwrap(), br#"{"a":1}"#);
        assert_eq!(decode(&[MEMBER, MEMBER].concat()[..], 1024).unwrap(), br#"{"a":1}{"a":1}"#);
        assert_eq!(decode(&b""[..], 1024).unwrap(), b"");
        let invalid = |input: &[u8]| matches!(decode(input, 1024), Err(GzipProblem::Invalid(_)));
        let bytewise = |input: &[u8]| decode(Bytewise(input), 1024).unwrap();
        assert_eq!(bytewise(&[MEMBER, MEMBER].concat()), br#"{"a":1}{"a":1}"#, "read as it arrives, a byte a time");
        assert!(invalid(br#"{"a":1}"#), "not gzip");
        assert!(invalid(&MEMBER[..MEMBER.len() - 1]), "trailer cut");
        assert!(invalid(&MEMBER[..15]), "data cut");
        assert!(invalid(&[MEMBER, b"x"].concat()), "garbage after the member");
        let mut bad_crc = MEMBER.to_vec();
        bad_crc[19] ^= 1;
        assert!(invalid(&bad_crc));
    }

    /// A body that arrives a byte at a time.
    struct Bytewise<'a>(&'a [u8]);

    impl Read for Bytewise<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some((&first, rest)) = self.0.split_first() else { return Ok(0) };
            buf[0] = first;
            self.0 = rest;
            Ok(1)
        }
    }

    /// A header with every optional field, its CRC checked, and a read that fails: its error.
    #[test]
    fn headers_with_every_field_and_failed_reads() {
        let mut head = vec![0x1f, 0x8b, 8, 2 | 4 | 8 | 16, 0, 0, 0, 0, 0, 3, 3, 0, b'x', b'y', b'z', b'n', 0, b'c', 0];
        let sum = crc32(0, &head);
        head.extend((sum as u16).to_le_bytes());
        let member = [&head[..], &MEMBER[10..]].concat();
        assert_eq!(decode(Bytewise(&member), 1024).unwrap(), br#"{"a":1}"#);
        let mut bad = member.clone();
        bad[12] = b'w';
        assert!(matches!(decode(&bad[..], 1024), Err(GzipProblem::Invalid("the gzip header checksum does not match"))));
        assert!(matches!(decode(&member[..14], 1024), Err(GzipProblem::Invalid("the gzip header is cut short"))));
        let failing = MEMBER[..12].chain(io::repeat(0).take(1).chain(Failing));
        assert!(matches!(decode(failing, 1024), Err(GzipProblem::Read(_))));
    }

    struct Failing;

    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::TimedOut, "stalled"))
        }
    }

    #[test]
    fn a_bomb_stops_at_the_limit() {
        // The member repeated: the decoded total passes the limit mid-member. (The integration
        // tests send a real bomb, 16 MiB of zeros in a few KiB.)
        let many = MEMBER.repeat(100);
        assert!(matches!(decode(&many[..], 699), Err(GzipProblem::TooLarge { limit: 699 })));
        assert_eq!(decode(&many[..], 700).unwrap().len(), 700);
    }
}
