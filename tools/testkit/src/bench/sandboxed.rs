//! What the sandbox benchmarks share: the release build of a testkit binary, a minimal record
//! of a tool, the number of timed runs, one awaited provision-execute-destroy of the no-op, and
//! p50/p99 rows.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_contract::Transport;
use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_sandbox::Job;
use escepine_sandbox::SandboxSpec;

/// A fresh run directory for a bench's backends, in the backends' own default place
/// ([`escepine_sandbox::default_run_dir`]: a memory file system where there is one), removed
/// when dropped.
pub fn run_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(escepine_sandbox::default_run_dir()).expect("a run directory")
}

pub use super::smoke;

/// The timed runs per row: one in a [`smoke`] run, else `ESCEPINE_BENCH_ITERS`, else
/// `default`.
pub fn iters(default: usize) -> usize {
    if smoke() {
        return 1;
    }
    std::env::var("ESCEPINE_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The untimed runs before a row's timed ones: none in a [`smoke`] run.
pub fn warm_up(default: usize) -> usize {
    if smoke() {
        0
    } else {
        default
    }
}

/// The testkit's binary `name` (`var` overrides): a release build for a measuring run; in a
/// [`smoke`] run the build of the bench's own profile (`cargo test --benches` builds it with
/// the workspace), so no second, optimised build is made.
pub fn testkit_bin(name: &str, var: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(var) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the bench's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<bench>");
    let bin = profile_dir.join(name);
    if smoke() {
        assert!(
            bin.is_file(),
            "{} is not built: `cargo test --workspace --benches` builds it",
            bin.display()
        );
        return bin;
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target_dir = profile_dir.parent().expect("target/<profile>");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "escepine-testkit",
            "--bin",
            name,
        ])
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir)
        .status()
        .expect("cargo");
    assert!(status.success(), "building {name}");
    let release = target_dir.join("release").join(name);
    if release.is_file() {
        release
    } else {
        bin
    }
}

/// A read-only tool `id` running `binary` with `args` over `transport`, no secrets, no egress.
pub fn record_with(binary: &Path, transport: Transport, id: &str, args: &[&str]) -> ToolRecord {
    builder_with(binary, transport, id, args).registered()
}

/// The builder of [`record_with`].
pub fn builder_with(binary: &Path, transport: Transport, id: &str, args: &[&str]) -> RecordBuilder {
    RecordBuilder::new(id)
        .source("<bench>")
        .description("no-op")
        .transport(transport)
        .binary(binary)
        .args(args)
}

/// One row of a table: its name and the quantiles of its samples.
pub struct Row {
    /// The row's name as printed.
    pub name: String,
    /// The median sample.
    pub p50: Duration,
    /// The 99th-percentile sample (nearest rank).
    pub p99: Duration,
}

impl Row {
    /// `self.p50 / other.p50`.
    pub fn ratio(&self, other: &Row) -> f64 {
        self.p50.as_secs_f64() / other.p50.as_secs_f64()
    }

    /// `self.p99 / other.p99`.
    pub fn ratio_p99(&self, other: &Row) -> f64 {
        self.p99.as_secs_f64() / other.p99.as_secs_f64()
    }
}

/// The p50 and p99 of `samples` (nearest rank), printed as one line.
pub fn summarise(name: &str, mut samples: Vec<Duration>) -> Row {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    let row = Row {
        name: name.to_string(),
        p50: at(0.50),
        p99: at(0.99),
    };
    println!(
        "{:<48} p50 {:>8.2} ms   p99 {:>8.2} ms   (n={})",
        row.name,
        row.p50.as_secs_f64() * 1e3,
        row.p99.as_secs_f64() * 1e3,
        samples.len()
    );
    row
}

/// Provision a sandbox of `spec`, run the no-op in it, destroy it: the time of the three.
pub async fn provision_execute_destroy(ex: &SandboxExecutor, spec: &Arc<SandboxSpec>) -> Duration {
    let backend = ex.backend();
    let start = Instant::now();
    let mut sandbox = backend.provision(Arc::clone(spec)).await.unwrap();
    let job = Job {
        argv: vec![spec.program.display().to_string(), "noop".into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: None,
        stdin: "{}".into(),
        files: Default::default(),
        deadline: tokio::time::Instant::now() + Duration::from_secs(10),
        stdout_limit: 1 << 20,
        stderr_limit: 1 << 16,
        scrubber: Default::default(),
    };
    let out = backend.execute(&mut sandbox, job).await.unwrap();
    backend.destroy(sandbox).await;
    let took = start.elapsed();
    assert!(out.stdout.starts_with(b"{}"), "{}", out.stderr);
    took
}

/// One call of `rec` with `payload` and `egress` through `ex`, no secrets: its output.
///
/// # Errors
/// The executor's.
pub async fn call(
    ex: &dyn escepine_runtime::executor::Executor,
    rec: &ToolRecord,
    payload: &serde_json::Value,
    egress: &escepine_contract::EgressGrant,
    timeout: Duration,
) -> Result<serde_json::Value, escepine_runtime::executor::ExecError> {
    let secrets = std::collections::BTreeMap::new();
    let scrubber = escepine_runtime::scrub::Scrubber::default();
    let inv = escepine_runtime::executor::Invocation {
        tool: rec,
        payload,
        call_id: "bench",
        idempotency_key: "bench",
        attempt: 1,
        timeout,
        secrets: &secrets,
        scrubber: &scrubber,
        egress,
        files: &escepine_contract::WorkspaceFiles::new(),
        caller_token: None,
        trace: None,
    };
    Ok(ex.execute(inv).await?.output)
}

/// Whether the isolation tier `tier` (`namespaces`, `gvisor`) is measured in this run:
/// `ESCEPINE_BENCH_TIERS` lists the tiers wanted, separated by commas (all when unset). A
/// smoke run measures every tier.
pub fn tier_wanted(tier: &str) -> bool {
    if smoke() {
        return true;
    }
    std::env::var("ESCEPINE_BENCH_TIERS").map_or(true, |v| v.split(',').any(|t| t.trim() == tier))
}
