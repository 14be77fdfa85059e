//! The SOCKS5 handshake (RFC 1928, with RFC 1929 username and password), byte for byte as Go's
//! client in `net/http` (socks_bundle.go) makes it: the methods offered are "none" alone, or
//! "none" and "username/password" when the proxy URL has credentials; the target goes as a host
//! name (an address only when it is one), for `socks5` and `socks5h` alike, so the proxy
//! resolves it; only a reply of 0 ("succeeded") opens the tunnel. About 60 lines instead of a
//! SOCKS crate.

use super::fetch_error::refused;
use std::io::{self, Read, Write};
use std::net::IpAddr;

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0;
const USER_PASSWORD: u8 = 2;
const NO_ACCEPTABLE: u8 = 0xff;

/// Asks the SOCKS server on `io` to connect to `host:port`.
pub(super) fn connect(
    io: &mut impl ReadWrite,
    host: &str,
    port: u16,
    credentials: Option<&(String, String)>,
) -> io::Result<()> {
    let methods: &[u8] = if credentials.is_some() { &[NO_AUTH, USER_PASSWORD] } else { &[NO_AUTH] };
    io.write_all(&[&[VERSION, methods.len() as u8][..], methods].concat())?;
    let chosen = read::<2>(io)?;
    expect_version(chosen[0])?;
    match (chosen[1], credentials) {
        (NO_ACCEPTABLE, _) => return Err(refused("accepts none of the authentication methods offered".into())),
        (USER_PASSWORD, Some((user, password))) => authenticate(io, user, password)?,
        (NO_AUTH, _) | (_, None) => {}
        (other, Some(_)) => return Err(refused(format!("chose unsupported authentication method {other}"))),
    }
    io.write_all(&request(host, port)?)?;
    let reply = read::<4>(io)?;
    expect_version(reply[0])?;
    if reply[1] != 0 {
        return Err(refused(format!("refused to connect to {host}:{port}: {}", reply_text(reply[1]))));
    }
    if reply[2] != 0 {
        return Err(refused("answered with a non-zero reserved field".into()));
    }
    let address = match reply[3] {
        1 => 4,
        4 => 16,
        3 => usize::from(read::<1>(io)?[0]),
        other => return Err(refused(format!("answered with unknown address type {other}"))),
    };
    io.read_exact(&mut vec![0; address + 2])
}

/// Read and Write, as `TransportAdapter` is.
pub(super) trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn read<const N: usize>(io: &mut impl Read) -> io::Result<[u8; N]> {
    let mut buf = [0; N];
    io.read_exact(&mut buf)?;
    Ok(buf)
}

fn expect_version(v: u8) -> io::Result<()> {
    if v == VERSION { Ok(()) } else { Err(refused(format!("is not a SOCKS5 server (protocol version {v})"))) }
}

/// RFC 1929, as Go checks it: a username of 1 to 255 bytes, a password of at most 255.
fn authenticate(io: &mut impl ReadWrite, user: &str, password: &str) -> io::Result<()> {
    if user.is_empty() || user.len() > 255 || password.len() > 255 {
        return Err(refused(
            "cannot take these credentials: a SOCKS5 username has 1 to 255 bytes, a password at most 255".into(),
        ));
    }
    io.write_all(&[&[1, user.len() as u8], user.as_bytes(), &[password.len() as u8], password.as_bytes()].concat())?;
    let status = read::<2>(io)?;
    if status[0] != 1 {
        return Err(refused(format!("answered username/password with version {}", status[0])));
    }
    if status[1] != 0 {
        return Err(refused("rejected the username and password".into()));
    }
    Ok(())
}

fn request(host: &str, port: u16) -> io::Result<Vec<u8>> {
    let mut b = vec![VERSION, 1, 0];
    match host.parse::<IpAddr>().map(|ip| ip.to_canonical()) {
        Ok(IpAddr::V4(ip)) => b.extend([&[1][..], &ip.octets()].concat()),
        Ok(IpAddr::V6(ip)) => b.extend([&[4][..], &ip.octets()].concat()),
        Err(_) if host.len() > 255 => return Err(refused("cannot take a host name over 255 bytes".into())),
        Err(_) => b.extend([&[3, host.len() as u8][..], host.as_bytes()].concat()),
    }
    b.extend(port.to_be_bytes());
    Ok(b)
}

/// RFC 1928's reply codes, in Go's words.
fn reply_text(code: u8) -> String {
    let text = match code {
        1 => "general SOCKS server failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => return format!("unknown code: {code}"),
    };
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted server: what it answers, and what the client wrote.
    struct Script {
        answers: io::Cursor<Vec<u8>>,
        written: Vec<u8>,
    }

    impl Read for Script {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.answers.read(buf)
        }
    }

    impl Write for Script {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn run(answers: &[u8], host: &str, credentials: Option<(&str, &str)>) -> (io::Result<()>, Vec<u8>) {
        let mut s = Script { answers: io::Cursor::new(answers.to_vec()), written: Vec::new() };
        let credentials = credentials.map(|(u, p)| (u.to_string(), p.to_string()));
        (connect(&mut s, host, 443, credentials.as_ref()), s.written)
    }

    #[test]
    fn the_host_name_goes_to_the_proxy_with_go_s_bytes() {
        let (r, written) = run(&[5, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0], "idp.test", None);
        r.unwrap();
        assert_eq!(written, [&[5, 1, 0, 5, 1, 0, 3, 8][..], b"idp.test", &[1, 187]].concat());
        let (r, written) = run(
            &[5, 2, 1, 0, 5, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
            "::1",
            Some(("u", "pw")),
        );
        r.unwrap();
        assert_eq!(written[..12], [5, 2, 0, 2, 1, 1, b'u', 2, b'p', b'w', 5, 1]);
        assert_eq!(written[13], 4, "an address goes as one");
    }

    #[test]
    fn refusals_are_said_in_go_s_words() {
        let (r, _) = run(&[5, 0, 5, 5, 0, 1], "idp.test", None);
        assert!(r.unwrap_err().to_string().contains("connection refused"));
        let (r, _) = run(&[5, 2, 1, 1], "idp.test", Some(("u", "bad")));
        assert!(r.unwrap_err().to_string().contains("rejected the username and password"));
        let (r, _) = run(&[5, 0xff], "idp.test", None);
        assert!(r.unwrap_err().to_string().contains("none of the authentication methods"));
        let (r, _) = run(b"HTTP/1.1 400", "idp.test", None);
        assert!(r.unwrap_err().to_string().contains("not a SOCKS5 server"));
    }
}
