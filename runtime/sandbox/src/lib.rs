//! Escepine's sandboxes: one fresh sandbox per call, with no network of its own.
//!
//! A [`SandboxBackend`] **provisions** a sandbox for a [`SandboxSpec`] (plain data: the program,
//! what it may read, its egress entries and [`Limits`]), **executes** one [`Job`] there, and
//! **destroys** it. A sandbox is never reused: a [`WarmPool`] only provisions sandboxes ahead of
//! demand, and each is used for exactly one job. The runtime's sandbox executor (in
//! `escepine-runtime`, feature `sandbox`) turns a governed call into a spec and a job.
//!
//! # Features
//! - `linux` (default): the Linux backend ([`LinuxBackend`]), its init ([`init`]), root images
//!   ([`root`]) and the ELF dependency walk ([`deps`]); Linux-only dependencies (landlock,
//!   seccompiler, goblin).
//! - `image`: OCI images as sandbox roots ([`cache`]): the fetching, verifying and unpacking
//!   cache of `escepine-oci` and its HTTP stack.
//!
//! With `linux`, the crate also has the gVisor tier ([`GvisorBackend`]): each sandbox an OCI
//! bundle (the same root image, read-only paths, workspace, memory cgroup and egress proxy) run
//! by `runsc`, its first process the init as a guest ([`init::guest`]).
//!
//! Without features the crate is the backend seam and the host-side stream plumbing ([`io`])
//! the process executor shares.
//!
//! # The Linux backend
//! [`LinuxBackend`] needs nothing installed beyond `cargo build`: by default it starts the
//! program itself (`/proc/self/exe`, as `runc init` does) once per backend as a zygote — every
//! program that starts sandboxes calls [`init::dispatch`] first in `main`, which runs the init
//! when the program was started as one — and the zygote clones each sandbox's PID 1 (no program
//! start on the critical path, and no process between the zygote and PID 1) into fresh user,
//! PID, mount, network, IPC and UTS namespaces; PID 1 adds a cgroup namespace once it is in its
//! memory cgroup. The network namespace is one the
//! backend made ahead of demand and never handed out before (a thread keeps a few ready: making
//! one is the dearest part of the `clone`), or, when none is ready, one PID 1 makes itself.
//! Inside:
//! - the sandbox's uid 0 and gid 0 map to one unprivileged outside id per live sandbox
//!   (`100000 + slot` when the runtime is root, after `setgroups` is denied; slots are unique on
//!   the machine through byte locks on one lock file), so `RLIMIT_NPROC` holds although CI runs
//!   as root;
//! - the root is a read-only clone of a tmpfs the runtime makes once per spec with the new mount
//!   API, never attached to the host's tree ([`root`]): **copies** of only what the tool needs —
//!   its binary, the shared libraries its ELF dependency walk finds (interpreter, `DT_NEEDED`,
//!   recursively), the CA certificates — `/dev/{null,zero,full,random,urandom}` nodes and a
//!   minimal `/etc` (with a loader cache of the copied libraries, where the host has glibc's
//!   `ldconfig`). Nothing of the host is mounted, so the tool's mount table names no host
//!   path, device or mount option; a pinned (`sha256`) binary's copy is hashed as it is made, so
//!   what runs is what was hashed;
//! - `/proc` is a procfs of the sandbox's PID namespace with its processes only (`subset=pid`):
//!   no host kernel command line, memory, CPUs, sysctls, kcore or keys; PID 1 is a clone of
//!   the zygote, whose command line is `escepine-init --server`;
//! - `/workspace`, a fresh size-limited tmpfs (made by the zygote as the host's root, so
//!   its options show no outside uid), is the working directory, `$HOME` and `$TMPDIR`, and the
//!   only writable place; it disappears with the sandbox's mount namespace;
//! - a memory cgroup of its own, below the runtime's ([`Limits::memory_bytes`], 1 GiB by
//!   default), counts everything its processes use — shared and private mappings, memfds, tmpfs
//!   files, page cache; the kernel kills a process that would exceed it, and the call fails
//!   permanently, naming the bound;
//! - the tool runs with `no_new_privs`, no capabilities (empty bounding set, `SECBIT_NOROOT`),
//!   `RLIMIT_NPROC`, `RLIMIT_DATA`, `RLIMIT_NOFILE`, `RLIMIT_FSIZE` and no core dumps, a landlock
//!   ruleset (read and execute beneath the tool's paths, read-write in the workspace, TCP
//!   connect only to the relay's port, no signals or abstract sockets outside its domain) and a
//!   seccomp filter answering `EPERM` to ptrace, io_uring, raw sockets, mount and the new mount
//!   API, keyrings, bpf, perf events, namespace changes, kexec, module loading and every x32
//!   system call, and `EAFNOSUPPORT` to sockets of any family but `AF_UNIX`, `AF_INET` and
//!   `AF_INET6`;
//! - the network namespace has nothing but loopback, and the sandbox's root holds no capability
//!   over one the backend made. With a non-empty egress profile, PID 1
//!   serves a relay from `127.0.0.1:3128` to the call's `escepine_egress::EgressProxy` (through
//!   a descriptor of its Unix socket's directory, which the tool never gets), on its one thread,
//!   in the loop in which it waits for the tool; the tool gets `HTTP_PROXY`/`HTTPS_PROXY`;
//!   with an empty profile loopback stays down and there is no relay;
//! - the tool's environment is exactly `PATH`, `LANG`, `HOME`, `TMPDIR`, the call id and
//!   idempotency key, its declared secrets (never argv) and the proxy variables;
//! - on timeout the host kills PID 1 (through a pidfd), which ends the PID namespace and every
//!   process in it; when the tool exits, PID 1 exits, killing whatever the tool left running.

#![deny(missing_docs)]

mod backend;
#[cfg(feature = "image")]
pub mod cache;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod cgroup;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod control_host;
#[cfg(all(feature = "linux", target_os = "linux"))]
pub mod deps;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod gvisor;
#[cfg(all(feature = "linux", target_os = "linux"))]
pub mod init;
pub mod io;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod job;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod kept_images;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod linux;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod netns;
mod pool;
pub mod protocol;
mod retirement;
#[cfg(all(feature = "linux", target_os = "linux"))]
pub mod root;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod run_dir;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod scm;
#[cfg(all(feature = "linux", target_os = "linux"))]
mod slots;
mod teardowns;
mod tool_image;

pub use backend::{
    signal_name, Attached, Job, JobOutput, JobStatus, Sandbox, SandboxBackend, SandboxSpec,
    Teardown,
};
#[cfg(all(feature = "linux", target_os = "linux"))]
pub use cgroup::{CgroupError, SPARE_RESIDUE_KEPT};
#[cfg(all(feature = "linux", target_os = "linux"))]
pub use gvisor::{GvisorBackend, RUNSC_PACKAGE};
#[cfg(all(feature = "linux", target_os = "linux"))]
pub use linux::{LinuxBackend, DEFAULT_UID_BASE, INIT_BIN, SELF_EXE};
pub use pool::WarmPool;
#[cfg(all(feature = "linux", target_os = "linux"))]
pub use run_dir::default_dir as default_run_dir;
pub use teardowns::{Counted, Teardowns};
pub use tool_image::{ImageLaunch, ToolImage};

use std::future::Future;
use std::pin::Pin;

/// A boxed, `Send` future: the [`SandboxBackend`] seam is object safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The only `PATH` a tool process sees, in a sandbox or not.
pub const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// The `LANG` a tool process sees, in a sandbox or not.
pub const TOOL_LANG: &str = "C.UTF-8";

use serde::{Deserialize, Serialize};

/// Resource limits of a sandboxed tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Limits {
    /// `RLIMIT_NPROC`: tasks (processes and threads) of the sandbox's user, its PID 1
    /// included.
    pub processes: u64,
    /// The sandbox's memory bound: all of its processes' memory together — private and shared
    /// mappings, memfds, tmpfs files (the workspace's included), page cache — through a memory
    /// cgroup of its own (reaching it gets a process killed, and the call fails permanently,
    /// naming the bound); also each process's `RLIMIT_DATA`, so that a private allocation
    /// beyond it fails before that.
    pub memory_bytes: u64,
    /// `RLIMIT_NOFILE`: open file descriptors per process.
    pub open_files: u64,
    /// `RLIMIT_FSIZE`: the largest file the tool may write.
    pub file_size_bytes: u64,
    /// Size of the workspace tmpfs.
    pub workspace_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            processes: 64,
            memory_bytes: 1 << 30,
            open_files: 256,
            file_size_bytes: 64 << 20,
            workspace_bytes: 64 << 20,
        }
    }
}

/// Why a sandbox could not be provisioned, run or destroyed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The backend would start this program as its zygote, but the program never called
    /// [`init::dispatch`] (first thing in `main`), so it would run its own `main` instead.
    #[error(
        "this program cannot start sandboxes: it must call `escepine_sandbox::init::dispatch()` \
         (re-exported as `escepine_sandbox::init::dispatch()`) first in `main`, or \
         name an init binary with ESCEPINE_SANDBOX_INIT"
    )]
    InitNotDispatched,
    /// A host-side system call or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The sandbox reported a failure while being built or starting the tool.
    #[error("the sandbox failed: {0}")]
    Init(String),
    /// The sandbox's init broke the protocol or vanished.
    #[error("the sandbox's init: {0}")]
    Protocol(String),
    /// The tool's dependencies could not be determined.
    #[error("cannot determine what {path} needs: {why}")]
    Dependencies {
        /// The binary.
        path: String,
        /// Why.
        why: String,
    },
    /// The attempt's deadline passed; everything in the sandbox was killed.
    #[error("the deadline passed")]
    TimedOut,
    /// The sandbox's memory cgroup could not be set up.
    #[cfg(all(feature = "linux", target_os = "linux"))]
    #[error("cannot bound the sandbox's memory: {0}")]
    Cgroup(#[from] cgroup::CgroupError),
    /// The copy of a pinned binary made for the sandbox does not have the pinned digest (the
    /// file changed after the first check).
    #[error(
        "refusing to run {}: its SHA-256 digest is {actual}, the record expects {expected}",
        path.display()
    )]
    DigestMismatch {
        /// The binary.
        path: std::path::PathBuf,
        /// The digest of what was read.
        actual: String,
        /// The record's pin.
        expected: String,
    },
    /// The sandbox was already used or is not this backend's.
    #[error("sandbox misuse: {0}")]
    Misuse(&'static str),
    /// An entry of an image's root cannot be used as the sandbox needs it: its `/etc` is not a
    /// plain directory (following it could reach the host, replacing it would drop the image's
    /// configuration), or a link of it on the way to a mount point leads nowhere in the image.
    #[error("the image `{image}`: its `{entry}` {why}")]
    ImageEntry {
        /// The image's reference.
        image: String,
        /// The entry (`/etc`, `/var`).
        entry: String,
        /// What it is, and the rule it breaks.
        why: String,
    },
    /// A tool's OCI image cannot start it, or was not fetched.
    #[error("the image `{image}`: {why}")]
    Image {
        /// The reference.
        image: String,
        /// Why.
        why: String,
    },
}

impl SandboxError {
    #[cfg_attr(not(all(feature = "linux", target_os = "linux")), allow(dead_code))]
    fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }
}
