//! Egress allowlist entries (`host`, `host:port`, `[v6]:port`, `*.suffix`) and envelope coverage.
//!
//! Two words are reserved and never hosts: [`AUTHORIZED_URLS`] (a profile entry: the origins of
//! the URLs each call's authorization allowed) and [`PUBLIC`] (an envelope entry: tools may reach
//! public addresses). [`EgressEntry::from_str`] refuses both; the registration rules read them
//! where they belong.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// The profile entry that admits, per call, the origins of the URLs Cedar authorized in it.
pub const AUTHORIZED_URLS: &str = "authorized-urls";

/// The envelope entry that lets tools reach public addresses (what `authorized-urls` needs).
pub const PUBLIC: &str = "public";

/// Whether `s` is one of the reserved words ([`AUTHORIZED_URLS`], [`PUBLIC`]).
pub fn is_reserved(s: &str) -> bool {
    s == AUTHORIZED_URLS || s == PUBLIC
}

/// The host part of an egress entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EgressHost {
    /// A DNS name in lower-case ASCII (IDNA A-labels).
    Name(String),
    /// `*.suffix`: every sub-domain of `suffix`, not `suffix` itself.
    Wildcard(String),
    /// An IPv4 literal.
    V4(Ipv4Addr),
    /// An IPv6 literal (written `[addr]`).
    V6(Ipv6Addr),
}

/// One allowlist entry: a host and, optionally, one port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EgressEntry {
    /// The host.
    pub host: EgressHost,
    /// The port; `None` means every port.
    pub port: Option<u16>,
}

/// Why a string is not an egress entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressError {
    /// A URL where a host was expected.
    Url(String),
    /// Not a valid host name.
    Host(String, &'static str),
    /// A bad port.
    Port(String),
    /// A wildcard with a port or in the wrong place.
    Wildcard(String),
    /// A reserved word (`authorized-urls`, `public`), not a host.
    Reserved(String),
}

impl fmt::Display for EgressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Url(s) => write!(
                f,
                "`{s}` is a URL; an egress entry is a host, `host:port`, `[v6]:port` or `*.suffix`"
            ),
            Self::Host(s, why) => write!(f, "`{s}` is not a valid host: {why}"),
            Self::Port(s) => write!(f, "`{s}` has an invalid port (1-65535)"),
            Self::Wildcard(s) => write!(
                f,
                "`{s}`: a wildcard is written `*.suffix`, without a port, with at least two labels after it"
            ),
            Self::Reserved(s) => write!(
                f,
                "`{s}` is a reserved word, not a host: `{AUTHORIZED_URLS}` belongs in a sandbox \
                 profile's `egress`, `{PUBLIC}` in the deployment envelope's `egress`"
            ),
        }
    }
}

impl std::error::Error for EgressError {}

impl FromStr for EgressEntry {
    type Err = EgressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let raw = s.to_string();
        if is_reserved(s) {
            return Err(EgressError::Reserved(raw));
        }
        if s.contains("://")
            || s.contains('/')
            || s.contains('?')
            || s.contains('#')
            || s.contains('@')
        {
            return Err(EgressError::Url(raw));
        }
        if s.is_empty() {
            return Err(EgressError::Host(raw, "it is empty"));
        }
        // [v6] or [v6]:port
        if let Some(rest) = s.strip_prefix('[') {
            let (addr, after) = rest
                .split_once(']')
                .ok_or(EgressError::Host(raw.clone(), "unclosed `[`"))?;
            let ip = Ipv6Addr::from_str(addr)
                .map_err(|_| EgressError::Host(raw.clone(), "not an IPv6 address"))?;
            let port = match after {
                "" => None,
                p => Some(parse_port(
                    p.strip_prefix(':').ok_or(EgressError::Port(raw.clone()))?,
                    &raw,
                )?),
            };
            return Ok(Self {
                host: EgressHost::V6(ip),
                port,
            });
        }
        if s.matches(':').count() > 1 {
            return Err(EgressError::Host(
                raw,
                "an IPv6 address is written in brackets: `[::1]:8080`",
            ));
        }
        let (host, port) = match s.split_once(':') {
            Some((h, p)) => (h, Some(parse_port(p, &raw)?)),
            None => (s, None),
        };
        if let Some(suffix) = host.strip_prefix("*.") {
            if port.is_some() || !suffix.contains('.') {
                return Err(EgressError::Wildcard(raw));
            }
            check_name(suffix, &raw)?;
            return Ok(Self {
                host: EgressHost::Wildcard(suffix.to_string()),
                port: None,
            });
        }
        if host.contains('*') {
            return Err(EgressError::Wildcard(raw));
        }
        if let Ok(ip) = Ipv4Addr::from_str(host) {
            return Ok(Self {
                host: EgressHost::V4(ip),
                port,
            });
        }
        if host
            .split('.')
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(EgressError::Host(raw, "not a valid IPv4 address"));
        }
        check_name(host, &raw)?;
        Ok(Self {
            host: EgressHost::Name(host.to_string()),
            port,
        })
    }
}

fn parse_port(p: &str, raw: &str) -> Result<u16, EgressError> {
    match p.parse::<u16>() {
        Ok(n) if n > 0 && !p.starts_with('+') => Ok(n),
        _ => Err(EgressError::Port(raw.to_string())),
    }
}

fn check_name(host: &str, raw: &str) -> Result<(), EgressError> {
    let err = |why| Err(EgressError::Host(raw.to_string(), why));
    if host.len() > 253 {
        return err("longer than 253 characters");
    }
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        return err("write host names in lower case");
    }
    if !host.is_ascii() {
        return err("write international names in their IDNA `xn--` form");
    }
    for label in host.split('.') {
        if label.is_empty() || label.len() > 63 {
            return err("a label is empty or longer than 63 characters");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return err("a label starts or ends with `-`");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return err("only letters, digits, `-` and `.` may appear");
        }
    }
    Ok(())
}

impl fmt::Display for EgressEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            EgressHost::Name(h) => write!(f, "{h}")?,
            EgressHost::Wildcard(s) => write!(f, "*.{s}")?,
            EgressHost::V4(ip) => write!(f, "{ip}")?,
            EgressHost::V6(ip) => write!(f, "[{ip}]")?,
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

impl EgressEntry {
    /// Whether this (envelope) entry covers `other` (a profile entry).
    ///
    /// An entry covers itself; `*.x` covers `a.x` and `*.a.x`; a host without a port covers every
    /// port of it.
    pub fn covers(&self, other: &EgressEntry) -> bool {
        let port_ok = match (self.port, other.port) {
            (None, _) => true,
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => false,
        };
        if !port_ok {
            return false;
        }
        match (&self.host, &other.host) {
            (EgressHost::Wildcard(s), EgressHost::Name(h)) => is_strict_subdomain(h, s),
            (EgressHost::Wildcard(s), EgressHost::Wildcard(o)) => {
                o == s || is_strict_subdomain(o, s)
            }
            (a, b) => a == b,
        }
    }

    /// Whether this entry admits a connection to `host` (lower-case) on `port`.
    pub fn admits(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match &self.host {
            EgressHost::Name(h) => h == host,
            EgressHost::Wildcard(s) => is_strict_subdomain(host, s),
            EgressHost::V4(ip) => Ipv4Addr::from_str(host).is_ok_and(|h| h == *ip),
            EgressHost::V6(ip) => {
                Ipv6Addr::from_str(host.trim_start_matches('[').trim_end_matches(']'))
                    .is_ok_and(|h| h == *ip)
            }
        }
    }
}

fn is_strict_subdomain(host: &str, suffix: &str) -> bool {
    host.len() > suffix.len() + 1
        && host.ends_with(suffix)
        && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> EgressEntry {
        s.parse().unwrap_or_else(|err| panic!("{s}: {err}"))
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(e("example.com").port, None);
        assert_eq!(e("example.com:443").port, Some(443));
        assert_eq!(e("[::1]:8080").host, EgressHost::V6(Ipv6Addr::LOCALHOST));
        assert_eq!(e("127.0.0.1:80").host, EgressHost::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(
            e("*.example.com").host,
            EgressHost::Wildcard("example.com".into())
        );
        assert_eq!(e("[::1]:8080").to_string(), "[::1]:8080");
    }

    #[test]
    fn rejects_urls_and_garbage() {
        for bad in [
            "https://example.com",
            "example.com/path",
            "user@example.com",
            "Example.com",
            "exa mple.com",
            "example.com:0",
            "example.com:99999",
            "*.com",
            "*.example.com:443",
            "a.*.example.com",
            "::1",
            "[::1",
            "-bad.com",
            "",
            "256.1.1.1",
            "public",
            "authorized-urls",
        ] {
            assert!(bad.parse::<EgressEntry>().is_err(), "{bad} was accepted");
        }
        assert!(matches!(
            "https://x.com".parse::<EgressEntry>(),
            Err(EgressError::Url(_))
        ));
        assert!(matches!(
            "authorized-urls".parse::<EgressEntry>(),
            Err(EgressError::Reserved(_))
        ));
    }

    #[test]
    fn coverage_follows_the_design() {
        assert!(e("example.com").covers(&e("example.com:443")));
        assert!(!e("example.com:443").covers(&e("example.com")));
        assert!(!e("example.com:443").covers(&e("example.com:80")));
        assert!(e("*.example.com").covers(&e("a.example.com")));
        assert!(e("*.example.com").covers(&e("a.b.example.com:8443")));
        assert!(e("*.example.com").covers(&e("*.a.example.com")));
        assert!(!e("*.example.com").covers(&e("example.com")));
        assert!(!e("*.example.com").covers(&e("badexample.com")));
        assert!(e("[::1]").covers(&e("[::1]:8080")));
    }

    #[test]
    fn admits_hosts() {
        assert!(e("*.example.com").admits("a.example.com", 443));
        assert!(!e("*.example.com").admits("example.com", 443));
        assert!(!e("*.example.com").admits("example.com.evil.net", 443));
        assert!(e("127.0.0.1:8080").admits("127.0.0.1", 8080));
        assert!(!e("127.0.0.1:8080").admits("127.0.0.1", 8081));
    }
}
