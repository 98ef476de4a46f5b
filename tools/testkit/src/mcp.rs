//! The workspace's MCP servers and the MCP fixtures, for the tests of the MCP transport, the
//! listing, `escepine serve` and `escepine import`.
//!
//! [`demo_server`] is `escepine-mcp-demo` (`tools/mcp-demo`) and [`probe_server`] is
//! `escepine-mcp-probe` (this package), both found by [`crate::bins`] (`ESCEPINE_MCP_DEMO` and
//! `ESCEPINE_MCP_PROBE` name others).

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::bins;

/// `runtime/tests/fixtures/mcp/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    bins::workspace_root()
        .join("runtime/tests/fixtures/mcp")
        .join(rel)
}

/// The path of a current `escepine-mcp-demo`.
pub fn demo_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bins::path(bins::MCP_DEMO)).clone()
}

/// The path of a current `escepine-mcp-probe`.
pub fn probe_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bins::path(bins::MCP_PROBE)).clone()
}
