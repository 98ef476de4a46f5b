//! The backend seam: provision, execute, destroy.
//!
//! A [`SandboxBackend`] turns a [`SandboxSpec`] into a running, empty [`Sandbox`], runs exactly
//! one [`Job`] in it, and destroys it. The Linux backend (`LinuxBackend`) does this with
//! namespaces on this machine; an OCI-runtime backend would map a sandbox to a container and a
//! Kubernetes backend to a pod (one per call, or a warm pool of pods), with a NetworkPolicy that
//! lets the pod reach nothing but the same egress proxy. The trait is object safe; its futures
//! are boxed.

use std::any::Any;
use std::fmt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use escepine_contract::EgressGrant;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{Limits, SandboxError};
use crate::io::Scrub;
use crate::teardowns::{Counted, Teardowns};
use crate::BoxFuture;

/// Everything a backend needs to provision a sandbox for one tool, before any call is known.
///
/// Two calls with equal specs can use sandboxes provisioned alike, which is what a
/// [`super::WarmPool`] keys on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SandboxSpec {
    /// The tool's binary (digest already checked), at the same path inside the sandbox.
    pub program: PathBuf,
    /// The identity of the binary's file when the spec was made (device, inode, size, mtime and
    /// ctime), so that a sandbox provisioned for an older file is never used for a newer one.
    pub program_identity: String,
    /// The record's `sha256` pin of the binary: the sandbox runs a copy of it made while its
    /// digest was computed, and refuses one with another digest.
    pub program_sha256: Option<String>,
    /// Host paths present read-only at the same path inside (copied into the sandbox's root):
    /// the binary, its interpreter and libraries, CA certificates.
    pub read_only: Vec<PathBuf>,
    /// Host paths bound read-only at the same path (the record's `sandbox_profile.read_only`):
    /// never copied, so a large interpreter installation costs nothing per spec.
    pub binds: Vec<PathBuf>,
    /// An unpacked OCI image whose whole tree is copied into the sandbox's root (then
    /// `program` is a path inside it, and nothing of the host is copied).
    pub root_tree: Option<PathBuf>,
    /// What the sandbox may reach (profile plus overlay entries, the call's authorized origins,
    /// the addresses treated as public), fixed before it starts; empty means no network at all.
    pub egress: EgressGrant,
    /// The tool's resource limits.
    pub limits: Limits,
}

/// A sandbox on its way to the task prepared for its end, counted among the teardowns.
pub(crate) type HandedBack = (Sandbox, Counted);

/// A sandbox's end of the hand-over to the task its pool prepared for its end (see
/// [`crate::retirement`]).
pub(crate) struct Retirement {
    handover: oneshot::Sender<HandedBack>,
    teardowns: Arc<Teardowns>,
}

impl Retirement {
    /// The sandbox's end of `handover`, counting what it hands over in `teardowns`.
    pub(crate) fn new(handover: oneshot::Sender<HandedBack>, teardowns: Arc<Teardowns>) -> Self {
        Self {
            handover,
            teardowns,
        }
    }

    /// Hands `sandbox` over, counted among the teardowns from now; gives it back if the task
    /// is gone (its runtime shut down).
    pub(crate) fn hand_over(self, sandbox: Sandbox) -> Result<(), Sandbox> {
        let counted = self.teardowns.begin();
        self.handover
            .send((sandbox, counted))
            .map_err(|(sandbox, _counted)| sandbox)
    }
}

/// A provisioned sandbox, owned by the caller between `provision` and `destroy`.
///
/// The backend keeps its own state inside; dropping a sandbox without destroying it must still
/// kill everything in it (backends implement `Drop` on their state).
pub struct Sandbox {
    id: u64,
    spec: Arc<SandboxSpec>,
    used: bool,
    state: Box<dyn Any + Send + Sync>,
    /// What its job left to close (its streams): dropped with the sandbox, at its destroy, not
    /// on the caller's path.
    spent: Option<Box<dyn Any + Send + Sync>>,
    /// Whether its job ran to its report: its processes are then ending by themselves.
    job_ended: bool,
    /// The hand-over to the task its pool prepared for its end, if a pool made it.
    retirement: Option<Retirement>,
}

impl fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sandbox")
            .field("id", &self.id)
            .field("program", &self.spec.program)
            .field("used", &self.used)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// A sandbox with backend-specific `state`.
    pub fn new(id: u64, spec: Arc<SandboxSpec>, state: Box<dyn Any + Send + Sync>) -> Self {
        Self {
            id,
            spec,
            used: false,
            state,
            spent: None,
            job_ended: false,
            retirement: None,
        }
    }

    /// Records the end of its job: keeps `spent` (what the job has finished with) until the
    /// sandbox is destroyed or dropped, so that closing it is no part of the job's answer; and
    /// whether the job ran to its report ([`SandboxBackend::execute`] returned `Ok`): its
    /// processes are then ending by themselves, and it may be [retired](Sandbox::retire).
    pub(crate) fn job_finished(&mut self, spent: Box<dyn Any + Send + Sync>, reported: bool) {
        self.spent = Some(spent);
        self.job_ended = reported;
    }

    /// Keeps the hand-over to the task prepared for its end (see [`crate::retirement`]).
    pub(crate) fn set_retirement(&mut self, retirement: Retirement) {
        self.retirement = Some(retirement);
    }

    /// Hands the sandbox, its job ended, to the task its warm pool prepared for its end when it
    /// made it: that task destroys it once its processes have ended, and starts the pool's
    /// replacement first. It is counted among the pool's [`Teardowns`] from now. That task is
    /// woken by the sandbox's processes' end (its PID 1 exits right after its report), not by
    /// this: handing back wakes nothing, so neither the teardown nor the replacement's
    /// provisioning runs on, or preempts, the end of the call.
    ///
    /// # Errors
    /// The sandbox itself, for the caller to destroy and to start the replacement of: when no
    /// pool prepared its end (provisioned on demand, or by a backend that cannot tell when its
    /// processes have ended), when its job has not run to its report, or when that task is gone.
    pub fn retire(mut self) -> Result<(), Sandbox> {
        if !self.job_ended {
            return Err(self);
        }
        match self.retirement.take() {
            Some(retirement) => retirement.hand_over(self),
            None => Err(self),
        }
    }

    /// The backend's id of this sandbox.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The spec it was provisioned for.
    pub fn spec(&self) -> &Arc<SandboxSpec> {
        &self.spec
    }

    /// Whether a job has been started in it (a sandbox runs one job, ever).
    pub fn is_used(&self) -> bool {
        self.used
    }

    /// Mark the sandbox used; fails if it already was.
    ///
    /// # Errors
    /// [`SandboxError::Misuse`] on a second job.
    pub fn mark_used(&mut self) -> Result<(), SandboxError> {
        if std::mem::replace(&mut self.used, true) {
            return Err(SandboxError::Misuse("a sandbox runs exactly one job"));
        }
        Ok(())
    }

    /// The backend state, if it is a `T`.
    pub fn state_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.state.downcast_mut()
    }

    /// The backend state, by value, if it is a `T`.
    ///
    /// # Errors
    /// The sandbox itself, if its state is not a `T`.
    pub fn into_state<T: Any>(self) -> Result<Box<T>, Self> {
        let Self {
            id,
            spec,
            used,
            state,
            spent,
            job_ended,
            retirement,
        } = self;
        state.downcast().map_err(|state| Self {
            id,
            spec,
            used,
            state,
            spent,
            job_ended,
            retirement,
        })
    }
}

/// The one job a sandbox runs.
#[derive(Debug, Clone)]
pub struct Job {
    /// The program and its arguments (never a secret).
    pub argv: Vec<String>,
    /// The tool's entire environment (secrets travel here).
    pub env: Vec<(String, String)>,
    /// The tool's working directory; the workspace when absent.
    pub cwd: Option<String>,
    /// The tool's standard input.
    pub stdin: String,
    /// Files placed read-only at `/workspace/<name>` before the tool starts (the call's
    /// workspace inputs; names already checked against the record).
    pub files: escepine_contract::WorkspaceFiles,
    /// When everything in the sandbox is killed.
    pub deadline: Instant,
    /// Bytes of stdout kept; more is an overflow and kills the job.
    pub stdout_limit: usize,
    /// Bytes of stderr kept; the rest is counted and noted.
    pub stderr_limit: usize,
    /// What scrubs the secrets of the job's environment from its stderr before the cut to
    /// `stderr_limit` (`None`: the job has no secrets).
    pub scrubber: Option<Arc<dyn Scrub>>,
}

/// How the tool ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// It exited with this status.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
}

impl JobStatus {
    /// A local process's exit status as a job status (a status with neither code nor signal,
    /// which Unix does not produce, reads as signal 0).
    pub fn from_exit(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Exited(code),
            (None, sig) => Self::Signaled(sig.unwrap_or(0)),
        }
    }
}

/// The name of a signal a tool commonly dies of (`SIGKILL`), else `None`.
pub fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// How the tool ended, as a failure message says it: `exited with status 1`, `was killed by
/// signal 9 (SIGKILL)`.
impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Exited(code) => write!(f, "exited with status {code}"),
            Self::Signaled(sig) => match signal_name(sig) {
                Some(name) => write!(f, "was killed by signal {sig} ({name})"),
                None => write!(f, "was killed by signal {sig}"),
            },
        }
    }
}

/// What one job produced.
#[derive(Debug, Clone)]
pub struct JobOutput {
    /// How the tool ended.
    pub status: JobStatus,
    /// Its standard output (at most the job's limit).
    pub stdout: Vec<u8>,
    /// Whether it wrote more than the limit on stdout (the job was killed then).
    pub stdout_overflow: bool,
    /// Its standard error, bounded, with a note of what was not kept.
    pub stderr: String,
    /// Egress the sandbox's proxy refused while the job ran.
    pub egress_refusals: Vec<String>,
    /// Requests the sandbox's proxy admitted while the job ran, with their paths.
    pub egress_requests: Vec<String>,
    /// Whether the sandbox reached its memory bound and the kernel killed a process of it.
    pub memory_exhausted: bool,
}

/// What destroying a sandbox found.
#[derive(Debug, Clone, Default)]
pub struct Teardown {
    /// Egress the sandbox's proxy refused, one line each.
    pub egress_refusals: Vec<String>,
    /// Requests the sandbox's proxy admitted, one line each, with their paths.
    pub egress_requests: Vec<String>,
    /// Anything that did not go cleanly (already logged).
    pub problems: Vec<String>,
    /// Whether the sandbox reached its memory bound and the kernel killed a process of it.
    pub memory_exhausted: bool,
}

/// A job started with [`SandboxBackend::attach`]: its standard streams, for an interactive
/// protocol (an `mcp-stdio` session), and its status.
pub struct Attached {
    /// The tool's standard input (dropping it closes it).
    pub stdin: Pin<Box<dyn AsyncWrite + Send>>,
    /// The tool's standard output.
    pub stdout: Pin<Box<dyn AsyncRead + Send>>,
    /// The tool's standard error.
    pub stderr: Pin<Box<dyn AsyncRead + Send>>,
    /// Resolves when the tool has ended.
    pub status: BoxFuture<'static, Result<JobStatus, SandboxError>>,
}

impl fmt::Debug for Attached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attached").finish_non_exhaustive()
    }
}

/// Provisions, runs and destroys sandboxes. Object safe: the runtime holds an
/// `Arc<dyn SandboxBackend>`.
pub trait SandboxBackend: Send + Sync + 'static {
    /// A short name for evidence and logs (`linux`, `oci`, `kubernetes`).
    fn name(&self) -> &'static str;

    /// Build an empty sandbox for `spec` and wait until it is ready to run a job.
    fn provision(&self, spec: Arc<SandboxSpec>) -> BoxFuture<'_, Result<Sandbox, SandboxError>>;

    /// Run `job` in `sandbox` until it ends or its deadline passes (then kill everything in the
    /// sandbox and fail with [`SandboxError::TimedOut`]). A sandbox runs one job, ever.
    fn execute<'a>(
        &'a self,
        sandbox: &'a mut Sandbox,
        job: Job,
    ) -> BoxFuture<'a, Result<JobOutput, SandboxError>>;

    /// Start `job` in `sandbox` and hand its standard streams to the caller (its `stdin` field
    /// is ignored, its deadline is the caller's to enforce — by destroying the sandbox). A
    /// sandbox runs one job, ever. Backends without interactive jobs refuse.
    fn attach<'a>(
        &'a self,
        sandbox: &'a mut Sandbox,
        job: Job,
    ) -> BoxFuture<'a, Result<Attached, SandboxError>> {
        let _ = (sandbox, job);
        Box::pin(async {
            Err(SandboxError::Misuse(
                "this backend runs no interactive jobs",
            ))
        })
    }

    /// Kill whatever is left, release everything the sandbox held, and report.
    fn destroy(&self, sandbox: Sandbox) -> BoxFuture<'_, Teardown>;

    /// Whether a provisioned, unused sandbox can still run a job (a warm pool asks before
    /// handing one out).
    fn is_alive(&self, sandbox: &mut Sandbox) -> bool {
        let _ = sandbox;
        true
    }

    /// A future that resolves once every process of `sandbox` has ended and that holds nothing
    /// of the sandbox (the Linux backend: a duplicate of its PID 1's pidfd), or `None` when
    /// the backend cannot tell: a warm pool then leaves the sandbox's teardown to its caller
    /// rather than preparing it (see [`Sandbox::retire`]).
    fn ended(&self, sandbox: &mut Sandbox) -> Option<BoxFuture<'static, ()>> {
        let _ = sandbox;
        None
    }
}
