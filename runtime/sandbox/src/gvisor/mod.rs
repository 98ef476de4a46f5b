//! The gVisor tier: each sandbox an OCI bundle run by `runsc`, gVisor's runtime, whose
//! user-space kernel serves the tool's system calls — a host kernel bug in the tool's reach is
//! not an escape.
//!
//! The guarantees are the namespace tier's, kept by the same parts where they can be:
//! - the root is the same root image (the binary's copies, or an image's tree) attached
//!   read-only as the bundle's `rootfs`; the record's `read_only` paths are bound read-only;
//!   `/workspace` is a tmpfs of the tool's size, the only writable place;
//! - `runsc --network=none`: the sandbox has a loopback of its own and nothing else. With
//!   egress, the guest relays `127.0.0.1:3128` to the call's egress proxy, which stays on the
//!   host, bound to Cedar's URLs as on the other tier, through a Unix socket in a host
//!   directory bound into the sandbox (`--host-uds=open`) that the guest detaches before the
//!   tool starts;
//! - the memory bound is a memory cgroup of the runtime's, which `runsc` and everything it
//!   starts (the sentry, the gofer, the tool's memory inside the sentry) join before `runsc`
//!   executes; the kernel kills the sandbox at the bound and the call fails naming it;
//! - the tool gets the same environment (secrets over the control socket, never in the
//!   bundle), limits, no capabilities, `no_new_privs` and the same seccomp filter, from the
//!   guest ([`crate::init::guest`]);
//! - one fresh sandbox per attempt; a warm pool holds started containers whose guest waits for
//!   its job; destroying (or dropping) a sandbox kills every process of its cgroup, detaches
//!   its root and removes its bundle and `runsc` state.

mod bundle;
mod guest;

pub(crate) use guest::Guest;

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use escepine_egress::{EgressProxy, ProxyHandle, Resolver, SystemResolver};
use tokio::process::{Child, Command};

use crate::backend::{Attached, Job, JobOutput, Sandbox, SandboxBackend, SandboxSpec, Teardown};
use crate::cgroup::{self, Cgroup};
use crate::control_host::ControlHost;
use crate::job::{self, Running, Streams};
use crate::kept_images::KeptImages;
use crate::protocol::{FromInit, GuestSetup, CONTROL_SOCKET, PROXY_SOCKET};
use crate::{BoxFuture, SandboxError};

/// The Debian (and Ubuntu) package that installs `runsc`.
pub const RUNSC_PACKAGE: &str = "runsc";
/// How long a new sandbox's guest may take to connect and report ready.
const START_GRACE: Duration = Duration::from_secs(30);
/// How long destroy keeps killing a sandbox's processes.
const KILL_GRACE: Duration = Duration::from_secs(5);
/// The top-level directory of every gVisor root image, for the guest's mounts.
const GUEST_MOUNT_POINT: &[&str] = &[".escepine"];

/// Sandboxes run by gVisor's `runsc` (see the [module documentation](self)).
pub struct GvisorBackend {
    runsc: Result<PathBuf, String>,
    init: PathBuf,
    guest: OnceLock<Result<Arc<Guest>, String>>,
    resolver: Arc<dyn Resolver>,
    run_dir: PathBuf,
    memory: Result<cgroup::Parent, String>,
    images: KeptImages,
    platform: Option<String>,
    /// Set once the run directory's leftovers have been swept (on the first sandbox).
    swept: std::sync::Once,
}

impl std::fmt::Debug for GvisorBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GvisorBackend")
            .field("runsc", &self.runsc)
            .field("init", &self.init)
            .field("run_dir", &self.run_dir)
            .finish_non_exhaustive()
    }
}

/// `runsc` on `PATH`, or why there is none.
fn runsc_on_path() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("runsc"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "`runsc` (gVisor) is not on PATH: install the package `{RUNSC_PACKAGE}` \
                 (`apt-get install {RUNSC_PACKAGE}`) or name it with `--runsc PATH`"
            )
        })
}

impl GvisorBackend {
    /// A backend running `runsc` from `PATH` (or `runsc` when given), whose guest is the init
    /// [`crate::LinuxBackend::locate_init`] names; its sandboxes' bundles under `/run` when
    /// it exists (a tmpfs: the bundles and `runsc`'s state never reach a disk), else the
    /// system's temporary directory.
    ///
    /// # Errors
    /// [`SandboxError::InitNotDispatched`] as [`crate::LinuxBackend::new`]. A missing `runsc`
    /// is reported by every provisioning, naming the package.
    pub fn new(runsc: Option<PathBuf>) -> Result<Self, SandboxError> {
        let init = crate::LinuxBackend::locate_init()?;
        let runsc = match runsc {
            Some(p) if p.is_file() => Ok(p),
            Some(p) => Err(format!(
                "`{}` is not a file: install the package `{RUNSC_PACKAGE}` (gVisor) or name \
                 its `runsc` with `--runsc PATH`",
                p.display()
            )),
            None => runsc_on_path(),
        };
        Ok(Self {
            runsc,
            init,
            guest: OnceLock::new(),
            resolver: Arc::new(SystemResolver),
            run_dir: crate::run_dir::default_dir(),
            memory: cgroup::Parent::discover().map_err(|e| e.to_string()),
            images: KeptImages::with_extra_dirs(GUEST_MOUNT_POINT),
            platform: None,
            swept: std::sync::Once::new(),
        })
    }

    /// Run the guest from the init binary at `init` instead.
    pub fn with_init(mut self, init: impl Into<PathBuf>) -> Self {
        self.init = init.into();
        self.guest = OnceLock::new();
        self
    }

    /// Resolve names for the egress proxies with `resolver` (tests inject answers).
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Keep each sandbox's bundle, sockets and `runsc` state under `dir` (by default
    /// [`crate::default_run_dir`]).
    pub fn with_run_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.run_dir = dir.into();
        self
    }

    /// Removes from the run directory the gVisor sandbox directories
    /// (`escepine-gv-<pid>-<n>-<random>`) that runtimes killed with sandboxes alive left behind;
    /// returns those removed. The backend does this once by itself, in the background, when it
    /// provisions its first sandbox.
    ///
    /// A directory goes only when its runtime's pid is not in `/proc`, no socket is listening
    /// in it, it has stood unchanged for ten seconds and no mount point is at or below it.
    pub fn sweep_run_dir(&self) -> Vec<PathBuf> {
        crate::run_dir::sweep(&self.run_dir, crate::run_dir::Tier::Gvisor)
    }

    /// Use gVisor's `platform` (`ptrace`, the default, or `kvm`, `systrap` where supported).
    pub fn with_platform(mut self, platform: impl Into<String>) -> Self {
        self.platform = Some(platform.into());
        self
    }

    /// The `runsc` in use, or why there is none.
    pub fn runsc(&self) -> Result<&Path, SandboxError> {
        self.runsc
            .as_deref()
            .map_err(|why| SandboxError::Init(why.clone()))
    }

    /// The guest, located on first use (its libraries found by the ELF walk).
    async fn guest(&self) -> Result<Arc<Guest>, SandboxError> {
        if let Some(found) = self.guest.get() {
            return found.clone().map_err(SandboxError::Init);
        }
        let init = self.init.clone();
        let located = tokio::task::spawn_blocking(move || Guest::locate(&init))
            .await
            .map_err(|e| SandboxError::Protocol(format!("locating the guest: {e}")))?
            .map(Arc::new)
            .map_err(|e| e.to_string());
        self.guest
            .get_or_init(|| located)
            .clone()
            .map_err(SandboxError::Init)
    }

    async fn provision_inner(&self, spec: Arc<SandboxSpec>) -> Result<Sandbox, SandboxError> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let runsc = self.runsc()?.to_path_buf();
        let memory = self.memory.as_ref().map_err(|why| {
            SandboxError::Init(format!("cannot bound the sandbox's memory: {why}"))
        })?;
        let guest = self.guest().await?;
        let image = self.images.get(&spec).await?;
        self.swept.call_once(|| {
            crate::run_dir::sweep_in_background(self.run_dir.clone(), crate::run_dir::Tier::Gvisor);
        });
        let name = crate::run_dir::gvisor_name(std::process::id(), id)
            .map_err(|e| SandboxError::io("drawing the sandbox's name", e))?;
        let dir = self.run_dir.join(&name);
        let runsc_root = dir.join("state");
        let mut state = GvisorSandbox::default();
        state.dir = Some(dir.clone());
        let mkdir = |p: &Path| {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(p)
                .map_err(|e| SandboxError::io(format!("mkdir {}", p.display()), e))
        };
        mkdir(&dir)?;
        let sockets = dir.join("run");
        let bundle_dir = dir.join("bundle");
        let rootfs = bundle_dir.join("rootfs");
        for d in [&sockets, &bundle_dir, &rootfs] {
            mkdir(d)?;
        }
        attach_root(image.fd(), &rootfs)?;
        state.rootfs = Some(rootfs);
        let control_path = sockets.join(CONTROL_SOCKET);
        let listener = tokio::net::UnixListener::bind(&control_path)
            .map_err(|e| SandboxError::io(format!("bind {}", control_path.display()), e))?;
        if !spec.egress.is_empty() {
            let proxy = EgressProxy::start(
                &sockets.join(PROXY_SOCKET),
                spec.egress.clone(),
                Arc::clone(&self.resolver),
            )
            .await
            .map_err(|e| SandboxError::io("starting the egress proxy", e))?;
            state.proxy = Some(proxy);
        }
        let cgroup = memory.create(
            &format!("{}{}-gv{id}", cgroup::PREFIX, std::process::id()),
            spec.limits.memory_bytes,
        )?;
        let config = bundle::Bundle {
            guest: &guest,
            sockets: &sockets,
            binds: &spec.binds,
            limits: spec.limits,
            cgroup: cgroup.path(),
        }
        .spec("rootfs")?;
        let text = serde_json::to_vec(&config)
            .map_err(|e| SandboxError::Protocol(format!("the bundle's config.json: {e}")))?;
        std::fs::write(bundle_dir.join("config.json"), text)
            .map_err(|e| SandboxError::io("writing the bundle's config.json", e))?;
        let procs = std::ffi::CString::new(
            cgroup
                .dir()
                .join("cgroup.procs")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .map_err(|_| SandboxError::Protocol("a cgroup path with a NUL byte".into()))?;
        state.cgroup = Some(cgroup);
        let mut cmd = Command::new(&runsc);
        cmd.arg("--root")
            .arg(&runsc_root)
            .args(["--network=none", "--host-uds=open"]);
        if let Some(platform) = &self.platform {
            cmd.arg(format!("--platform={platform}"));
        }
        cmd.arg("run")
            .arg("--bundle")
            .arg(&bundle_dir)
            .arg(&name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: between fork and exec the closure makes only async-signal-safe system calls
        // (open, write, close) on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || join_cgroup(&procs));
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| SandboxError::io(format!("starting {}", runsc.display()), e))?;
        state.runsc = Some((runsc, runsc_root, name));
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(SandboxError::Misuse("runsc's pipes are missing"));
        };
        let accepted = tokio::select! {
            conn = listener.accept() => conn.map_err(|e| SandboxError::io("accepting the guest", e)),
            status = child.wait() => {
                let mut why = String::new();
                let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut why).await;
                Err(SandboxError::Init(format!(
                    "runsc {}: {}",
                    status.map_or_else(|e| e.to_string(), |s| s.to_string()),
                    why.trim()
                )))
            }
            () = tokio::time::sleep(START_GRACE) => Err(SandboxError::Init(format!(
                "the gVisor sandbox did not start within {} s",
                START_GRACE.as_secs()
            ))),
        };
        state.child = Some(child);
        let (stream, _) = accepted?;
        // One connection, ever: the guest's, made before the tool exists.
        drop(listener);
        let _ = std::fs::remove_file(&control_path);
        let mut control = ControlHost::new(stream);
        control
            .send(&GuestSetup {
                limits: spec.limits,
                proxy: state.proxy.is_some(),
            })
            .await?;
        match control.recv().await? {
            FromInit::Ready => {
                // The gofer holds the root open: the host's mount table lets go of it now.
                if let Some(rootfs) = state.rootfs.take() {
                    rustix::mount::unmount(&rootfs, rustix::mount::UnmountFlags::DETACH).map_err(
                        |e| SandboxError::io(format!("detaching {}", rootfs.display()), e.into()),
                    )?;
                }
            }
            FromInit::Failed { message } => return Err(SandboxError::Init(message)),
            other => {
                return Err(SandboxError::Protocol(format!(
                    "expected `ready`, got {other:?}"
                )))
            }
        }
        state.streams = Some(Streams {
            stdin: Box::pin(stdin),
            stdout: Box::pin(stdout),
            stderr: Box::pin(stderr),
            control,
        });
        Ok(Sandbox::new(id, spec, Box::new(state)))
    }
}

/// In `runsc`'s process before it executes: join the sandbox's memory cgroup (`0`: this
/// process), so that everything it starts is bounded.
fn join_cgroup(procs: &std::ffi::CStr) -> io::Result<()> {
    let fd = rustix::fs::open(
        procs,
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    rustix::io::write(&fd, b"0")?;
    Ok(())
}

/// Attaches a read-only clone of the root image at `rootfs`.
fn attach_root(image: &std::os::fd::OwnedFd, rootfs: &Path) -> Result<(), SandboxError> {
    use rustix::mount::{MoveMountFlags, OpenTreeFlags};
    let clone = rustix::mount::open_tree(
        image,
        "",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_EMPTY_PATH
            | OpenTreeFlags::AT_RECURSIVE,
    )
    .map_err(|e| SandboxError::io("cloning the root image", e.into()))?;
    rustix::mount::move_mount(
        &clone,
        "",
        rustix::fs::CWD,
        rootfs,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .map_err(|e| {
        SandboxError::io(
            format!("attaching the root at {}", rootfs.display()),
            e.into(),
        )
    })
}

/// Everything one gVisor sandbox holds on the host; dropping it kills and releases all of it.
#[derive(Default)]
struct GvisorSandbox {
    dir: Option<PathBuf>,
    /// `runsc`, its state directory and the container's name, for `runsc delete`.
    runsc: Option<(PathBuf, PathBuf, String)>,
    rootfs: Option<PathBuf>,
    child: Option<Child>,
    streams: Option<Streams>,
    proxy: Option<ProxyHandle>,
    cgroup: Option<Cgroup>,
}

impl Running for GvisorSandbox {
    fn kill(&self) {
        if let Some(cgroup) = &self.cgroup {
            // One round now (the caller is on an async worker); destroy finishes the job.
            cgroup.kill_all(Duration::ZERO);
        }
    }

    fn memory_exhausted(&self) -> bool {
        self.cgroup.as_ref().is_some_and(|c| c.oom_kills() > 0)
    }

    fn proxy(&self) -> Option<&ProxyHandle> {
        self.proxy.as_ref()
    }
}

impl GvisorSandbox {
    /// Kills every process, waits for `runsc`, and releases the root, the cgroup and the
    /// directory; what did not go cleanly, in words.
    fn release(&mut self, patience: Duration) -> Vec<String> {
        let mut problems = Vec::new();
        self.streams.take();
        if let Some(cgroup) = &self.cgroup {
            if !cgroup.kill_all(patience) {
                problems.push(format!(
                    "processes of {} survived SIGKILL",
                    cgroup.dir().display()
                ));
            }
        }
        let ended = self
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = child.try_wait();
        }
        // Killed rather than ended: `runsc` did not remove its cgroups and state, so its
        // `delete` does.
        if let (false, Some((runsc, root, name))) = (ended, self.runsc.take()) {
            let deleted = std::process::Command::new(&runsc)
                .arg("--root")
                .arg(&root)
                .args(["delete", "--force", &name])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if let Err(e) = deleted {
                problems.push(format!("runsc delete {name}: {e}"));
            }
        }
        self.proxy.take();
        if let Some(rootfs) = self.rootfs.take() {
            if let Err(e) = rustix::mount::unmount(&rootfs, rustix::mount::UnmountFlags::DETACH) {
                problems.push(format!("cannot detach {}: {e}", rootfs.display()));
            }
        }
        if let Some(cgroup) = self.cgroup.take() {
            if let Err(e) = cgroup.remove(patience) {
                problems.push(format!("cannot remove {}: {e}", cgroup.dir().display()));
            }
        }
        if let Some(dir) = self.dir.take() {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => problems.push(format!("cannot remove {}: {e}", dir.display())),
            }
        }
        problems
    }
}

impl Drop for GvisorSandbox {
    fn drop(&mut self) {
        if self.dir.is_none() {
            return;
        }
        // Not destroyed (a cancelled attempt, a pool dropped): release off this thread.
        let mut rest = std::mem::take(self);
        let _ = std::thread::Builder::new()
            .name("escepine-gv-rm".into())
            .spawn(move || {
                for p in rest.release(KILL_GRACE) {
                    tracing::warn!(problem = %p, "gVisor sandbox dropped");
                }
            });
    }
}

fn streams(sandbox: &mut Sandbox) -> Result<(&GvisorSandbox, Streams), SandboxError> {
    sandbox.mark_used()?;
    let state = sandbox
        .state_mut::<GvisorSandbox>()
        .ok_or(SandboxError::Misuse("not a gVisor sandbox"))?;
    let streams = state
        .streams
        .take()
        .ok_or(SandboxError::Misuse("the sandbox's pipes are gone"))?;
    Ok((state, streams))
}

async fn destroy_inner(sandbox: Sandbox) -> Teardown {
    let mut teardown = Teardown::default();
    let mut state = match sandbox.into_state::<GvisorSandbox>() {
        Ok(s) => s,
        Err(other) => {
            teardown
                .problems
                .push("not a gVisor sandbox; dropped".to_string());
            drop(other);
            return teardown;
        }
    };
    teardown.memory_exhausted = state.memory_exhausted();
    if let Some(proxy) = state.proxy.take() {
        teardown.egress_requests = proxy.requests();
        teardown.egress_refusals = proxy.shutdown().await;
    }
    let mut rest = std::mem::take(&mut *state);
    let problems = tokio::task::spawn_blocking(move || rest.release(KILL_GRACE))
        .await
        .unwrap_or_else(|e| vec![format!("releasing the sandbox: {e}")]);
    teardown.problems.extend(problems);
    for p in &teardown.problems {
        tracing::warn!(problem = %p, "gVisor sandbox teardown");
    }
    teardown
}

impl SandboxBackend for GvisorBackend {
    fn name(&self) -> &'static str {
        "gvisor"
    }

    fn provision(&self, spec: Arc<SandboxSpec>) -> BoxFuture<'_, Result<Sandbox, SandboxError>> {
        Box::pin(self.provision_inner(spec))
    }

    fn execute<'a>(
        &'a self,
        sandbox: &'a mut Sandbox,
        job: Job,
    ) -> BoxFuture<'a, Result<JobOutput, SandboxError>> {
        Box::pin(async move {
            let (state, streams) = streams(sandbox)?;
            let (ran, reads) = job::execute(state, streams, job).await;
            sandbox.job_finished(Box::new(reads), ran.is_ok());
            ran
        })
    }

    fn attach<'a>(
        &'a self,
        sandbox: &'a mut Sandbox,
        job: Job,
    ) -> BoxFuture<'a, Result<Attached, SandboxError>> {
        Box::pin(async move {
            let (_, streams) = streams(sandbox)?;
            job::attach(streams, job).await
        })
    }

    fn destroy(&self, sandbox: Sandbox) -> BoxFuture<'_, Teardown> {
        Box::pin(destroy_inner(sandbox))
    }

    fn is_alive(&self, sandbox: &mut Sandbox) -> bool {
        sandbox
            .state_mut::<GvisorSandbox>()
            .and_then(|s| s.child.as_mut())
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}
