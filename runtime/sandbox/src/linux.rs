//! The Linux backend, host side: has the zygote (`escepine-sandbox-init --server`, one per
//! backend) clone the PID 1 of each sandbox, speaks the control protocol, runs the
//! call's egress proxy, and kills everything on destroy, on timeout and on drop.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

use super::backend::{Attached, Job, JobOutput, Sandbox, SandboxBackend, SandboxSpec, Teardown};
use super::cgroup::{self, Cgroup};
use super::control_host::ControlHost;
use super::job::{self, Running, Streams};
use super::kept_images::KeptImages;
use super::netns::NetnsPool;
use super::protocol::{FromInit, Provision, PROXY_SOCKET};
use super::scm;
use super::slots::{SlotGuard, Slots};
use super::SandboxError;
use crate::BoxFuture;
use escepine_egress::{EgressProxy, ProxyHandle, Resolver, SystemResolver};

/// The name of the sandbox crate's init binary (for programs that cannot dispatch).
pub const INIT_BIN: &str = "escepine-sandbox-init";
/// The program itself, as the kernel knows it: what the zygote is started from by default (the
/// running image, even if its file was replaced since).
pub const SELF_EXE: &str = "/proc/self/exe";
/// First outside uid (and gid) of sandboxes when the runtime runs as root.
pub const DEFAULT_UID_BASE: u32 = 100_000;
/// How long destroy waits for PID 1 to end after the kill.
const REAP_GRACE: Duration = Duration::from_secs(5);
/// How long a sandbox's cgroup may stay busy after its processes were seen to end.
const CGROUP_GRACE: Duration = Duration::from_secs(5);

/// Sandboxes from Linux namespaces, on this machine, with nothing installed: the program that
/// starts them is their init (see the [crate documentation](crate)).
///
/// The runtime must be root (as CI is): it makes each spec's root image as a tmpfs of its own and
/// each sandbox's memory cgroup below its own cgroup; without either, provisioning fails and
/// names what is missing.
pub struct LinuxBackend {
    init: PathBuf,
    /// The zygote that clones each sandbox's PID 1 (started on first use, restarted if it
    /// died).
    zygote: std::sync::Mutex<Option<Zygote>>,
    resolver: Arc<dyn Resolver>,
    run_dir: PathBuf,
    uid_base: u32,
    /// The slot table, or why it could not be set up (reported by every provisioning).
    slots: Result<Arc<Slots>, String>,
    /// The runtime's memory cgroup, below which each sandbox gets its own, or why there is
    /// none (reported by every provisioning: no sandbox runs without its memory bound).
    memory: Result<cgroup::Parent, String>,
    /// The root image of each program provisioned lately.
    images: KeptImages,
    /// Network namespaces made ahead of demand and given back emptied (started on the first
    /// provision).
    netns: std::sync::OnceLock<Option<NetnsPool>>,
    /// Set once the run directory's leftovers have been swept (on the first sandbox with
    /// egress).
    swept: std::sync::Once,
}

impl std::fmt::Debug for LinuxBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxBackend")
            .field("init", &self.init)
            .field("run_dir", &self.run_dir)
            .field("uid_base", &self.uid_base)
            .finish_non_exhaustive()
    }
}

impl LinuxBackend {
    /// A backend whose zygote is this very program ([`SELF_EXE`]), started as its init
    /// ([`crate::init::dispatch`]), or the init binary `$ESCEPINE_SANDBOX_INIT` names; the
    /// system resolver for its proxies, and the system's temporary directory for proxy sockets.
    ///
    /// # Errors
    /// [`SandboxError::InitNotDispatched`] when this program did not call
    /// [`crate::init::dispatch`] and no init binary is named.
    pub fn new() -> Result<Self, SandboxError> {
        Ok(Self::with_init(Self::locate_init()?))
    }

    /// A backend using the init binary at `init`.
    pub fn with_init(init: impl Into<PathBuf>) -> Self {
        Self {
            init: init.into(),
            zygote: std::sync::Mutex::new(None),
            resolver: Arc::new(SystemResolver),
            run_dir: super::run_dir::default_dir(),
            uid_base: DEFAULT_UID_BASE,
            slots: if rustix::process::geteuid().is_root() {
                // Root maps each sandbox to its own outside uid: unique on the machine.
                Slots::machine_wide(None)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            } else {
                Ok(Arc::new(Slots::process_local()))
            },
            memory: cgroup::Parent::discover().map_err(|e| e.to_string()),
            images: KeptImages::default(),
            netns: std::sync::OnceLock::new(),
            swept: std::sync::Once::new(),
        }
    }

    /// Resolve names for the egress proxies with `resolver` (tests inject answers).
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Keep each sandbox's proxy socket directory (`escepine-sbx-<pid>-<n>-<random>`) under
    /// `dir` (by default [`crate::default_run_dir`]).
    pub fn with_run_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.run_dir = dir.into();
        self
    }

    /// Map sandboxes' uid 0 to `base + slot` when running as root (default
    /// `DEFAULT_UID_BASE`; 60,000 ids from there must belong to nobody).
    pub fn with_uid_base(mut self, base: u32) -> Self {
        self.uid_base = base;
        self
    }

    /// The init binary in use.
    pub fn init_path(&self) -> &Path {
        &self.init
    }

    /// The directory holding proxy socket directories.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Removes from the run directory the sandbox directories
    /// (`escepine-sbx-<pid>-<n>-<random>`) that runtimes killed with sandboxes alive left
    /// behind; returns those removed. The backend does this once by itself, in the background,
    /// when it provisions its first sandbox with egress.
    ///
    /// A directory goes only when its runtime's pid is not in `/proc`, no socket is listening
    /// at its `proxy.sock`, it has not changed for ten seconds, and it holds no directory
    /// (nothing is followed through a symbolic link or below a directory).
    pub fn sweep_run_dir(&self) -> Vec<PathBuf> {
        super::run_dir::sweep(&self.run_dir, super::run_dir::Tier::Namespaces)
    }

    /// The init [`LinuxBackend::new`] starts: `$ESCEPINE_SANDBOX_INIT` when set (an
    /// `escepine-sandbox-init` binary), else this program itself ([`SELF_EXE`]) when it called
    /// [`crate::init::dispatch`] first in `main`. Nothing is looked for on disk.
    ///
    /// # Errors
    /// [`SandboxError::InitNotDispatched`] when neither holds: starting this program as the
    /// zygote would run its own `main` again.
    pub fn locate_init() -> Result<PathBuf, SandboxError> {
        if let Some(p) = std::env::var_os("ESCEPINE_SANDBOX_INIT") {
            return Ok(PathBuf::from(p));
        }
        if crate::init::dispatched() {
            Ok(PathBuf::from(SELF_EXE))
        } else {
            Err(SandboxError::InitNotDispatched)
        }
    }

    fn outside_ids(&self, slot: u32) -> (u32, u32) {
        let (uid, gid) = (rustix::process::geteuid(), rustix::process::getegid());
        if uid.is_root() {
            let id = self.uid_base.saturating_add(slot);
            (id, id)
        } else {
            // Unprivileged: only our own ids can be mapped; the limits hold all the same (an
            // unprivileged user is never exempt from RLIMIT_NPROC), shared among sandboxes.
            (uid.as_raw(), gid.as_raw())
        }
    }

    /// Hands the descriptors of a new sandbox (its control socket, with the provision waiting
    /// on it, stdout and stderr) to the zygote, which clones its PID 1; starts the zygote first
    /// if there is none or it died.
    fn start_in_zygote(&self, fds: [OwnedFd; 3]) -> Result<(), SandboxError> {
        let mut zygote = self
            .zygote
            .lock()
            .map_err(|_| SandboxError::Protocol("the zygote's lock is poisoned".into()))?;
        let mut last = None;
        for _ in 0..2 {
            if !zygote.as_mut().is_some_and(Zygote::is_alive) {
                *zygote = Some(Zygote::start(&self.init)?);
            }
            let Some(running) = zygote.as_ref() else {
                continue;
            };
            match running.send(&fds) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    // It died between the check and the send: start another, once.
                    *zygote = None;
                    last = Some(e);
                }
            }
        }
        Err(SandboxError::io(
            "handing a sandbox to the zygote",
            last.map_or_else(|| io::Error::other("no zygote"), io::Error::from),
        ))
    }

    async fn provision_inner(&self, spec: Arc<SandboxSpec>) -> Result<Sandbox, SandboxError> {
        // Process-wide, so several backends in one process (tests, embedding programs) never
        // pick the same directory name.
        static NEXT_DIR: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let slot = match &self.slots {
            Ok(slots) => slots.acquire()?,
            Err(why) => {
                return Err(SandboxError::Protocol(format!(
                    "no table of sandbox ids: {why}"
                )))
            }
        };
        let (uid, gid) = self.outside_ids(slot.slot);
        let name = super::run_dir::sandbox_name(std::process::id(), id)
            .map_err(|e| SandboxError::io("drawing the sandbox's name", e))?;
        let image = self.images.get(&spec).await?;
        let mut state = LinuxSandbox::default();
        state.slot = Some(slot);
        let proxy_dir = if spec.egress.is_empty() {
            None
        } else {
            self.swept.call_once(|| {
                super::run_dir::sweep_in_background(
                    self.run_dir.clone(),
                    super::run_dir::Tier::Namespaces,
                );
            });
            let dir = self.run_dir.join(&name);
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map_err(|e| SandboxError::io(format!("mkdir {}", dir.display()), e))?;
            state.proxy_dir = Some(dir.clone());
            if rustix::process::geteuid().is_root() {
                std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                    .map_err(|e| SandboxError::io(format!("chown {}", dir.display()), e))?;
            }
            Some(dir)
        };
        // The proxy starts while the sandbox is being built (the relay reaches it only once the
        // tool runs): off the critical path.
        let proxy_socket = proxy_dir.as_ref().map(|dir| dir.join(PROXY_SOCKET));
        let proxy_start = proxy_socket.as_ref().map(|socket| {
            EgressProxy::start(socket, spec.egress.clone(), Arc::clone(&self.resolver))
        });

        let started = std::time::Instant::now();
        let (host_end, init_end) = std::os::unix::net::UnixStream::pair()
            .map_err(|e| SandboxError::io("socketpair", e))?;
        // The tool's stdout and stderr: pipes whose write ends go to the sandbox.
        let (stdout_r, stdout_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| SandboxError::io("pipe", e.into()))?;
        let (stderr_r, stderr_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| SandboxError::io("pipe", e.into()))?;
        let memory = self.memory.as_ref().map_err(|why| {
            SandboxError::Init(format!("cannot bound the sandbox's memory: {why}"))
        })?;
        let cgroup = memory.create(&name, spec.limits.memory_bytes)?;
        let netns = self
            .netns
            .get_or_init(NetnsPool::start)
            .as_ref()
            .and_then(|pool| pool.take(!spec.egress.is_empty()));
        let provision = Provision {
            outside_uid: uid,
            outside_gid: gid,
            read_only: spec.read_only.clone(),
            binds: spec.binds.clone(),
            proxy_dir,
            limits: spec.limits,
            cgroup: Some(cgroup.dir().to_path_buf()),
            netns: netns.is_some(),
        };
        state.cgroup = Some(cgroup);
        // The tool's stdin: a pipe whose read end travels with the first message.
        let (stdin_r, stdin_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| SandboxError::io("pipe", e.into()))?;
        let mut fds = vec![stdin_r.as_fd(), image.fd().as_fd()];
        fds.extend(netns.as_ref().map(AsFd::as_fd));
        let unsent = send_with_fds(&host_end, &provision, &fds)?;
        // The provision waits on the socket: the zygote's work for this sandbox never waits
        // for the host.
        self.start_in_zygote([OwnedFd::from(init_end), stdout_w, stderr_w])?;
        drop(stdin_r);
        state.netns = netns.map(|netns| (netns, !spec.egress.is_empty()));
        state.stdin = Some(
            tokio::net::unix::pipe::Sender::from_owned_fd(stdin_w)
                .map_err(|e| SandboxError::io("the stdin pipe", e))?,
        );
        host_end
            .set_nonblocking(true)
            .map_err(|e| SandboxError::io("socketpair", e))?;
        let mut host_end = tokio::net::UnixStream::from_std(host_end)
            .map_err(|e| SandboxError::io("socketpair", e))?;
        if !unsent.is_empty() {
            // What did not fit in the socket's buffer, written as the zygote reads it: no
            // thread of the runtime blocks on the zygote meanwhile (as the handshake below, it
            // waits as long as whoever provisions: a call's deadline, the pool's life).
            use tokio::io::AsyncWriteExt;
            host_end
                .write_all(&unsent)
                .await
                .map_err(|e| SandboxError::io("sending the provision", e))?;
        }
        state.stdout = Some(
            pipe::Receiver::from_owned_fd(stdout_r)
                .map_err(|e| SandboxError::io("the stdout pipe", e))?,
        );
        state.stderr = Some(
            pipe::Receiver::from_owned_fd(stderr_r)
                .map_err(|e| SandboxError::io("the stderr pipe", e))?,
        );
        state.control = Some(ControlHost::new(host_end));

        let spawned = started.elapsed();
        let handshake = async {
            match state.control()?.recv_with_fds().await? {
                (FromInit::Spawned { .. }, pidfd) => state.adopt(pidfd)?,
                (FromInit::Failed { message }, _) => return Err(SandboxError::Init(message)),
                (other, _) => {
                    return Err(SandboxError::Protocol(format!(
                        "expected `spawned`, got {other:?}"
                    )))
                }
            }
            let adopted = started.elapsed();
            match state.control()?.recv().await? {
                FromInit::Ready => Ok(adopted),
                FromInit::Failed { message } => Err(SandboxError::Init(message)),
                other => Err(SandboxError::Protocol(format!(
                    "expected `ready`, got {other:?}"
                ))),
            }
        };
        let proxy = async {
            match proxy_start {
                Some(start) => Some(
                    start
                        .await
                        .map_err(|e| SandboxError::io("starting the egress proxy", e)),
                ),
                None => None,
            }
        };
        let (adopted, proxy) = tokio::join!(handshake, proxy);
        let proxy = proxy.transpose();
        let adopted = adopted?;
        state.proxy = proxy?;
        tracing::debug!(
            spawn_us = spawned.as_micros() as u64,
            namespaces_us = (adopted - spawned).as_micros() as u64,
            ready_us = (started.elapsed() - adopted).as_micros() as u64,
            "sandbox provisioned"
        );
        Ok(Sandbox::new(id, spec, Box::new(state)))
    }
}

/// The zygote: the init started with `--server` (see [`super::init`]), reached through a
/// `SOCK_SEQPACKET` socket; it ends when that socket closes (this value dropped, or the runtime
/// gone).
#[derive(Debug)]
struct Zygote {
    process: Child,
    requests: OwnedFd,
}

impl Zygote {
    fn start(init: &Path) -> Result<Self, SandboxError> {
        use rustix::net::{AddressFamily, SocketFlags, SocketType};
        let (requests, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| SandboxError::io("socketpair", e.into()))?;
        // A neutral name: every sandbox's PID 1 is a fork of this process, and its command
        // line is what a tool reads in /proc/1/cmdline.
        let process = Command::new(init)
            .arg0(super::init::PROCESS_NAME)
            .arg(super::init::SERVER_FLAG)
            .env_clear()
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| SandboxError::io(format!("cannot start {}", init.display()), e))?;
        Ok(Self { process, requests })
    }

    fn is_alive(&mut self) -> bool {
        matches!(self.process.try_wait(), Ok(None))
    }

    /// One request: a byte with the three descriptors attached.
    fn send(&self, fds: &[OwnedFd; 3]) -> Result<(), rustix::io::Errno> {
        let borrowed = [fds[0].as_fd(), fds[1].as_fd(), fds[2].as_fd()];
        scm::send(
            &self.requests,
            b"s",
            &borrowed,
            rustix::net::SendFlags::empty(),
        )
        .map(drop)
    }
}

/// Sends as much of `msg`, one line, as the socket takes at once, with `fds` (at most three)
/// attached (`SCM_RIGHTS`): what is left, to be written once somebody reads (rare: a provision
/// longer than the socket's buffer, whose reader, the zygote, gets the socket after this).
fn send_with_fds<T: serde::Serialize>(
    socket: &std::os::unix::net::UnixStream,
    msg: &T,
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> Result<Vec<u8>, SandboxError> {
    let mut line = serde_json::to_vec(msg)
        .map_err(|e| SandboxError::Protocol(format!("cannot encode a message: {e}")))?;
    line.push(b'\n');
    let sent = scm::send(socket, &line, fds, rustix::net::SendFlags::DONTWAIT)
        .map_err(|e| SandboxError::io("sending the provision", e.into()))?;
    Ok(line.split_off(sent))
}

/// Everything one sandbox holds on the host; dropping it kills and releases all of it.
#[derive(Debug, Default)]
struct LinuxSandbox {
    control: Option<ControlHost>,
    stdin: Option<pipe::Sender>,
    stdout: Option<pipe::Receiver>,
    stderr: Option<pipe::Receiver>,
    /// A pidfd of the sandbox's PID 1: killing it ends the PID namespace, and it is readable
    /// once PID 1 has exited, which it does only after every other process of its namespace.
    pid1: Option<OwnedFd>,
    proxy: Option<ProxyHandle>,
    proxy_dir: Option<PathBuf>,
    slot: Option<SlotGuard>,
    /// The sandbox's memory cgroup, removed once its processes are gone.
    cgroup: Option<Cgroup>,
    /// The network namespace the pool handed out for this sandbox, with whether its loopback
    /// is up: given back once every process of the sandbox has exited.
    netns: Option<(OwnedFd, bool)>,
}

impl LinuxSandbox {
    fn control(&mut self) -> Result<&mut ControlHost, SandboxError> {
        self.control
            .as_mut()
            .ok_or(SandboxError::Misuse("the control socket is gone"))
    }

    /// Keeps the pidfd of the sandbox's PID 1 that came with `spawned`: the zygote's, made by
    /// the `clone` itself (`CLONE_PIDFD`), so it names that process even if it has ended and
    /// its pid been given to another since.
    fn adopt(&mut self, pidfd: Vec<OwnedFd>) -> Result<(), SandboxError> {
        let Ok([pidfd]) = <[OwnedFd; 1]>::try_from(pidfd) else {
            return Err(SandboxError::Protocol(
                "`spawned` came without PID 1's pidfd, or with more than it".to_string(),
            ));
        };
        self.pid1 = Some(pidfd);
        Ok(())
    }

    /// Whether PID 1 is still running (its pidfd is not readable yet).
    fn running(&self) -> bool {
        self.pid1.as_ref().is_some_and(|fd| {
            let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
            matches!(
                rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default())),
                Ok(0)
            )
        })
    }

    /// Kills the sandbox's PID 1, and with it every process in the sandbox.
    fn kill(&self) {
        if let Some(fd) = &self.pid1 {
            // ESRCH: it is gone already.
            let _ = rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
        }
    }

    /// Whether the kernel killed a process of the sandbox for its memory bound.
    fn memory_exhausted(&self) -> bool {
        self.cgroup.as_ref().is_some_and(|c| c.oom_kills() > 0)
    }

    fn remove_dir(&mut self) -> Option<String> {
        let dir = self.proxy_dir.take()?;
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => None,
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => Some(format!("cannot remove {}: {e}", dir.display())),
        }
    }
}

impl Drop for LinuxSandbox {
    fn drop(&mut self) {
        // Not destroyed (a cancelled attempt, a pool dropped): kill PID 1 now (before it is
        // known, the closed control socket ends it); the proxy handle stops its proxy on drop.
        self.kill();
        self.proxy.take();
        let _ = self.remove_dir();
        if let Some(cgroup) = self.cgroup.take() {
            // Its processes are dying: remove it once they are gone, off this thread.
            if cgroup.remove(Duration::ZERO).is_err() {
                let _ = std::thread::Builder::new()
                    .name("escepine-cgroup-rm".into())
                    .spawn(move || {
                        if let Err(e) = cgroup.remove(CGROUP_GRACE) {
                            tracing::warn!(cgroup = %cgroup.dir().display(), "cannot remove: {e}");
                        }
                    });
            }
        }
    }
}

/// The streams of a provisioned Linux sandbox, taken for its one job.
fn streams(sandbox: &mut Sandbox) -> Result<(&LinuxSandbox, Streams), SandboxError> {
    sandbox.mark_used()?;
    let state = sandbox
        .state_mut::<LinuxSandbox>()
        .ok_or(SandboxError::Misuse("not a Linux sandbox"))?;
    let (Some(stdin), Some(stdout), Some(stderr), Some(control)) = (
        state.stdin.take(),
        state.stdout.take(),
        state.stderr.take(),
        state.control.take(),
    ) else {
        return Err(SandboxError::Misuse("the sandbox's pipes are gone"));
    };
    let streams = Streams {
        stdin: Box::pin(stdin),
        stdout: Box::pin(stdout),
        stderr: Box::pin(stderr),
        control,
    };
    Ok((state, streams))
}

impl Running for LinuxSandbox {
    fn kill(&self) {
        LinuxSandbox::kill(self);
    }

    fn memory_exhausted(&self) -> bool {
        LinuxSandbox::memory_exhausted(self)
    }

    fn proxy(&self) -> Option<&ProxyHandle> {
        self.proxy.as_ref()
    }
}

async fn execute_inner(sandbox: &mut Sandbox, job: Job) -> Result<JobOutput, SandboxError> {
    let (state, streams) = streams(sandbox)?;
    let (ran, reads) = job::execute(state, streams, job).await;
    sandbox.job_finished(Box::new(reads), ran.is_ok());
    ran
}

async fn attach_inner(sandbox: &mut Sandbox, job: Job) -> Result<Attached, SandboxError> {
    let (_, streams) = streams(sandbox)?;
    job::attach(streams, job).await
}

/// Releases a sandbox's cgroup whose processes have ended, once the last of them has left it
/// (briefly waited for): kept as a spare of `parent` for the next sandbox, or removed.
async fn release_cgroup(parent: Option<cgroup::Parent>, cgroup: Cgroup) -> io::Result<()> {
    let deadline = tokio::time::Instant::now() + CGROUP_GRACE;
    while !cgroup.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::task::spawn_blocking(move || match parent {
        Some(parent) => parent.recycle(cgroup),
        None => cgroup.remove(CGROUP_GRACE),
    })
    .await
    .map_err(io::Error::other)?
}

/// Resolves when the process of `pidfd` has exited (the pidfd becomes readable).
async fn exited(pidfd: OwnedFd) -> io::Result<()> {
    // SAFETY: the `OwnedFd` owns the pidfd, which stays open and unchanged for as long as the
    // `AsyncFd` holds it.
    let fd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
    }?;
    let _ready = fd.readable().await?;
    Ok(())
}

async fn destroy_inner(
    sandbox: Sandbox,
    parent: Option<cgroup::Parent>,
    netns_pool: Option<&NetnsPool>,
) -> Teardown {
    let mut teardown = Teardown::default();
    let mut state = match sandbox.into_state::<LinuxSandbox>() {
        Ok(s) => s,
        Err(other) => {
            teardown
                .problems
                .push("not a Linux sandbox; dropped".to_string());
            drop(other);
            return teardown;
        }
    };
    let started = std::time::Instant::now();
    state.kill();
    state.control.take();
    if let Some(pid1) = state.pid1.take() {
        match tokio::time::timeout(REAP_GRACE, exited(pid1)).await {
            Ok(Ok(())) => {
                // PID 1 was the sandbox's last process: nothing is left in its namespace that a
                // process could still add to.
                if let (Some(pool), Some((netns, loopback))) = (netns_pool, state.netns.take()) {
                    pool.give_back(netns, loopback);
                }
            }
            Ok(Err(e)) => teardown.problems.push(format!("waiting for init: {e}")),
            Err(_) => teardown
                .problems
                .push("init did not end in time".to_string()),
        }
    }
    let reaped = started.elapsed();
    teardown.memory_exhausted = state.memory_exhausted();
    if let Some(cgroup) = state.cgroup.take() {
        let dir = cgroup.dir().to_path_buf();
        if let Err(e) = release_cgroup(parent, cgroup).await {
            teardown
                .problems
                .push(format!("cannot remove the cgroup {}: {e}", dir.display()));
        }
    }
    if let Some(proxy) = state.proxy.take() {
        teardown.egress_requests = proxy.requests();
        teardown.egress_refusals = proxy.shutdown().await;
    }
    let proxy_stopped = started.elapsed();
    if let Some(problem) = state.remove_dir() {
        teardown.problems.push(problem);
    }
    state.slot.take();
    tracing::debug!(
        reap_us = reaped.as_micros() as u64,
        proxy_us = (proxy_stopped - reaped).as_micros() as u64,
        total_us = started.elapsed().as_micros() as u64,
        "sandbox destroyed"
    );
    for p in &teardown.problems {
        tracing::warn!(problem = %p, "sandbox teardown");
    }
    teardown
}

impl Drop for LinuxBackend {
    fn drop(&mut self) {
        if let Ok(memory) = &self.memory {
            memory.release_spares();
        }
    }
}

impl SandboxBackend for LinuxBackend {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn provision(&self, spec: Arc<SandboxSpec>) -> BoxFuture<'_, Result<Sandbox, SandboxError>> {
        Box::pin(self.provision_inner(spec))
    }

    fn execute<'a>(
        &'a self,
        sandbox: &'a mut Sandbox,
        job: Job,
    ) -> BoxFuture<'a, Result<JobOutput, SandboxError>> {
        Box::pin(execute_inner(sandbox, job))
    }

    fn attach<'a>(
        &'a self,
        sandbox: &'a mut Sandbox,
        job: Job,
    ) -> BoxFuture<'a, Result<Attached, SandboxError>> {
        Box::pin(attach_inner(sandbox, job))
    }

    fn destroy(&self, sandbox: Sandbox) -> BoxFuture<'_, Teardown> {
        Box::pin(destroy_inner(
            sandbox,
            self.memory.as_ref().ok().cloned(),
            self.netns.get().and_then(Option::as_ref),
        ))
    }

    fn ended(&self, sandbox: &mut Sandbox) -> Option<BoxFuture<'static, ()>> {
        let pid1 = sandbox.state_mut::<LinuxSandbox>()?.pid1.as_ref()?;
        // A duplicate: the sandbox keeps its own, to kill and to wait on at its destroy.
        let pid1 = pid1.try_clone().ok()?;
        Some(Box::pin(async move {
            // A pidfd the reactor cannot watch resolves at once: the hand-over then wakes the
            // task waiting for it, as a teardown spawned by the caller would.
            let _ = exited(pid1).await;
        }))
    }

    fn is_alive(&self, sandbox: &mut Sandbox) -> bool {
        match sandbox.state_mut::<LinuxSandbox>() {
            Some(state) => state.running(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawned_is_adopted_only_with_exactly_one_descriptor() {
        let fd = || OwnedFd::from(tempfile::tempfile().expect("a file"));
        for wrong in [vec![], vec![fd(), fd()]] {
            let mut state = LinuxSandbox::default();
            let err = state.adopt(wrong).expect_err("refused");
            assert!(err.to_string().contains("PID 1's pidfd"), "{err}");
            assert!(state.pid1.is_none());
        }
        let mut state = LinuxSandbox::default();
        state.adopt(vec![fd()]).expect("one descriptor");
        assert!(state.pid1.is_some());
    }

    #[test]
    fn the_program_is_its_own_init_only_once_it_dispatches() {
        let named = std::env::var_os("ESCEPINE_SANDBOX_INIT").map(PathBuf::from);
        match (&named, LinuxBackend::locate_init()) {
            (Some(named), found) => assert_eq!(found.ok().as_ref(), Some(named)),
            (None, found) => assert!(
                matches!(found, Err(SandboxError::InitNotDispatched)),
                "{found:?}"
            ),
        }
        // This test program is not started as an init, so dispatching returns.
        crate::init::dispatch();
        let found = LinuxBackend::locate_init().expect("an init");
        assert_eq!(found, named.unwrap_or_else(|| PathBuf::from(SELF_EXE)));
    }
}
