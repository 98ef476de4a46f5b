//! The workspace's test kit: what its tests share, as a library, and the probes its tests run.
//!
//! - [`bins`]: the workspace's binaries, found beside the running test program (never built).
//! - [`child_log`]: a fixture server's log kept and its ready line awaited.
//! - [`testtool`]: the `escepine-testtool` binary and a registered record for it.
//! - [`server`]: an HTTP/1.1 server (and proxy) on loopback that records every request.
//! - [`echo`]: a TCP echo server on loopback.
//! - [`registry`]: a real OCI registry on loopback.
//! - [`fixtures`]: the installed MCP servers and SDKs.
//! - [`mcp`]: the workspace's MCP servers and the MCP fixtures.
//! - [`mcp_clients`]: the official MCP SDKs' clients (Python 2.x, TypeScript 1.x), driven by a
//!   plan, their events read line by line.
//! - `ledger` (feature `ledger`): records for the ledger's tests and benchmarks.
//! - `sop` (feature `runtime`): the SOP engine's loopback store, fixtures and runtimes.
//! - `image` (feature `image`): OCI image layouts built in tests, and `sample_images` built
//!   from the fixtures and the workspace's binaries (feature `push`).
//! - `postgres` (feature `postgres`): a fresh database per test on the machine's PostgreSQL.
//! - `bench` (feature `bench`): what the runtime's benchmarks share.
//! - `python_probe` (feature `sandbox`): the host's python probed in a sandbox.
//! - `oidc` (feature `oidc`): a real authorization server (oidc-provider) issuing JWT access
//!   tokens, driven over HTTP.
//! - `remote_servers` (feature `oidc`): remote MCP servers of both SDKs on loopback requiring
//!   its tokens, with test routes for counts and hostile answers.
//! - [`otlp`]: a real OTLP receiver (gRPC and HTTP, the official `opentelemetry-proto`
//!   classes) on loopback, writing the spans and metrics it receives for the tests to read.
//! - `prometheus` (feature `prometheus`): a real Prometheus server on loopback scraping one
//!   target, queried over its HTTP API.
//! - [`hostname`]: what the probes share.

pub mod bins;
pub mod child_log;
pub mod echo;
pub mod fixtures;
pub mod mcp;
pub mod mcp_clients;
pub mod otlp;
pub mod server;
pub mod testtool;

/// The host name of the UTS namespace the process runs in (empty if it cannot be read).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is valid for `buf.len()` bytes, which `gethostname` does not exceed.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub mod registry;

#[cfg(feature = "image")]
pub mod image;

#[cfg(feature = "push")]
pub mod sample_images;

#[cfg(feature = "ledger")]
pub mod ledger;

#[cfg(feature = "runtime")]
pub mod sop;

#[cfg(feature = "postgres")]
pub mod postgres;

#[cfg(feature = "bench")]
pub mod bench;

#[cfg(feature = "sandbox")]
pub mod python_probe;

#[cfg(feature = "sandbox")]
pub mod sandbox_host;

#[cfg(feature = "sandbox")]
pub mod warm_pool;

#[cfg(feature = "oidc")]
pub mod oidc;
#[cfg(feature = "oidc")]
pub mod remote_servers;

#[cfg(feature = "prometheus")]
pub mod prometheus;
