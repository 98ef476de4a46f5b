//! Finding the workspace's test binaries from an integration test (included by `common`,
//! `mcp_support`, `sandbox_support` and `catalog_path` with `#[path]`).
//!
//! Cargo does not build another package's binaries for this crate's integration tests, and a
//! dev-dependency would not either, so [`workspace_bin`] looks where this workspace builds them:
//! `target/<profile>/`, the parent of the `deps/` directory holding the running test executable
//! (this honours `CARGO_TARGET_DIR`). If the binary is missing, or older than a source file of its
//! package, it runs `cargo build -p <package> --bin <bin>` (same target directory and profile) and
//! then uses it. An environment variable naming the binary overrides all of this. Not handled: a
//! cross build (`--target <triple>`), where the profile directory sits one level deeper; set the
//! variable there.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// A workspace binary.
#[derive(Debug, Clone, Copy)]
pub struct Bin {
    /// The package that builds it.
    pub package: &'static str,
    /// The binary's name.
    pub bin: &'static str,
    /// The package's directory, relative to the workspace root.
    pub dir: &'static str,
    /// The environment variable that overrides the search.
    pub var: &'static str,
}

/// `escepine-testtool` (`tools/testkit`).
pub const TESTTOOL: Bin = Bin {
    package: "escepine-testkit",
    bin: "escepine-testtool",
    dir: "tools/testkit",
    var: "ESCEPINE_TESTTOOL",
};

/// `escepine-hostile` (`tools/testkit`).
pub const HOSTILE: Bin = Bin {
    package: "escepine-testkit",
    bin: "escepine-hostile",
    dir: "tools/testkit",
    var: "ESCEPINE_HOSTILE",
};

/// `escepine-mcp-probe` (`tools/testkit`).
pub const MCP_PROBE: Bin = Bin {
    package: "escepine-testkit",
    bin: "escepine-mcp-probe",
    dir: "tools/testkit",
    var: "ESCEPINE_MCP_PROBE",
};

/// `escepine-catalog` (`tools/catalog`).
pub const CATALOG: Bin = Bin {
    package: "escepine-catalog",
    bin: "escepine-catalog",
    dir: "tools/catalog",
    var: "ESCEPINE_CATALOG_BIN",
};

/// `escepine` (`runtime/cli`).
pub const ESCEPINE: Bin = Bin {
    package: "escepine-cli",
    bin: "escepine",
    dir: "runtime/cli",
    var: "ESCEPINE_BIN",
};

/// `escepine-mcp-demo` (`tools/mcp-demo`).
pub const MCP_DEMO: Bin = Bin {
    package: "escepine-mcp-demo",
    bin: "escepine-mcp-demo",
    dir: "tools/mcp-demo",
    var: "ESCEPINE_MCP_DEMO",
};

/// The workspace root: the nearest ancestor of this crate's directory that holds `Cargo.lock`.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .expect("this crate sits in the workspace")
        .to_path_buf()
}

/// The path of a current build of `b`, building it first if needed.
pub fn workspace_bin(b: Bin) -> PathBuf {
    if let Some(p) = std::env::var_os(b.var) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test>-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/");
    let path = profile_dir.join(b.bin);
    let workspace = workspace_root();
    if is_current(&path, &workspace.join(b.dir)) {
        return path;
    }
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a profile directory name");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", b.package, "--bin", b.bin])
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
        .unwrap_or_else(|e| panic!("cannot run cargo to build {}: {e}", b.bin));
    assert!(
        status.success() && path.is_file(),
        "`cargo build -p {} --bin {}` did not produce {} ({status})",
        b.package,
        b.bin,
        path.display()
    );
    path
}

/// Whether `bin` exists and is newer than every file under the package's `src/` and its
/// `Cargo.toml`.
fn is_current(bin: &Path, package_dir: &Path) -> bool {
    let Some(built) = modified(bin) else {
        return false;
    };
    let mut newest = modified(&package_dir.join("Cargo.toml"));
    let mut stack = vec![package_dir.join("src")];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
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
