//! Which executor runs the tools: the sandbox when it works on this machine, else the process
//! executor. The choice is made here and nowhere else, and the program prints it.
//!
//! Tool binaries (`escepine-catalog`, and `escepine-sandbox-init` for the sandbox) are workspace
//! binaries that a `cargo run -p escepine-example-research` does not build by itself: when one
//! is missing, or older than its package's sources, [`ensure_binaries`] builds it with cargo, in
//! the same target directory and profile as this program.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use escepine_runtime::executor::{Executor, Invocation, ProcessExecutor};
use escepine_runtime::sandbox::SandboxExecutor;
use registry_build::Registry;
use serde_json::json;

/// What `--executor` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Choice {
    /// The sandbox if a probe succeeds on this machine, else the process executor.
    Auto,
    /// The sandbox, or fail.
    Sandbox,
    /// The process executor (no isolation beyond a fresh process per attempt).
    Process,
}

/// The executor chosen, with a line saying which and why.
pub struct Chosen {
    /// The executor.
    pub executor: Arc<dyn Executor>,
    /// `sandbox` or `process`.
    pub name: &'static str,
    /// Why this one.
    pub why: String,
}

/// The workspace this example belongs to.
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = here.join("../..");
    root.canonicalize().unwrap_or(root)
}

/// The directory this program was built into (`target/<profile>`), where the tool binaries of
/// the same build are looked for.
pub fn bin_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this program: {e}"))?;
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("{} has no parent directory", exe.display()))
}

/// Make sure `escepine-catalog` (and, unless only the process executor is wanted,
/// `escepine-sandbox-init`) exist beside this program and are current, building them if not.
///
/// # Errors
/// Cargo is unavailable or the build fails.
pub fn ensure_binaries(bin_dir: &Path, choice: Choice) -> Result<Vec<String>, String> {
    let root = workspace_root();
    let mut wanted = vec![(
        "escepine-catalog",
        "escepine-catalog",
        root.join("tools/catalog"),
    )];
    if choice != Choice::Process {
        wanted.push((
            escepine_runtime::sandbox::INIT_BIN,
            "escepine-runtime",
            root.join("runtime"),
        ));
    }
    let stale: Vec<_> = wanted
        .into_iter()
        .filter(|(bin, _, package)| !is_current(&bin_dir.join(bin), package))
        .collect();
    if stale.is_empty() {
        return Ok(Vec::new());
    }
    let target_dir = bin_dir
        .parent()
        .ok_or_else(|| format!("{} is not inside a target directory", bin_dir.display()))?;
    let profile = bin_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{} names no profile", bin_dir.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.arg("build").arg("--quiet");
    for (bin, package, _) in &stale {
        cmd.args(["-p", package, "--bin", bin]);
    }
    cmd.arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
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
    let names: Vec<String> = stale.iter().map(|(b, _, _)| b.to_string()).collect();
    println!(
        "building the tool binaries {} (profile {profile}) …",
        names.join(", ")
    );
    let status = cmd.status().map_err(|e| {
        format!(
            "cannot run cargo ({}) to build {}: {e}",
            Path::new(&cargo).display(),
            names.join(", ")
        )
    })?;
    if !status.success() {
        return Err(format!(
            "`cargo build` of {} failed ({status})",
            names.join(", ")
        ));
    }
    Ok(names)
}

/// Whether `bin` exists and is newer than every source of `package`.
fn is_current(bin: &Path, package: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(built) = modified(bin) else {
        return false;
    };
    let mut newest: Option<SystemTime> = modified(&package.join("Cargo.toml"));
    let mut stack = vec![package.join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
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

/// Choose the executor.
///
/// With [`Choice::Auto`] the sandbox is probed once: `deliverable_assemble` — a pure tool, with
/// no egress, no secrets and nothing written — is run on a fixed payload in a fresh sandbox. This
/// probe is not a governed call (no agent asked for it, and nothing it returns is used); it only
/// tells whether sandboxes can be provisioned here.
pub async fn choose(choice: Choice, bin_dir: &Path, registry: &Registry) -> Result<Chosen, String> {
    let process = || {
        ProcessExecutor::new()
            .with_bin_dir(bin_dir)
            .with_workspace_root(workspace_root())
    };
    if choice == Choice::Process {
        return Ok(Chosen {
            executor: Arc::new(process()),
            name: "process",
            why: "asked for with --executor process".into(),
        });
    }
    let sandbox = match SandboxExecutor::new() {
        Ok(s) => s.with_process_executor(process()),
        Err(e) if choice == Choice::Auto => {
            return Ok(Chosen {
                executor: Arc::new(process()),
                name: "process",
                why: format!("the sandbox is unavailable: {e}"),
            })
        }
        Err(e) => return Err(format!("the sandbox is unavailable: {e}")),
    };
    match probe(&sandbox, registry).await {
        Ok(()) => Ok(Chosen {
            executor: Arc::new(sandbox),
            name: "sandbox",
            why: "a probe sandbox ran on this machine".into(),
        }),
        Err(e) if choice == Choice::Auto => Ok(Chosen {
            executor: Arc::new(process()),
            name: "process",
            why: format!("the sandbox does not work on this machine ({e})"),
        }),
        Err(e) => Err(format!("the sandbox does not work on this machine: {e}")),
    }
}

async fn probe(sandbox: &SandboxExecutor, registry: &Registry) -> Result<(), String> {
    let record = registry
        .get("deliverable_assemble")
        .ok_or("the catalog has no deliverable_assemble")?;
    let payload = json!({"format": "json", "include_evidence_index": false,
                         "title": "sandbox probe", "sources": []});
    let secrets = BTreeMap::new();
    let inv = Invocation {
        tool: record,
        payload: &payload,
        call_id: "sandbox-probe",
        idempotency_key: "sandbox-probe",
        attempt: 1,
        timeout: Duration::from_secs(20),
        secrets: &secrets,
        scrubber: &escepine_runtime::scrub::Scrubber::new(secrets.values().map(String::as_str)),
        egress: &[],
    };
    let out = sandbox.execute(inv).await.map_err(|e| e.to_string())?;
    if out.output.get("content").is_some() {
        Ok(())
    } else {
        Err("the probe returned an unexpected output".into())
    }
}
