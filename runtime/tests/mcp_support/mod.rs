//! Helpers of the MCP tests (`mod mcp_support;` in a `tests/mcp_*.rs` file).
//!
//! [`demo_server`] finds the workspace's MCP server `escepine-mcp-demo` (`tools/mcp-demo`) the way
//! `common::testtool` finds the testtool: in `target/<profile>/` beside the running test, built
//! once with `cargo build -p escepine-mcp-demo` when missing or older than its sources
//! (`ESCEPINE_MCP_DEMO` overrides). [`escepine`] is the `escepine` binary under test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

/// The `escepine` binary of this package.
pub fn escepine() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_escepine"))
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("runtime/ has a parent")
        .to_path_buf()
}

/// `runtime/tests/fixtures/mcp/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(rel)
}

/// The path of a current `escepine-mcp-demo`, building it once if needed.
pub fn demo_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("ESCEPINE_MCP_DEMO") {
            return PathBuf::from(p);
        }
        build_bin("escepine-mcp-demo", "escepine-mcp-demo", "tools/mcp-demo")
    })
    .clone()
}

/// The testtool (`escepine-testtool`), built the same way (tests that do not use `common`).
pub fn testtool() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("ESCEPINE_TESTTOOL") {
            return PathBuf::from(p);
        }
        build_bin("escepine-testkit", "escepine-testtool", "tools/testkit")
    })
    .clone()
}

fn build_bin(package: &str, bin: &str, dir: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/");
    let path = profile_dir.join(bin);
    let workspace = workspace_root();
    if is_current(&path, &workspace.join(dir)) {
        return path;
    }
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a profile directory name");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", package, "--bin", bin])
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir);
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build {bin}: {e}"));
    assert!(
        status.success() && path.is_file(),
        "`cargo build -p {package}` did not produce {} ({status})",
        path.display()
    );
    path
}

/// Whether `bin` exists and is newer than every file of the package at `dir`.
fn is_current(bin: &Path, dir: &Path) -> bool {
    let Some(built) = modified(bin) else {
        return false;
    };
    let mut newest = modified(&dir.join("Cargo.toml"));
    let mut stack = vec![dir.join("src")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                newest = newest.max(modified(&p));
            }
        }
    }
    newest.is_none_or(|n| n <= built)
}

fn modified(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}
