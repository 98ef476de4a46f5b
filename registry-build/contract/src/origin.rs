//! Origins (scheme, host, port) and the egress one call is granted: its profile's static entries,
//! the origins of the URLs its authorization allowed, and the addresses the deployment treats as
//! public.
//!
//! An [`Origin`] is built from the URL facts Cedar saw (`escepine_policy::authorize::UrlFacts`),
//! never by parsing a URL again: its host is already lower-case, in IDNA A-labels, without a
//! trailing dot, and its port is explicit or the scheme's default.

use std::fmt;
use std::net::IpAddr;

use crate::egress::EgressEntry;

/// The host of an [`Origin`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OriginHost {
    /// A DNS name: lower-case ASCII (IDNA A-labels), no trailing dot.
    Name(String),
    /// An address literal; an IPv4-mapped IPv6 address is its IPv4 address.
    Ip(IpAddr),
}

impl fmt::Display for OriginHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(n) => f.write_str(n),
            Self::Ip(IpAddr::V4(a)) => write!(f, "{a}"),
            Self::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
        }
    }
}

/// A web origin: scheme, host and port (explicit, or the scheme's default).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    /// The scheme, lower-case (`https`).
    pub scheme: String,
    /// The host.
    pub host: OriginHost,
    /// The port.
    pub port: u16,
}

impl fmt::Display for Origin {
    /// `scheme://host:port`, the port always written (`https://example.com:443`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// What one call's sandbox may reach, fixed before the sandbox starts.
///
/// Empty ([`EgressGrant::is_empty`]) means no network at all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct EgressGrant {
    /// The profile's static entries plus the overlay's entries for the tool.
    pub entries: Vec<EgressEntry>,
    /// The origins of the URLs the call's authorization allowed (a profile with
    /// `authorized-urls`), sorted and distinct.
    pub origins: Vec<Origin>,
    /// Addresses this deployment treats as public (an overlay's `public_addresses`): the proxy
    /// dials them although their class (loopback, private, …) is otherwise never dialled.
    pub public_addresses: Vec<IpAddr>,
}

impl EgressGrant {
    /// A grant of static `entries` only.
    pub fn new(entries: Vec<EgressEntry>) -> Self {
        Self {
            entries,
            ..Self::default()
        }
    }

    /// The same grant with `origins` (sorted, duplicates dropped).
    #[must_use]
    pub fn with_origins(mut self, origins: impl IntoIterator<Item = Origin>) -> Self {
        self.origins.extend(origins);
        self.origins.sort();
        self.origins.dedup();
        self
    }

    /// The same grant with `addresses` treated as public (sorted, duplicates dropped).
    #[must_use]
    pub fn with_public_addresses(mut self, addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        self.public_addresses.extend(addresses);
        self.public_addresses.sort();
        self.public_addresses.dedup();
        self
    }

    /// Whether nothing at all may be reached (no proxy is needed).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.origins.is_empty()
    }
}

impl From<Vec<EgressEntry>> for EgressGrant {
    fn from(entries: Vec<EgressEntry>) -> Self {
        Self::new(entries)
    }
}

impl From<&[EgressEntry]> for EgressGrant {
    fn from(entries: &[EgressEntry]) -> Self {
        Self::new(entries.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_written_with_their_port() {
        let o = Origin {
            scheme: "https".into(),
            host: OriginHost::Ip("::1".parse().expect("an address")),
            port: 443,
        };
        assert_eq!(o.to_string(), "https://[::1]:443");
        let grant = EgressGrant::default().with_origins([o.clone(), o.clone()]);
        assert_eq!(grant.origins, vec![o]);
        assert!(!grant.is_empty());
        assert!(EgressGrant::default()
            .with_public_addresses(["127.0.0.1".parse().expect("an address")])
            .is_empty());
    }
}
