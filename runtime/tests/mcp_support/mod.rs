//! Helpers of the MCP tests (`mod mcp_support;` in a `tests/mcp_*.rs` file).
//!
//! [`demo_server`] finds the workspace's MCP server `escepine-mcp-demo` (`tools/mcp-demo`) as
//! `bins/mod.rs` finds every test binary (`ESCEPINE_MCP_DEMO` overrides). [`escepine`] is the `escepine` binary under test.

#![allow(dead_code)]

#[path = "../bins/mod.rs"]
mod bins;

// Not every test that includes this module needs it.
#[allow(unused_imports)]
pub use bins::workspace_root;

use std::path::PathBuf;
use std::sync::OnceLock;

/// The `escepine` binary: this package's own when it builds it (`escepine-cli`), else the
/// workspace's ([`bins::ESCEPINE`]).
pub fn escepine() -> PathBuf {
    match option_env!("CARGO_BIN_EXE_escepine") {
        Some(p) => PathBuf::from(p),
        None => bins::workspace_bin(bins::ESCEPINE),
    }
}

/// `runtime/tests/fixtures/mcp/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    workspace_root()
        .join("runtime/tests/fixtures/mcp")
        .join(rel)
}

/// The path of a current `escepine-mcp-demo`, building it once if needed.
pub fn demo_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bins::workspace_bin(bins::MCP_DEMO))
        .clone()
}

/// The path of a current `escepine-mcp-probe` (`tools/testkit`), built the same way.
pub fn probe_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bins::workspace_bin(bins::MCP_PROBE))
        .clone()
}

/// The testtool (`escepine-testtool`), built the same way (tests that do not use `common`).
pub fn testtool() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bins::workspace_bin(bins::TESTTOOL))
        .clone()
}
