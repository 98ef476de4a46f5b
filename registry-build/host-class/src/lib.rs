//! Whether a host is public: an address on the public internet, or a name under a public
//! suffix. One classification for the egress proxy (which never dials a non-public address
//! for a name) and for the URL facts Cedar sees (`context.url.ip`, `context.url.public`).

#![deny(missing_docs)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Suffixes that name no public host: special-use names (RFC 6761, 6762, 7686, 8375, 9476),
/// ICANN's private-use `.internal`, and the suffixes networks use inside themselves
/// (Kubernetes' `.svc` and `.cluster.local`, home and office routers' `.lan`, `.home`, `.corp`).
pub const NON_PUBLIC_SUFFIXES: &[&str] = &[
    "localhost",
    "local",
    "localdomain",
    "internal",
    "intranet",
    "private",
    "corp",
    "home",
    "lan",
    "svc",
    "cluster.local",
    "home.arpa",
    "arpa",
    "test",
    "invalid",
    "example",
    "onion",
    "alt",
];

/// An IPv4 address an IPv6 address stands for (mapped `::ffff:a.b.c.d`), or the address itself.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Why a host name (lower-case, A-labels, no trailing dot) is not public, or `None` when it is
/// a name under a public suffix of the Public Suffix List.
pub fn non_public_name(host: &str) -> Option<&'static str> {
    if !host.contains('.') {
        return Some("a single-label name");
    }
    let under = |suffix: &str| {
        host.strip_suffix(suffix)
            .is_some_and(|rest| rest.is_empty() || rest.ends_with('.'))
    };
    if NON_PUBLIC_SUFFIXES.iter().any(|s| under(s)) {
        return Some("a special-use or internal suffix");
    }
    match psl::suffix(host.as_bytes()) {
        Some(suffix) if suffix.is_known() => {
            if psl::domain(host.as_bytes()).is_some() {
                None
            } else {
                Some("a public suffix itself, not a name under one")
            }
        }
        _ => Some("no public suffix"),
    }
}

/// The class of a non-public address, or `None` for a public (global unicast) one.
///
/// Loopback, private (RFC 1918, unique-local), link-local, shared (CGNAT), unspecified, broadcast,
/// multicast, reserved ranges and cloud metadata addresses. IPv6 forms that carry an IPv4 address
/// (mapped, NAT64, 6to4) are judged by the address they carry.
pub fn non_public_address(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => forbidden_v4(a),
        IpAddr::V6(a) => forbidden_v6(a),
    }
}

fn in_v4(a: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(a) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn forbidden_v4(a: Ipv4Addr) -> Option<&'static str> {
    const TABLE: &[([u8; 4], u32, &str)] = &[
        ([169, 254, 169, 254], 32, "metadata"),
        ([0, 0, 0, 0], 32, "unspecified"),
        ([0, 0, 0, 0], 8, "reserved"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([10, 0, 0, 0], 8, "private"),
        ([172, 16, 0, 0], 12, "private"),
        ([192, 168, 0, 0], 16, "private"),
        ([100, 64, 0, 0], 10, "shared (CGNAT)"),
        ([169, 254, 0, 0], 16, "link-local"),
        ([255, 255, 255, 255], 32, "broadcast"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([240, 0, 0, 0], 4, "reserved"),
    ];
    TABLE
        .iter()
        .find(|(net, prefix, _)| in_v4(a, *net, *prefix))
        .map(|(_, _, class)| *class)
}

fn in_v6(a: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(a) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

fn forbidden_v6(a: Ipv6Addr) -> Option<&'static str> {
    const TABLE: &[([u16; 8], u32, &str)] = &[
        ([0, 0, 0, 0, 0, 0, 0, 0], 96, "reserved (IPv4-compatible)"),
        (
            [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
            48,
            "private (local-use NAT64)",
        ),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "private"),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local"),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
    ];
    let bits = u128::from(a);
    let low_v4 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if a == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some("metadata");
    }
    if a.is_unspecified() {
        return Some("unspecified");
    }
    if a.is_loopback() {
        return Some("loopback");
    }
    // ::ffff:a.b.c.d (mapped) and 64:ff9b::a.b.c.d (NAT64): the IPv4 address is the destination.
    if in_v6(a, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96) || in_v6(a, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96)
    {
        return forbidden_v4(low_v4);
    }
    // 2002:a.b.c.d::/48 (6to4) carries its IPv4 address in bits 16-47.
    if in_v6(a, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        return forbidden_v4(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    TABLE
        .iter()
        .find(|(net, prefix, _)| in_v6(a, *net, *prefix))
        .map(|(_, _, class)| *class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_and_internal_names() {
        for public in [
            "example.com",
            "www.linkedin.com",
            "a.b.co.uk",
            "xn--bcher-kva.de",
            "user.github.io",
        ] {
            assert_eq!(non_public_name(public), None, "{public}");
        }
        for internal in [
            "localhost",
            "printer",
            "printer.lan",
            "kubernetes.default.svc",
            "api.default.svc.cluster.local",
            "metadata.google.internal",
            "nas.home.arpa",
            "foo.localhost",
            "host.local",
            "co.uk",
            "com",
            "db.corp",
            "x.nosuchtld",
        ] {
            assert!(non_public_name(internal).is_some(), "{internal}");
        }
    }

    #[test]
    fn mapped_addresses_are_their_ipv4_address() {
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        assert_eq!(canonical_ip(mapped), IpAddr::V4(Ipv4Addr::LOCALHOST));
        for ip in [
            "127.0.0.2",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.170.2",
            "100.100.100.200",
            "::1",
            "fd00::1",
            "::ffff:10.0.0.1",
        ] {
            let ip: IpAddr = ip.parse().expect("ip");
            assert!(non_public_address(ip).is_some(), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1"] {
            let ip: IpAddr = ip.parse().expect("ip");
            assert_eq!(non_public_address(ip), None, "{ip}");
        }
    }
}
