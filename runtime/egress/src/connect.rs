//! Vetting a target and dialling it, in this order: admission by the entries, resolution by the
//! injected [`Resolver`](super::Resolver), the address policy over every resolved address, and
//! only then a connection — to a vetted address, never to a re-resolution. A refusal therefore
//! always precedes any connection attempt.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;

use tokio::net::TcpStream;
use tokio::time::timeout;

use super::addr_policy::{admitted, authorized, Target, TargetHost};
use crate::shared::Shared;

/// At most this many of a name's addresses are tried.
const MAX_DIAL: usize = 4;

/// Why the policy refuses a target (recorded as evidence, answered with 403).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No entry admits the host and port.
    NotInProfile,
    /// No entry and none of the call's authorized origins admits it.
    NotAuthorized,
    /// An authorized origin's address literal is one the proxy never dials for a payload's URL.
    Address {
        /// The address.
        addr: IpAddr,
        /// Its class (`loopback`, `private`, `metadata`, …).
        class: &'static str,
    },
    /// An admitted name resolves to an address the proxy never dials for a name.
    Forbidden {
        /// The address.
        addr: IpAddr,
        /// Its class (`loopback`, `private`, `metadata`, …).
        class: &'static str,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInProfile => f.write_str("not in the profile"),
            Self::NotAuthorized => {
                f.write_str("not in the profile nor an origin this call's authorization allowed")
            }
            Self::Address { addr, class } => write!(f, "{addr} is a {class} address"),
            Self::Forbidden { addr, class } => {
                write!(f, "resolves to {addr}, a {class} address")
            }
        }
    }
}

/// Why an admitted target could not be reached (answered with 502 or 504, not a refusal).
#[derive(Debug, thiserror::Error)]
pub(crate) enum DialError {
    /// The resolver failed.
    #[error("could not resolve {0}: {1}")]
    Resolve(String, io::Error),
    /// The resolver did not answer in time.
    #[error("resolving {0} timed out")]
    ResolveTimeout(String),
    /// The resolver answered with no address.
    #[error("{0} has no address")]
    NoAddress(String),
    /// Every connection attempt failed; the last error.
    #[error("could not connect to {0}: {1}")]
    Connect(SocketAddr, io::Error),
    /// A connection attempt did not complete in time.
    #[error("connecting to {0} timed out")]
    ConnectTimeout(SocketAddr),
}

impl DialError {
    /// The status answered to the client.
    pub(crate) fn status(&self) -> (u16, &'static str) {
        match self {
            Self::ResolveTimeout(_) | Self::ConnectTimeout(_) => (504, "Gateway Timeout"),
            _ => (502, "Bad Gateway"),
        }
    }
}

/// What vetting decided against a target.
#[derive(Debug)]
pub(crate) enum Vetting {
    /// The policy refuses it.
    Refused(Refusal),
    /// It is admitted but could not be resolved.
    Failed(DialError),
}

/// Admit, resolve and vet `target`, requested with `scheme` (see [`authorized`]); the addresses
/// to dial (with the requested port).
pub(crate) async fn vet(
    shared: &Shared,
    scheme: Option<&str>,
    target: &Target,
) -> Result<Vec<SocketAddr>, Vetting> {
    let by_entry = admitted(&shared.entries, target);
    if !by_entry && !authorized(&shared.origins, scheme, target) {
        return Err(Vetting::Refused(if shared.origins.is_empty() {
            Refusal::NotInProfile
        } else {
            Refusal::NotAuthorized
        }));
    }
    let name = match &target.host {
        // An IP literal admitted by an entry naming it: that entry is the explicit naming which
        // exempts it from the address policy.
        TargetHost::Ip(ip) if by_entry => return Ok(vec![SocketAddr::new(*ip, target.port)]),
        // An authorized origin's address literal came from a payload: the policy applies to it
        // as to any resolved address.
        TargetHost::Ip(ip) => {
            return match shared.forbidden(*ip) {
                Some(class) => Err(Vetting::Refused(Refusal::Address { addr: *ip, class })),
                None => Ok(vec![SocketAddr::new(*ip, target.port)]),
            }
        }
        TargetHost::Name(name) => name,
    };
    let answer = match timeout(
        shared.limits.resolve_timeout,
        shared.resolver.resolve(name, target.port),
    )
    .await
    {
        Err(_) => return Err(Vetting::Failed(DialError::ResolveTimeout(name.clone()))),
        Ok(Err(e)) => return Err(Vetting::Failed(DialError::Resolve(name.clone(), e))),
        Ok(Ok(answer)) => answer,
    };
    // Every address must pass: one forbidden address refuses the name (a rebinding answer mixing
    // public and internal addresses is refused whole). No entry exempts a resolved address.
    let mut addrs = Vec::with_capacity(answer.len());
    for a in answer {
        let ip = a.ip();
        if let Some(class) = shared.forbidden(ip) {
            return Err(Vetting::Refused(Refusal::Forbidden { addr: ip, class }));
        }
        let addr = SocketAddr::new(ip, target.port);
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(Vetting::Failed(DialError::NoAddress(name.clone())));
    }
    Ok(addrs)
}

/// Connect to the first of `addrs` (vetted by [`vet`]) that accepts.
pub(crate) async fn dial(shared: &Shared, addrs: &[SocketAddr]) -> Result<TcpStream, DialError> {
    let mut last = None;
    for &addr in addrs.iter().take(MAX_DIAL) {
        shared.connects.fetch_add(1, Ordering::SeqCst);
        match timeout(shared.limits.connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                // Latency matters more than segment count for a relay.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => last = Some(DialError::Connect(addr, e)),
            Err(_) => last = Some(DialError::ConnectTimeout(addr)),
        }
    }
    Err(last.unwrap_or_else(|| DialError::NoAddress(String::from("the target"))))
}
