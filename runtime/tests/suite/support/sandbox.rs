//! Helpers of the sandbox tests: the `escepine-hostile` tool, records for it (on its binary or
//! on an image root, [`Root`]), sandbox executors with an injected resolver, and the
//! host-cleanliness check ([`HostSnapshot`], which a test runs under
//! [`crate::support::host::exclusive`]).
//!
//! [`hostile`] finds `escepine-hostile` (tools/testkit) with [`escepine_testkit::bins`]
//! (`ESCEPINE_HOSTILE` names another). The sandboxes' init is this test program (dispatched in
//! `main.rs`).

use escepine_testkit::{bins, sample_images};

pub use escepine_testkit::bins::workspace_root;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use escepine_contract::Isolation;
use escepine_contract::{EgressGrant, Transport};
use escepine_egress::Resolver;
use escepine_ledger::store::BoxFuture;
use escepine_registry::egress::EgressEntry;
use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::executor::{Attempted, ExecError, Execution, Executor, Invocation};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_sandbox::ToolImage;
use escepine_sandbox::{GvisorBackend, LinuxBackend};
use serde_json::Value;

pub use escepine_testkit::sandbox_host::{
    sandbox_cgroups_of, sandbox_processes, uid_of, UID_RANGE,
};

/// The path of a current `escepine-hostile`.
pub fn hostile() -> PathBuf {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(|| bins::path(bins::HOSTILE)).clone()
}

/// The path of a current `escepine-mcp-probe` (an MCP server that reports where it runs).
pub fn mcp_probe() -> PathBuf {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(|| bins::path(bins::MCP_PROBE)).clone()
}

/// The path of a current `escepine-mcp-demo` (the workspace's rmcp demo server).
pub fn mcp_demo() -> PathBuf {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(|| bins::path(bins::MCP_DEMO)).clone()
}

/// A record speaking `mcp-stdio` to `binary` with `args`, with permissive schemas.
pub fn mcp_record(tool_id: &str, binary: &Path, args: &[&str]) -> ToolRecord {
    mcp_builder(tool_id, binary, args).registered()
}

/// The builder of [`mcp_record`].
pub fn mcp_builder(tool_id: &str, binary: &Path, args: &[&str]) -> RecordBuilder {
    builder_for(tool_id, binary, args).transport(Transport::McpStdio)
}

/// The path of a current `escepine-testtool`.
pub fn testtool() -> PathBuf {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(|| bins::path(bins::TESTTOOL)).clone()
}

/// The host path of the sandboxes' init: this test program (the backend starts
/// `/proc/self/exe`).
pub fn init() -> PathBuf {
    std::env::current_exe().expect("this test program has a path")
}

/// A record whose endpoint is `binary` with `args`, with permissive schemas.
pub fn record_for(tool_id: &str, binary: &Path, args: &[&str]) -> ToolRecord {
    builder_for(tool_id, binary, args).registered()
}

/// The builder of [`record_for`]: a 20 s timeout, the rest the builder's defaults.
pub fn builder_for(tool_id: &str, binary: &Path, args: &[&str]) -> RecordBuilder {
    RecordBuilder::new(tool_id)
        .description(&format!("{} {}", binary.display(), args.join(" ")))
        .timeout_ms(20_000)
        .binary(binary)
        .args(args)
}

/// A record for `escepine-hostile` in `mode`, on its binary root.
pub fn hostile_record(tool_id: &str, mode: &str) -> ToolRecord {
    Root::Binary.hostile_record(tool_id, mode)
}

/// Where the hostile tool's sandbox root comes from: the same scenarios run on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// The host binary and its libraries.
    Binary,
    /// An OCI image holding the same binary and its libraries, verified and unpacked by the
    /// image store.
    Image,
}

impl Root {
    /// A record for `escepine-hostile` in `mode` on this root.
    pub fn hostile_record(self, tool_id: &str, mode: &str) -> ToolRecord {
        self.hostile_builder(tool_id, mode).registered()
    }

    /// The builder of [`Root::hostile_record`]: on an image, the image's `Entrypoint` runs.
    pub fn hostile_builder(self, tool_id: &str, mode: &str) -> RecordBuilder {
        let builder = builder_for(tool_id, &hostile(), &[mode]);
        match self {
            Root::Binary => builder,
            Root::Image => builder.image(&hostile_image().reference),
        }
    }

    /// A sandbox executor over [`backend`] and [`gvisor_backend`] with the images this root's
    /// records name.
    pub fn executor(self, resolver: MapResolver, run_dir: &Path) -> SandboxExecutor {
        self.with_images(
            SandboxExecutor::with_backend(Arc::new(backend(resolver.clone(), run_dir)))
                .with_gvisor(Arc::new(gvisor_backend(resolver, run_dir))),
        )
    }

    /// `executor` with the images this root's records name (none on the binary root).
    pub fn with_images(self, executor: SandboxExecutor) -> SandboxExecutor {
        match self {
            Root::Binary => executor,
            Root::Image => executor.with_image(hostile_image().clone()),
        }
    }
}

/// Where the hostile tool runs: its root and its isolation tier. The same scenarios run on every
/// combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Where the sandbox's root comes from.
    pub root: Root,
    /// The record's `sandbox_profile.isolation`.
    pub tier: Isolation,
}

impl Target {
    /// The tool on `root`, on the namespace tier.
    pub const fn namespaces(root: Root) -> Self {
        Self {
            root,
            tier: Isolation::Namespaces,
        }
    }

    /// The tool on `root`, on the gVisor tier.
    pub const fn gvisor(root: Root) -> Self {
        Self {
            root,
            tier: Isolation::Gvisor,
        }
    }

    /// The same root on `tier`.
    pub const fn with_tier(self, tier: Isolation) -> Self {
        Self { tier, ..self }
    }

    /// A record for `escepine-hostile` in `mode` on this root and tier.
    pub fn hostile_record(self, tool_id: &str, mode: &str) -> ToolRecord {
        self.hostile_builder(tool_id, mode).registered()
    }

    /// The builder of [`Target::hostile_record`].
    pub fn hostile_builder(self, tool_id: &str, mode: &str) -> RecordBuilder {
        self.root
            .hostile_builder(tool_id, mode)
            .isolation(self.tier)
    }

    /// A sandbox executor over both tiers' backends with the images this root's records name.
    pub fn executor(self, resolver: MapResolver, run_dir: &Path) -> SandboxExecutor {
        self.root.executor(resolver, run_dir)
    }

    /// `executor` with the images this root's records name.
    pub fn with_images(self, executor: SandboxExecutor) -> SandboxExecutor {
        self.root.with_images(executor)
    }
}

/// Answers from a fixed map (names not in it do not resolve).
#[derive(Debug, Default, Clone)]
pub struct MapResolver(pub BTreeMap<String, Vec<std::net::IpAddr>>);

impl Resolver for MapResolver {
    fn resolve(&self, host: &str, port: u16) -> BoxFuture<'_, io::Result<Vec<SocketAddr>>> {
        let found = self.0.get(host).cloned();
        Box::pin(async move {
            found
                .map(|ips| {
                    ips.into_iter()
                        .map(|ip| SocketAddr::new(ip, port))
                        .collect()
                })
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such name"))
        })
    }
}

/// The Linux backend with the tests' init and `resolver`, its proxy sockets under `run_dir`.
pub fn backend(resolver: MapResolver, run_dir: &Path) -> LinuxBackend {
    LinuxBackend::new()
        .expect("this test program dispatches the sandbox init")
        .with_resolver(Arc::new(resolver))
        .with_run_dir(run_dir)
}

/// The gVisor backend (`runsc` from `PATH`) with the tests' init and `resolver`, its bundles,
/// sockets and `runsc` state under `run_dir`.
pub fn gvisor_backend(resolver: MapResolver, run_dir: &Path) -> GvisorBackend {
    GvisorBackend::new(None)
        .expect("this test program dispatches the sandbox init")
        .with_resolver(Arc::new(resolver))
        .with_run_dir(run_dir)
}

/// A sandbox executor over [`backend`], for the hostile tool on its binary root.
pub fn executor(resolver: MapResolver, run_dir: &Path) -> SandboxExecutor {
    Root::Binary.executor(resolver, run_dir)
}

/// Where the hostile tool sits in its image.
const HOSTILE_IN_IMAGE: &str = "/usr/local/bin/escepine-hostile";

/// The hostile tool's image: built as an OCI layout, verified and unpacked by the image store
/// once per test process, as the runtime does at start-up.
fn hostile_image() -> &'static ToolImage {
    static IMAGE: OnceLock<ToolImage> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let dir = removed_at_exit(tempfile::tempdir().expect("tempdir"));
        let built =
            sample_images::binary_image(dir.path(), "hostile", &hostile(), HOSTILE_IN_IMAGE);
        let reference = built.reference();
        let store = escepine_oci::ImageStore::open(dir.path().join("cache")).expect("a store");
        let image = escepine_contract::ImageRef::parse(&reference).expect("a pinned reference");
        // Off the test's own runtime: a thread with a runtime of its own.
        let (tool, _) = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
                .block_on(escepine_runtime::images::ensure(&image, None, &store))
        })
        .join()
        .expect("the fetch thread")
        .expect("the hostile image unpacks");
        tool
    })
}

/// The directory of a value that lives as long as the test process: a static is never
/// dropped, so the directory is removed by an `atexit` handler (the test harness's `main`
/// returns or calls `exit`, both of which run it).
fn removed_at_exit(dir: tempfile::TempDir) -> &'static tempfile::TempDir {
    static DIRS: Mutex<Vec<&'static tempfile::TempDir>> = Mutex::new(Vec::new());
    static REGISTERED: Once = Once::new();
    extern "C" fn remove_all() {
        if let Ok(mut dirs) = DIRS.lock() {
            for dir in dirs.drain(..) {
                let _ = std::fs::remove_dir_all(dir.path());
            }
        }
    }
    let dir: &'static tempfile::TempDir = Box::leak(Box::new(dir));
    REGISTERED.call_once(|| {
        // SAFETY: `remove_all` is an `extern "C"` function with no arguments, as `atexit` asks.
        unsafe { libc::atexit(remove_all) };
    });
    DIRS.lock().unwrap_or_else(|e| e.into_inner()).push(dir);
    dir
}

/// One attempt of `record` with `payload`, `secrets` and `egress`.
pub async fn run(
    executor: &dyn Executor,
    record: &ToolRecord,
    payload: Value,
    secrets: &BTreeMap<String, String>,
    egress: &[EgressEntry],
    timeout: Duration,
) -> Result<Execution, ExecError> {
    attempt(executor, record, payload, secrets, egress, timeout)
        .await
        .result
}

/// [`run`] with the attempt's egress evidence (what its proxy admitted and refused).
pub async fn attempt(
    executor: &dyn Executor,
    record: &ToolRecord,
    payload: Value,
    secrets: &BTreeMap<String, String>,
    egress: &[EgressEntry],
    timeout: Duration,
) -> Attempted {
    let grant = EgressGrant::from(egress);
    attempt_granted(executor, record, payload, secrets, &grant, timeout).await
}

/// One attempt of `record` with `payload`, `secrets` and the whole `egress` grant (entries,
/// authorized origins, public addresses), with its egress evidence.
pub async fn attempt_granted(
    executor: &dyn Executor,
    record: &ToolRecord,
    payload: Value,
    secrets: &BTreeMap<String, String>,
    egress: &EgressGrant,
    timeout: Duration,
) -> Attempted {
    let inv = Invocation {
        tool: record,
        payload: &payload,
        call_id: "call-sandbox",
        idempotency_key: "idem-sandbox",
        attempt: 1,
        timeout,
        secrets,
        scrubber: &escepine_runtime::scrub::Scrubber::new(secrets.values().map(String::as_str)),
        egress,
        files: &escepine_contract::WorkspaceFiles::new(),
        caller_token: None,
        trace: None,
    };
    executor.attempt(inv).await
}

/// What the host looked like before: compared by [`HostSnapshot::assert_clean`].
#[derive(Debug)]
pub struct HostSnapshot {
    mounts: usize,
    children: BTreeSet<u32>,
    run_dir: PathBuf,
}

pub use escepine_testkit::sandbox_host::{children_of, is_zygote, zygotes};

/// Live children of this process, zygotes excluded.
pub fn children() -> BTreeSet<u32> {
    children_of(std::process::id())
        .into_iter()
        .filter(|p| !is_zygote(*p))
        .collect()
}

/// Live children of this process's zygotes: each is the PID 1 of a live sandbox.
pub fn pid1s() -> BTreeSet<u32> {
    children_of(std::process::id())
        .into_iter()
        .filter(|p| is_zygote(*p))
        .flat_map(children_of)
        .collect()
}

fn mount_count() -> usize {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn sandbox_dirs(run_dir: &Path) -> Vec<PathBuf> {
    escepine_testkit::sandbox_host::named_in(
        run_dir,
        escepine_testkit::sandbox_host::SANDBOX_CGROUP,
    )
}

impl HostSnapshot {
    /// The host now, with sandbox directories expected under `run_dir`.
    pub fn take(run_dir: &Path) -> Self {
        Self {
            mounts: mount_count(),
            children: children(),
            run_dir: run_dir.to_path_buf(),
        }
    }

    /// Asserts that no sandbox process, child process, mount, directory or memory cgroup was
    /// left behind
    /// (allowing a few seconds for reaping and for teardowns still running on the runtime).
    pub async fn assert_clean(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let Some(left) = self.left_behind() else {
                return;
            };
            if Instant::now() > deadline {
                panic!("{left}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// As [`HostSnapshot::assert_clean`], at once: nothing is waited for.
    pub fn assert_clean_now(&self) {
        if let Some(left) = self.left_behind() {
            panic!("{left}");
        }
    }

    /// What the sandboxes left behind since the snapshot, said in a sentence; `None` if nothing.
    fn left_behind(&self) -> Option<String> {
        let procs = sandbox_processes();
        let extra: Vec<u32> = children().difference(&self.children).copied().collect();
        let pid1s = pid1s();
        let mounts = mount_count();
        let dirs = sandbox_dirs(&self.run_dir);
        let cgroups = sandbox_cgroups_of(std::process::id());
        if procs.is_empty()
            && extra.is_empty()
            && pid1s.is_empty()
            && mounts == self.mounts
            && dirs.is_empty()
            && cgroups.is_empty()
        {
            return None;
        }
        Some(format!(
            "left behind: sandbox processes {procs:?}, children {extra:?}, PIDs 1 {pid1s:?}, \
             mounts {} (before {}), directories {dirs:?}, cgroups {cgroups:?}",
            mounts, self.mounts
        ))
    }
}

/// Tests of the invoking module, one per tier: each `async fn name(tier: Isolation)` becomes
/// `on_namespaces::name` and `on_gvisor::name`.
macro_rules! on_tiers {
    ($($name:ident),* $(,)?) => {
        mod on_namespaces {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(escepine_contract::Isolation::Namespaces).await
                }
            )*
        }
        mod on_gvisor {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(escepine_contract::Isolation::Gvisor).await
                }
            )*
        }
    };
}
pub(crate) use on_tiers;
