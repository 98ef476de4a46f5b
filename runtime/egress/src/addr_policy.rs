//! Targets and the address policy: how a requested host is normalised, which entries admit it,
//! and which addresses are never dialled unless an entry names them as IP literals.
//!
//! Two rules keep a name from unlocking an internal address:
//! - a *name* target is admitted only by name and wildcard entries, and every address it resolves
//!   to must be outside the [`forbidden`] classes — no entry can exempt a resolved address;
//! - an *IP literal* target is admitted only by an IP-literal entry naming exactly that address
//!   (and port), and such an entry is the explicit naming that exempts it from [`forbidden`].

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use escepine_contract::{EgressEntry, EgressHost, Origin, OriginHost};

use escepine_host_class::canonical_ip;

/// A requested host after normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TargetHost {
    /// A DNS name: lower-case ASCII (IDNA A-labels), no trailing dot.
    Name(String),
    /// An IP literal (IPv4 in any WHATWG spelling, or a bracketed IPv6 address).
    Ip(IpAddr),
}

impl fmt::Display for TargetHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(n) => f.write_str(n),
            Self::Ip(IpAddr::V4(a)) => write!(f, "{a}"),
            Self::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
        }
    }
}

/// A requested host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The normalised host.
    pub(crate) host: TargetHost,
    /// The port (never 0).
    pub(crate) port: u16,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Why a requested authority is not a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TargetError {
    /// The host part is empty.
    #[error("the target has no host")]
    NoHost,
    /// The host part is neither a valid DNS name nor an IP literal.
    #[error("the target host is not a valid host name or IP address")]
    BadHost,
    /// No port, and the request form has no default.
    #[error("the target has no port")]
    NoPort,
    /// The port is not a number in 1-65535.
    #[error("the target port is not a number in 1-65535")]
    BadPort,
}

/// Normalise a host as written in a request: lower case, trailing dots removed, IDNA A-labels,
/// IPv4 in any WHATWG spelling (`127.1`, `0x7f.0.0.1`) turned into its address.
pub(crate) fn normalise_host(raw: &str) -> Result<TargetHost, TargetError> {
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or(TargetError::BadHost)?;
        // No zone identifiers (`fe80::1%eth0`): they name an interface of this host.
        return Ipv6Addr::from_str(inner)
            .map(|a| TargetHost::Ip(IpAddr::V6(a)))
            .map_err(|_| TargetError::BadHost);
    }
    let trimmed = raw.trim_end_matches('.');
    if trimmed.is_empty() {
        return Err(TargetError::NoHost);
    }
    // The WHATWG host parser percent-decodes; a request authority has no business being
    // percent-encoded, so refuse rather than guess. Control bytes and `:` never belong either.
    if trimmed
        .bytes()
        .any(|b| b == b'%' || b == b':' || b.is_ascii_control() || b == b' ')
    {
        return Err(TargetError::BadHost);
    }
    match url::Host::parse(trimmed) {
        Ok(url::Host::Ipv4(a)) => Ok(TargetHost::Ip(IpAddr::V4(a))),
        Ok(url::Host::Ipv6(a)) => Ok(TargetHost::Ip(IpAddr::V6(a))),
        Ok(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.');
            if is_dns_name(d) {
                Ok(TargetHost::Name(d.to_string()))
            } else {
                Err(TargetError::BadHost)
            }
        }
        Err(_) => Err(TargetError::BadHost),
    }
}

/// Whether `name` (already lower-case ASCII) is a syntactically valid DNS name: 1-253
/// characters, labels of 1-63 letters, digits, `-` or `_`, not starting or ending with `-`.
fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        })
}

/// Parse an authority `host:port`, `[v6]:port` (or, with a `default_port`, without `:port`).
pub(crate) fn parse_authority(s: &str, default_port: Option<u16>) -> Result<Target, TargetError> {
    let (host, port) = if s.starts_with('[') {
        let close = s.find(']').ok_or(TargetError::BadHost)?;
        let (host, rest) = s.split_at(close + 1);
        match rest {
            "" => (host, None),
            _ => (
                host,
                Some(rest.strip_prefix(':').ok_or(TargetError::BadPort)?),
            ),
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        Some(p) => parse_port(p)?,
        None => default_port.ok_or(TargetError::NoPort)?,
    };
    if host.is_empty() {
        return Err(TargetError::NoHost);
    }
    Ok(Target {
        host: normalise_host(host)?,
        port,
    })
}

fn parse_port(p: &str) -> Result<u16, TargetError> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TargetError::BadPort);
    }
    match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(TargetError::BadPort),
    }
}

/// Whether some entry admits `target`.
///
/// A name is admitted by name and wildcard entries ([`EgressEntry::admits`]); an IP literal only
/// by an entry naming that very address (so `*.0.0.1`, which parses as a wildcard, never admits
/// `127.0.0.1`).
pub(crate) fn admitted(entries: &[EgressEntry], target: &Target) -> bool {
    match &target.host {
        TargetHost::Name(name) => entries.iter().any(|e| {
            matches!(e.host, EgressHost::Name(_) | EgressHost::Wildcard(_))
                && e.admits(name, target.port)
        }),
        TargetHost::Ip(ip) => entries.iter().any(|e| {
            e.port.is_none_or(|p| p == target.port)
                && match (&e.host, ip) {
                    (EgressHost::V4(a), IpAddr::V4(b)) => a == b,
                    (EgressHost::V6(a), IpAddr::V6(b)) => a == b,
                    _ => false,
                }
        }),
    }
}

/// Whether some authorized origin admits `target`, requested with `scheme` (`Some("http")` for a
/// forwarded request; `None` for a CONNECT tunnel, whose scheme the proxy cannot see, so that any
/// origin with the target's host and port admits it).
///
/// Hosts compare as the URL facts spell them (names lower-case, A-labels, no trailing dot;
/// addresses as addresses, IPv4-mapped as IPv4); the port is always explicit.
pub(crate) fn authorized(origins: &[Origin], scheme: Option<&str>, target: &Target) -> bool {
    origins.iter().any(|o| {
        o.port == target.port
            && scheme.is_none_or(|s| o.scheme == s)
            && match (&o.host, &target.host) {
                (OriginHost::Name(a), TargetHost::Name(b)) => a == b,
                (OriginHost::Ip(a), TargetHost::Ip(b)) => canonical_ip(*a) == canonical_ip(*b),
                _ => false,
            }
    })
}

/// The class of an address the proxy never dials for a name, or `None` for a public address
/// ([`escepine_host_class::non_public_address`], the one classification the URL facts share).
pub(crate) fn forbidden(ip: IpAddr) -> Option<&'static str> {
    escepine_host_class::non_public_address(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> TargetHost {
        TargetHost::Name(s.into())
    }

    fn ip(s: &str) -> TargetHost {
        TargetHost::Ip(s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
    }

    fn entries(list: &[&str]) -> Vec<EgressEntry> {
        list.iter()
            .map(|s| s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
            .collect()
    }

    fn target(s: &str) -> Target {
        parse_authority(s, None).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn hosts_have_one_spelling() {
        assert_eq!(normalise_host("Example.COM"), Ok(name("example.com")));
        assert_eq!(normalise_host("example.com."), Ok(name("example.com")));
        assert_eq!(normalise_host("EXAMPLE.com.."), Ok(name("example.com")));
        assert_eq!(
            normalise_host("BÜCHER.example."),
            Ok(name("xn--bcher-kva.example"))
        );
        assert_eq!(
            normalise_host("xn--bcher-kva.example"),
            Ok(name("xn--bcher-kva.example"))
        );
        // Full-width letters map to ASCII under UTS #46.
        assert_eq!(
            normalise_host("ｅｘａｍｐｌｅ.com"),
            Ok(name("example.com"))
        );
        assert_eq!(normalise_host("127.0.0.1"), Ok(ip("127.0.0.1")));
        assert_eq!(normalise_host("127.0.0.1."), Ok(ip("127.0.0.1")));
        assert_eq!(normalise_host("127.1"), Ok(ip("127.0.0.1")));
        assert_eq!(normalise_host("0x7f.0.0.1"), Ok(ip("127.0.0.1")));
        assert_eq!(normalise_host("2130706433"), Ok(ip("127.0.0.1")));
        assert_eq!(normalise_host("[::1]"), Ok(ip("::1")));
        assert_eq!(normalise_host("[0:0::1]"), Ok(ip("::1")));
        assert_eq!(
            normalise_host("_srv.example.com"),
            Ok(name("_srv.example.com"))
        );
    }

    #[test]
    fn bad_hosts_are_errors() {
        for bad in [
            "",
            ".",
            "..",
            "exa mple.com",
            "ex%61mple.com",
            "a..b",
            "-a.com",
            "a-.com",
            "[::1",
            "[fe80::1%eth0]",
            "[127.0.0.1]",
            "256.1.1.1",
            "a\u{0}b",
            "a/b",
            "a@b",
            "a\\b",
            "a?b",
            "a#b",
            "<a>",
            &"a".repeat(64),
            &format!("{}.com", vec!["a".repeat(60); 5].join(".")),
        ] {
            assert!(normalise_host(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn authorities_parse() {
        assert_eq!(target("Example.com:443").to_string(), "example.com:443");
        assert_eq!(target("[::1]:8080").to_string(), "[::1]:8080");
        assert_eq!(target("127.1:80").to_string(), "127.0.0.1:80");
        assert_eq!(
            parse_authority("example.com", Some(80)).map(|t| t.port),
            Ok(80)
        );
        assert_eq!(
            parse_authority("[::1]", Some(80)).map(|t| t.to_string()),
            Ok("[::1]:80".to_string())
        );
        for (bad, why) in [
            ("example.com", TargetError::NoPort),
            ("example.com:", TargetError::BadPort),
            ("example.com:0", TargetError::BadPort),
            ("example.com:65536", TargetError::BadPort),
            ("example.com:+80", TargetError::BadPort),
            ("example.com:080x", TargetError::BadPort),
            ("example.com:1:2", TargetError::BadPort),
            (":443", TargetError::NoHost),
            ("[::1]443", TargetError::BadPort),
            ("::1:443", TargetError::BadPort),
        ] {
            assert_eq!(parse_authority(bad, None), Err(why), "{bad}");
        }
    }

    #[test]
    fn admission_by_names_and_literals() {
        let list = entries(&[
            "*.example.test",
            "api.other.test:443",
            "127.0.0.1:8080",
            "[::1]:9090",
            "*.0.0.1",
        ]);
        assert!(admitted(&list, &target("a.example.test:1")));
        assert!(admitted(&list, &target("A.B.Example.Test.:443")));
        assert!(!admitted(&list, &target("example.test:443")));
        assert!(!admitted(&list, &target("badexample.test:443")));
        assert!(admitted(&list, &target("api.other.test:443")));
        assert!(!admitted(&list, &target("api.other.test:80")));
        assert!(admitted(&list, &target("127.0.0.1:8080")));
        assert!(admitted(&list, &target("127.1:8080")));
        assert!(!admitted(&list, &target("127.0.0.1:8081")));
        assert!(!admitted(&list, &target("127.0.0.2:8080")));
        assert!(admitted(&list, &target("[::1]:9090")));
        // A mapped spelling of an admitted IPv4 literal is a different literal.
        assert!(!admitted(&list, &target("[::ffff:127.0.0.1]:8080")));
        // `*.0.0.1` is a wildcard over names; it never admits an IP literal.
        assert!(!admitted(&list, &target("1.0.0.1:443")));
        assert!(!admitted(&[], &target("example.test:443")));
        assert!(!admitted(&[], &target("127.0.0.1:8080")));
    }

    #[test]
    fn origins_admit_their_host_and_port_only() {
        let origin = |scheme: &str, host: OriginHost, port| Origin {
            scheme: scheme.into(),
            host,
            port,
        };
        let list = [
            origin("http", OriginHost::Name("a.example".into()), 80),
            origin("https", OriginHost::Name("b.example".into()), 443),
            origin(
                "http",
                OriginHost::Ip("127.0.0.1".parse().expect("ip")),
                8080,
            ),
        ];
        assert!(authorized(&list, Some("http"), &target("A.Example.:80")));
        assert!(authorized(&list, None, &target("a.example:80")));
        assert!(!authorized(&list, Some("http"), &target("a.example:8080")));
        assert!(!authorized(&list, Some("http"), &target("x.a.example:80")));
        // A forwarded request is plain HTTP: an `https` origin does not admit it.
        assert!(!authorized(&list, Some("http"), &target("b.example:443")));
        assert!(authorized(&list, None, &target("b.example:443")));
        assert!(authorized(&list, Some("http"), &target("127.1:8080")));
        assert!(authorized(&list, None, &target("[::ffff:127.0.0.1]:8080")));
        assert!(!authorized(&list, None, &target("127.0.0.2:8080")));
        assert!(!authorized(&list, None, &target("localhost:8080")));
        assert!(!authorized(&[], None, &target("a.example:80")));
    }

    #[test]
    fn address_classes() {
        for (addr, class) in [
            ("127.0.0.1", Some("loopback")),
            ("127.255.0.9", Some("loopback")),
            ("10.0.0.1", Some("private")),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("172.32.0.1", None),
            ("192.168.1.1", Some("private")),
            ("169.254.1.1", Some("link-local")),
            ("169.254.169.254", Some("metadata")),
            ("100.64.0.1", Some("shared (CGNAT)")),
            ("100.127.255.255", Some("shared (CGNAT)")),
            ("100.128.0.1", None),
            ("0.0.0.0", Some("unspecified")),
            ("0.1.2.3", Some("reserved")),
            ("255.255.255.255", Some("broadcast")),
            ("224.0.0.1", Some("multicast")),
            ("239.255.255.250", Some("multicast")),
            ("240.0.0.1", Some("reserved")),
            ("8.8.8.8", None),
            ("93.184.216.34", None),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fc00::1", Some("private")),
            ("fd12:3456::1", Some("private")),
            ("fd00:ec2::254", Some("metadata")),
            ("fe80::1", Some("link-local")),
            ("febf::1", Some("link-local")),
            ("fec0::1", Some("site-local")),
            ("ff02::1", Some("multicast")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:10.1.2.3", Some("private")),
            ("::ffff:169.254.169.254", Some("metadata")),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::a00:1", Some("private")),
            ("64:ff9b::808:808", None),
            ("64:ff9b:1::1", Some("private (local-use NAT64)")),
            ("2002:7f00:1::1", Some("loopback")),
            ("2002:808:808::1", None),
            ("::127.0.0.1", Some("reserved (IPv4-compatible)")),
            ("2001:db8::1", None),
            ("2606:4700::1111", None),
        ] {
            let ip: IpAddr = addr.parse().unwrap_or_else(|e| panic!("{addr}: {e}"));
            assert_eq!(forbidden(ip), class, "{addr}");
        }
    }
}
