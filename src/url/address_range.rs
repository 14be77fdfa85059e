//! Which addresses `--refuse-private-addresses` refuses: the ones an SSRF-guarded client refuses.
//!
//! The list follows ToolHive's `networking.IsPrivateIP` (the Go client the flag stands in for),
//! and is stricter where an address still reaches this host or a private network: an address
//! that carries an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4) is judged by the IPv4
//! address it carries, since behind a translator it reaches exactly that address; and the
//! deprecated IPv6 site-local range is refused as the unique local range that replaced it is.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The range an address an SSRF-guarded client refuses falls in, or `None` for one it accepts.
/// An address that embeds an IPv4 address is named by the range of the IPv4 address it carries.
pub(crate) fn private_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_range(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => v4_range(v4),
            None => v6_range(v6),
        },
    }
}

/// IPv4: ToolHive's blocks, 0.0.0.0/8 ("this host", 0.0.0.0 reaches this host's own services)
/// and 240.0.0.0/4 (reserved, with the broadcast address) included. A table, not a `match`: the
/// compiler makes a 256-entry jump table of a match on the first octet.
const V4: [(u32, u32, &str); 12] = [
    (0x0000_0000, 8, "unspecified"),
    (0x7f00_0000, 8, "loopback"),
    (0x0a00_0000, 8, "private"),
    (0xac10_0000, 12, "private"),
    (0xc0a8_0000, 16, "private"),
    (0xa9fe_0000, 16, "link-local"),
    (0x6440_0000, 10, "cgnat"),
    (0xc000_0200, 24, "documentation"),
    (0xc633_6400, 24, "documentation"),
    (0xcb00_7100, 24, "documentation"),
    (0xe000_0000, 4, "multicast"),
    (0xf000_0000, 4, "reserved"),
];

/// IPv6 with no IPv4 address to decode. Teredo (2001::/32) hides its IPv4 address behind a
/// bitwise NOT and the rest of NAT64's local-use /48 embeds it where the address alone does not
/// say: both are refused whole, as ToolHive refuses them.
const V6: [(u64, u32, &str); 6] = [
    (0xfc00 << 48, 7, "private"),
    (0xfe80 << 48, 10, "link-local"),
    (0xfec0 << 48, 10, "site-local"),
    (0xff00 << 48, 8, "multicast"),
    (0x2001_0000 << 32, 32, "teredo"),
    (0x0064_ff9b_0001 << 16, 48, "nat64-local"),
];

fn v4_range(v4: Ipv4Addr) -> Option<&'static str> {
    let ip = u32::from(v4);
    V4.iter().find(|(net, len, _)| ip >> (32 - len) == net >> (32 - len)).map(|r| r.2)
}

fn v6_range(v6: Ipv6Addr) -> Option<&'static str> {
    if v6.is_unspecified() {
        return Some("unspecified");
    }
    if v6.is_loopback() {
        return Some("loopback");
    }
    let top = (u128::from(v6) >> 64) as u64;
    V6.iter().find(|(net, len, _)| top >> (64 - len) == net >> (64 - len)).map(|r| r.2)
}

/// The IPv4 address an IPv6 address carries where the address alone says which: IPv4-mapped
/// (`::ffff:a.b.c.d`) and IPv4-compatible (`::a.b.c.d`, which a stack may still route as IPv4)
/// in the last 32 bits, NAT64 (64:ff9b::/96, RFC 6052, and 64:ff9b:1::/96, RFC 8215) in the last
/// 32 bits, 6to4 (2002::/16, RFC 3056) in bits 16 to 47. `::` and `::1` are IPv6's own.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] => Some(low),
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => None,
        [0, 0, 0, 0, 0, 0, ..] => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] | [0x64, 0xff9b, 1, 0, 0, 0, ..] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_that_reaches_this_host_or_a_private_network_is_refused() {
        for (ip, expected) in [
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.96.0.10", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "cgnat"),
            ("100.127.255.255", "cgnat"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.1", "documentation"),
            ("203.0.113.7", "documentation"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "reserved"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("fc00::1", "private"),
            ("fd00::1", "private"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local"),
            ("feff::1", "site-local"),
            ("ff02::1", "multicast"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"),
            ("64:ff9b:1:2::1", "nat64-local"),
            // IPv4-mapped
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:0.0.0.0", "unspecified"),
            ("::ffff:127.0.0.1", "loopback"),
            // IPv4-compatible
            ("::127.0.0.1", "loopback"),
            ("::10.1.2.3", "private"),
            ("::0.0.0.2", "unspecified"),
            // NAT64, well-known and local-use /96
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("64:ff9b::127.0.0.1", "loopback"),
            ("64:ff9b::10.0.0.1", "private"),
            ("64:ff9b:1::c0a8:101", "private"),
            // 6to4
            ("2002:a9fe:a9fe::", "link-local"),
            ("2002:7f00:1::1", "loopback"),
            ("2002:c0a8:101::5", "private"),
            ("2002:6440:1::", "cgnat"),
        ] {
            assert_eq!(private_range(ip.parse().unwrap()), Some(expected), "{ip}");
        }
    }

    #[test]
    fn public_addresses_and_forms_carrying_public_ones_pass() {
        for ip in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "1.1.1.1",
            "223.255.255.255",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "::8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:db8::1",
            "2001:1::1",
        ] {
            assert_eq!(private_range(ip.parse().unwrap()), None, "{ip}");
        }
    }
}
