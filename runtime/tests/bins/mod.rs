//! The workspace's binaries for the command-line and MCP crates' tests (which include this
//! module with `#[path]`): the test kit's lookup beside the running test program
//! ([`escepine_testkit::bins`]), which never builds.

#![allow(dead_code, unused_imports)]

use std::path::PathBuf;

pub use escepine_testkit::bins::{
    workspace_root, Bin, CATALOG, ESCEPINE, HOSTILE, MCP_DEMO, MCP_PROBE, TESTTOOL,
};

/// The path of a current build of `b` (a missing or stale one fails the test, naming the
/// `cargo build` that makes it).
pub fn workspace_bin(b: Bin) -> PathBuf {
    escepine_testkit::bins::path(b)
}
