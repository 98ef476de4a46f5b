//! Helpers shared by the runtime's integration tests (`mod common;` in a test file).
//!
//! [`testtool`] finds the `escepine-testtool` binary of `tools/testkit`. Cargo does not build
//! another package's binaries for this crate's integration tests, and a dev-dependency would not
//! either, so the helper looks for it where this workspace builds it: `target/<profile>/`, the
//! parent of the `deps/` directory holding the running test executable (this honours
//! `CARGO_TARGET_DIR`). If it is missing, or older than a source file of `tools/testkit`, it runs
//! `cargo build -p escepine-testkit` once per test process (same target directory and profile)
//! and then uses it. `ESCEPINE_TESTTOOL=/path/to/escepine-testtool` overrides all of this.
//! (`cargo test --workspace` builds it anyway: the testkit's own integration tests need it.)
//! Not handled: a cross build (`--target <triple>`), where the profile directory sits one level
//! deeper; set `ESCEPINE_TESTTOOL` there.
//!
//! [`testtool_record`] is a registered record whose endpoint is the testtool in a given mode.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

use escepine_contract::{FailureOutcome, Filesystem, RetryPolicy, SideEffectClass, Transport};
use registry_build::{EndpointSpec, ResolvedCommand, SandboxProfile, ToolRecord};
use serde_json::json;

/// Name of the testkit's binary.
pub const TESTTOOL: &str = "escepine-testtool";

/// The path of a current `escepine-testtool` binary, building it once if needed.
pub fn testtool() -> PathBuf {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(locate_or_build).clone()
}

fn locate_or_build() -> PathBuf {
    if let Some(p) = std::env::var_os("ESCEPINE_TESTTOOL") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test>-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/");
    let bin = profile_dir.join(TESTTOOL);
    let workspace = workspace_root();
    if is_current(&bin, &workspace.join("tools/testkit")) {
        return bin;
    }
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a profile directory name");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "escepine-testkit",
        "--bin",
        TESTTOOL,
    ])
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
        .unwrap_or_else(|e| panic!("cannot run cargo to build {TESTTOOL}: {e}"));
    assert!(
        status.success() && bin.is_file(),
        "`cargo build -p escepine-testkit` did not produce {} ({status})",
        bin.display()
    );
    bin
}

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("runtime/ has a parent")
        .to_path_buf()
}

/// Whether `bin` exists and is newer than every file under `src_dir` (and its `Cargo.toml`).
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

/// A registered record for the testtool in `mode` (its first argument), at its absolute path,
/// with permissive schemas (the executor does not gate) and a 10 s timeout.
pub fn testtool_record(tool_id: &str, mode: &str) -> ToolRecord {
    ToolRecord {
        source: PathBuf::from("<test>"),
        tool_id: tool_id.to_string(),
        version: "1.0.0".parse().expect("a semver version"),
        description: format!("escepine-testtool in mode {mode}"),
        input_schema: json!({ "type": "object" }),
        output_schema: json!({ "type": "object" }),
        cedar_action: tool_id.to_string(),
        action_groups: Vec::new(),
        side_effect_class: SideEffectClass::ReadOnly,
        compensation: None,
        timeout_ms: 10_000,
        retry: RetryPolicy {
            max_attempts: 1,
            backoff_ms: 0,
        },
        on_failure: vec![FailureOutcome::Halt],
        endpoint: EndpointSpec {
            transport: Transport::StdioJson,
            command: testtool().display().to_string(),
            args: vec![mode.to_string()],
            sha256: None,
            resolved: ResolvedCommand::Path(testtool()),
        },
        secrets: Vec::new(),
        sandbox_profile: SandboxProfile {
            egress: Vec::new(),
            filesystem: Filesystem::Workspace,
        },
    }
}
