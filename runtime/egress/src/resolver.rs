//! Name resolution for the proxy: a seam, so tests (and deployments with their own DNS) can
//! inject answers, and the system resolver as the default.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;

/// A boxed, `Send` future: the [`Resolver`] seam is object safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Resolves a host name to socket addresses for the [`EgressProxy`](super::EgressProxy).
///
/// The proxy calls this only for names an entry admits, vets every address returned, and then
/// dials the vetted addresses itself (never re-resolving). Only the IP addresses of the answer are
/// used: the proxy always dials the port that was requested and admitted.
pub trait Resolver: Send + Sync + 'static {
    /// Resolve `host` (normalised: lower-case ASCII, A-labels, no trailing dot) for `port`.
    fn resolve(&self, host: &str, port: u16) -> BoxFuture<'_, io::Result<Vec<SocketAddr>>>;
}

/// The operating system's resolver ([`tokio::net::lookup_host`], i.e. `getaddrinfo`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> BoxFuture<'_, io::Result<Vec<SocketAddr>>> {
        let host = host.to_string();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), port))
                .await?
                .collect())
        })
    }
}
