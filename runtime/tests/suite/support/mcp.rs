//! Helpers of the MCP transport's tests: the workspace's MCP servers and the MCP fixtures.
//!
//! [`demo_server`] is `escepine-mcp-demo` (`tools/mcp-demo`) and [`probe_server`] is
//! `escepine-mcp-probe` (`tools/testkit`), both found by [`escepine_testkit::bins`]
//! (`ESCEPINE_MCP_DEMO` and `ESCEPINE_MCP_PROBE` name others).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use escepine_testkit::bins;

pub use escepine_testkit::bins::workspace_root;

/// `runtime/tests/fixtures/mcp/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
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
