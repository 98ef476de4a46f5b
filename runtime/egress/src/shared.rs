//! The state one proxy's accept loop and connections share: its entries, resolver, bounds and
//! the refusals recorded so far.

use std::net::IpAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use escepine_contract::{EgressEntry, EgressGrant, Origin};

use crate::addr_policy;
use crate::resolver::Resolver;

/// At most this many refusal lines are kept per proxy.
pub(crate) const MAX_REFUSALS: usize = 1000;
/// Bounds of one proxy.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Largest request head, terminator included.
    pub(crate) max_head: usize,
    /// Time for a client to send its whole request head.
    pub(crate) head_timeout: Duration,
    /// Time for the resolver to answer.
    pub(crate) resolve_timeout: Duration,
    /// Time for each connection attempt.
    pub(crate) connect_timeout: Duration,
    /// Time to write an answer, and to drain the client after an error answer.
    pub(crate) reply_timeout: Duration,
    /// Connections served at once.
    pub(crate) max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_head: 16 * 1024,
            head_timeout: Duration::from_secs(10),
            resolve_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            reply_timeout: Duration::from_secs(2),
            max_connections: 256,
        }
    }
}

/// The lines recorded so far (refusals, or admitted requests), bounded.
#[derive(Debug, Default)]
pub(crate) struct RefusalLog {
    pub(crate) kept: Vec<String>,
    pub(crate) dropped: u64,
}

/// State shared by the accept loop and every connection of one proxy.
pub(crate) struct Shared {
    pub(crate) entries: Vec<EgressEntry>,
    /// The origins the call's authorization allowed (admitted with the address policy applied
    /// even to address literals).
    pub(crate) origins: Vec<Origin>,
    /// Addresses treated as public (never refused by the address policy).
    pub(crate) public_addresses: Vec<IpAddr>,
    pub(crate) resolver: Arc<dyn Resolver>,
    pub(crate) limits: Limits,
    pub(crate) refusals: Mutex<RefusalLog>,
    /// The requests admitted and connected (`GET host:port/path`, `CONNECT host:port`).
    pub(crate) requests: Mutex<RefusalLog>,
    pub(crate) connects: AtomicU64,
    /// Unit tests only: treat loopback addresses of names as public, so that the name path can be
    /// exercised end to end against loopback servers.
    #[cfg(test)]
    pub(crate) loopback_is_public: bool,
}

impl Shared {
    pub(crate) fn new(
        grant: impl Into<EgressGrant>,
        resolver: Arc<dyn Resolver>,
        limits: Limits,
    ) -> Self {
        let grant = grant.into();
        Self {
            entries: grant.entries,
            origins: grant.origins,
            public_addresses: grant
                .public_addresses
                .into_iter()
                .map(escepine_host_class::canonical_ip)
                .collect(),
            resolver,
            limits,
            refusals: Mutex::new(RefusalLog::default()),
            requests: Mutex::new(RefusalLog::default()),
            connects: AtomicU64::new(0),
            #[cfg(test)]
            loopback_is_public: false,
        }
    }

    /// The class of `ip` if the proxy never dials it for a name (or for an authorized origin's
    /// address literal); `None` for a public address or one the grant treats as public.
    pub(crate) fn forbidden(&self, ip: IpAddr) -> Option<&'static str> {
        #[cfg(test)]
        if self.loopback_is_public && ip.is_loopback() {
            return None;
        }
        if self
            .public_addresses
            .contains(&escepine_host_class::canonical_ip(ip))
        {
            return None;
        }
        addr_policy::forbidden(ip)
    }

    pub(crate) fn refuse(&self, line: String) {
        tracing::debug!(refusal = %line, "egress refused");
        push(&self.refusals, line);
    }

    pub(crate) fn refusals(&self) -> Vec<String> {
        lines(&self.refusals, "refused")
    }

    /// Record an admitted request that reached its server.
    pub(crate) fn admitted(&self, line: String) {
        tracing::debug!(request = %line, "egress admitted");
        push(&self.requests, line);
    }

    pub(crate) fn requests(&self) -> Vec<String> {
        lines(&self.requests, "admitted")
    }
}

/// Keep `line` in `log`, or count it once [`MAX_REFUSALS`] are kept.
fn push(log: &Mutex<RefusalLog>, line: String) {
    let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
    if log.kept.len() < MAX_REFUSALS {
        log.kept.push(line);
    } else {
        log.dropped += 1;
    }
}

/// The kept lines of `log`, and a last line counting the rest (`<verb> N more requests`).
fn lines(log: &Mutex<RefusalLog>, verb: &str) -> Vec<String> {
    let log = log.lock().unwrap_or_else(PoisonError::into_inner);
    let mut out = log.kept.clone();
    if log.dropped > 0 {
        out.push(format!(
            "{verb} {} more requests (not itemised)",
            log.dropped
        ));
    }
    out
}
