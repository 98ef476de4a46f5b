//! The sandbox's init: the Linux backend's zygote ([`SERVER_FLAG`], one per backend), and the
//! PID 1 it clones for every sandbox.
//!
//! The init is no separate program: the backend starts the program that embeds it
//! (`/proc/self/exe`) with `argv[0]` = [`PROCESS_NAME`], and that program's `main` calls
//! [`dispatch`] first, which runs the init and never returns (as `runc init` does). A program
//! that cannot do this may name the crate's `escepine-sandbox-init` binary instead.
//!
//! The zygote starts each sandbox ([`start`]): it reads the sandbox's [`Provision`] on the
//! control socket, makes the workspace, opens the memory cgroup's file, enters the network
//! namespace the host made ahead of demand (never used, or emptied by an ended sandbox) when
//! one came with it, and clones the sandbox's PID 1 into fresh user, PID, mount, IPC and UTS
//! namespaces (and a network namespace, when none came); it writes PID 1's
//! `setgroups`/`uid_map`/`gid_map` (uid and gid 0 inside → the unprivileged outside id) and
//! lets it go on. Each sandbox then runs in two processes:
//!
//! - **PID 1** takes the tool's pipes as its standard streams, moves itself into the memory
//!   cgroup (so every process of the sandbox is created inside it) and a cgroup namespace
//!   rooted there, becomes uid 0 of its namespace, builds the root file system (`mounts`),
//!   brings loopback up when the sandbox has egress and made its own network namespace,
//!   empties the bounding set and locks the secure bits (so no program executed from it holds
//!   a capability), prepares the landlock ruleset (`fence`), installs the seccomp filter
//!   (`seccomp`, compiled once by the zygote) on itself but for `mount`, and starts the tool's
//!   process (`waiting`), which inherits the filter and the empty bounding set, applies the
//!   limits, enforces the ruleset, refuses itself `mount` too and waits. PID 1 binds the
//!   loopback relay's socket (`relay`), reports ready and waits for [`Exec`]: it places the
//!   call's inputs and hands the job to the waiting process, which changes directory and
//!   executes (losing every capability PID 1 still holds); PID 1 reaps every process and
//!   serves the relay on its one thread (`watch`), and when the tool ends reports its status
//!   and exits — which kills everything left in the PID namespace;
//! - the **tool's process**, PID 1's clone, which executes the tool.
//!
//! The zygote and PID 1 are single-threaded, so the code between a clone and what follows may
//! be ordinary Rust; the tool's waiting process, which shares PID 1's memory, keeps to system
//! calls once PID 1 runs again (see `waiting`).

mod control;
mod exit;
mod fence;
pub mod guest;
mod inputs;
mod limits;
mod mounts;
mod relay;
mod seccomp;
mod spawn;
mod start;
mod waiting;
mod watch;

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::process::Signal;

use super::protocol::{Exec, FromInit, Provision, HOSTNAME, WORKSPACE};
use control::Control;

/// Whether [`dispatch`] was called in this process (so starting this program as the zygote runs
/// the init, not its `main`).
static DISPATCHED: AtomicBool = AtomicBool::new(false);

/// Run the sandbox's init if this process was started as one, else return at once.
///
/// Call it first in `main` of every program that starts sandboxes, before any thread, async
/// runtime or other start-up work: when `argv[0]`'s file name is [`PROCESS_NAME`] (as the
/// backend starts its zygote), it runs [`main`] and never returns. Otherwise it records that
/// the program dispatches, so [`LinuxBackend::new`](crate::LinuxBackend::new) may start the
/// program itself as its zygote.
pub fn dispatch() {
    if is_init(argv0().as_deref()) {
        main()
    }
    DISPATCHED.store(true, Ordering::Release);
}

/// Whether [`dispatch`] was called in this process.
pub fn dispatched() -> bool {
    DISPATCHED.load(Ordering::Acquire)
}

/// This process's `argv[0]`: from the standard library, else (before it has the arguments, in
/// a constructor that runs ahead of it) from `/proc/self/cmdline`.
fn argv0() -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::OsStringExt;
    std::env::args_os().next().or_else(|| {
        let cmdline = std::fs::read("/proc/self/cmdline").ok()?;
        let first = cmdline.split(|b| *b == 0).next()?;
        Some(std::ffi::OsString::from_vec(first.to_vec()))
    })
}

/// Whether `argv0` marks the init: its file name is [`PROCESS_NAME`].
fn is_init(argv0: Option<&std::ffi::OsStr>) -> bool {
    argv0
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .is_some_and(|name| name == PROCESS_NAME)
}

/// The entry point of the init: with `--server`, the zygote (`server`); with the guest's flag,
/// a gVisor sandbox's guest ([`guest`]). Started any other way it refuses (exit status 64): a
/// sandbox is started by a zygote, which the backend runs.
pub fn main() -> ! {
    // As the Rust runtime sets it before any `main`, whichever way the init was entered (a
    // constructor runs ahead of it): a closed pipe is an `EPIPE`, not a death.
    // SAFETY: setting a signal disposition to SIG_IGN installs no handler code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    if std::env::args_os().nth(1).is_some_and(|a| a == SERVER_FLAG) {
        std::process::exit(server())
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == guest::GUEST_FLAG)
    {
        std::process::exit(guest::main())
    }
    eprintln!(
        "{PROCESS_NAME}: the init of Escepine's sandboxes, started by the runtime's backend \
         (`{SERVER_FLAG}`); not meant to be run by hand"
    );
    std::process::exit(64)
}

/// The argument that makes `escepine-sandbox-init` the zygote.
pub const SERVER_FLAG: &str = "--server";
/// The zygote's `argv[0]`, which every sandbox's PID 1 inherits: no host path.
pub const PROCESS_NAME: &str = "escepine-init";

/// The zygote: one long-lived, single-threaded process per backend that clones the PID 1 of
/// each sandbox ([`start`]), so that no sandbox pays for starting a program (exec, dynamic
/// loading: most of a millisecond here).
///
/// Its standard input is a `SOCK_SEQPACKET` socket from the runtime; each message carries
/// exactly three descriptors — the new sandbox's control socket, on which the provision waits,
/// and the write ends of its stdout and stderr pipes. PIDs 1 are reaped by the kernel (`SIGCHLD`
/// ignored here, restored in each). It ends when its socket reads end-of-file: when the runtime
/// drops the backend, or dies — and its sandboxes with it (each PID 1 has `PR_SET_PDEATHSIG` =
/// `SIGKILL`).
fn server() -> i32 {
    let requests = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(_) => return 70,
    };
    spawn::null_stdio(0);
    let netns = match rustix::fs::open(
        "/proc/self/ns/net",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(_) => return 70,
    };
    // No fast bins: a PID 1's first large allocation would otherwise consolidate the fast-bin
    // chunks the zygote left in its heap, writing to pages it shares with the zygote (a
    // copy-on-write fault each). The zygote's allocations are few; its PIDs 1 inherit this.
    // SAFETY: a plain setting of the allocator, made before any other thread exists.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0)
    };
    let zygote = start::Zygote { requests, netns };
    // SAFETY: setting a signal disposition to SIG_IGN installs no handler code.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
    // Once, before the first clone: every sandbox's PID 1 inherits the compiled filters (an
    // error is reported by each PID 1 that asks for them).
    let _ = seccomp::compiled();
    loop {
        let fds = match receive_fds(&zygote.requests) {
            Ok(Some(fds)) => fds,
            Ok(None) => return 0,
            Err(_) => continue,
        };
        let [control, stdout, stderr] = match <[OwnedFd; 3]>::try_from(fds) {
            Ok(three) => three,
            Err(_) => continue,
        };
        let request = start::Request {
            control,
            stdout,
            stderr,
        };
        match start::sandbox(request, &zygote) {
            Ok(start::Started::Zygote) => {}
            Ok(start::Started::Pid1(started)) => pid1(*started),
            Err(start::Stranded) => return 70,
        }
    }
}

/// The descriptors of the next request; `None` at end of stream.
fn receive_fds(socket: &OwnedFd) -> Result<Option<Vec<OwnedFd>>, rustix::io::Errno> {
    let mut byte = [0u8; 16];
    let (bytes, fds) = crate::scm::recv(socket, &mut byte, rustix::net::RecvFlags::empty())?;
    if bytes == 0 && fds.is_empty() {
        return Ok(None);
    }
    Ok(Some(fds))
}

/// PID 1 of the sandbox: never returns.
fn pid1(started: start::Pid1) -> ! {
    let start::Pid1 {
        mut ctl,
        provision,
        sync,
        image,
        workspace,
    } = started;
    match build(&mut ctl, &provision, sync, image, workspace) {
        Ok(Some(prepared)) => {
            let exec: Exec = match ctl.recv() {
                Ok(Some(e)) => e,
                Ok(None) => exit::end(0),
                Err(message) => {
                    ctl.send(&FromInit::Failed { message });
                    exit::end(1)
                }
            };
            let (report, _held) = match launch(prepared, exec) {
                Ok((r, held)) => (r, Some(held)),
                Err(message) => (FromInit::Failed { message }, None),
            };
            ctl.send(&report);
            // What the call held (`_held`) is never freed: this process ends here.
            exit::end(0)
        }
        Ok(None) => exit::end(0),
        Err(message) => {
            ctl.send(&FromInit::Failed { message });
            exit::end(1)
        }
    }
}

/// What PID 1 prepares before the tool is known.
struct Prepared {
    /// The tool's process, confined, waiting for its job.
    tool: waiting::WaitingTool,
    /// The relay, listening (egress only).
    relay: Option<relay::Relay>,
}

/// Builds the sandbox; `None` if the host went away first.
fn build(
    ctl: &mut Control,
    p: &Provision,
    sync: OwnedFd,
    image: OwnedFd,
    workspace: OwnedFd,
) -> Result<Option<Prepared>, String> {
    // Open the proxy's directory while this process still has the host's root credentials
    // (uid 0 outside, so owner permissions of root's files apply); nothing is mounted yet.
    let proxy = mounts::open_proxy(p)?;
    let binds = mounts::open_binds(p)?;
    let mut go = [0u8; 1];
    match rustix::io::read(&sync, &mut go) {
        Ok(1) => {}
        _ => return Ok(None),
    }
    drop(sync);
    let root = rustix::process::Gid::ROOT;
    rustix::thread::set_thread_res_gid(root, root, root)
        .map_err(|e| format!("setresgid(0) inside the sandbox: {e}"))?;
    let root = rustix::process::Uid::ROOT;
    rustix::thread::set_thread_res_uid(root, root, root)
        .map_err(|e| format!("setresuid(0) inside the sandbox: {e}"))?;
    // Credentials changed, which clears the parent-death signal: set it now.
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|e| format!("PR_SET_PDEATHSIG: {e}"))?;
    mounts::build(&mounts::Sources {
        image,
        workspace,
        binds,
    })?;
    // From here on nothing in the sandbox may read this process's memory or descriptors.
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(|e| format!("PR_SET_DUMPABLE: {e}"))?;
    rustix::system::sethostname(HOSTNAME.as_bytes()).map_err(|e| format!("sethostname: {e}"))?;
    if p.proxy_dir.is_some() && !p.netns {
        crate::netns::loopback_up()?;
    }
    // No process started from here on may hold a capability once it executes: the tool
    // inherits the empty bounding set and the locked secure bits (PID 1 keeps its effective
    // set, which it still needs to place the inputs and start the relay).
    limits::drop_capabilities()?;
    let fence = fence::ruleset(p)?;
    // From here on PID 1 (its relay included) is held to the tool's system calls but `mount`,
    // and the tool inherits the filter.
    let filters = seccomp::compiled()?;
    seccomp::apply(&filters.sandbox)?;
    // The tool's process, confined now (it inherits the filter): a call only lets it go.
    let tool = waiting::WaitingTool::start(|| confine_tool(&p.limits, fence, &filters.tool))?;
    // The tool holds the stdio pipes now; PID 1 lets go of them.
    spawn::let_go_of_stdio();
    // The relay's socket, listening before the tool starts (so its first connect succeeds).
    let relay = proxy.map(relay::listen).transpose()?;
    ctl.send(&FromInit::Ready);
    Ok(Some(Prepared { tool, relay }))
}

/// Starts the tool; how it ended, and what the call still holds (the tool's stack, job and
/// pipes), handed back rather than freed: PID 1 reports first and then ends, freeing nothing.
/// Unmapping the stack and freeing the job's strings before the report kept the host's answer
/// waiting about 20 µs more.
fn launch(prepared: Prepared, exec: Exec) -> Result<(FromInit, waiting::Started), String> {
    let Prepared { tool, relay } = prepared;
    let (argv, envp) = spawn::c_strings(exec.argv, exec.env)?;
    let cwd = CString::new(exec.cwd.unwrap_or_else(|| WORKSPACE.to_string()))
        .map_err(|_| "the working directory contains a NUL byte")?;
    inputs::place(exec.files)?;
    let mut started = tool.go(argv, envp, cwd)?;
    let status = watch::until_tool_ends(started.pid(), relay, None)?;
    started.outcome()?;
    Ok((status, started))
}

/// In the tool's process, while PID 1 builds the sandbox: its limits, no new privileges, the
/// Landlock domain and what the tool adds to the seccomp filter it inherits.
fn confine_tool(
    limits: &super::Limits,
    fence: landlock::RulesetCreated,
    filter: &seccompiler::BpfProgram,
) -> Result<(), String> {
    limits::apply(limits)?;
    rustix::thread::set_no_new_privs(true).map_err(|e| format!("PR_SET_NO_NEW_PRIVS: {e}"))?;
    fence::restrict(fence)?;
    seccomp::apply(filter)
}

#[cfg(test)]
mod dispatch_tests {
    use std::ffi::OsStr;

    use super::{is_init, PROCESS_NAME};

    #[test]
    fn only_the_init_name_marks_the_init() {
        assert!(is_init(Some(OsStr::new(PROCESS_NAME))));
        assert!(is_init(Some(OsStr::new("/some/dir/escepine-init"))));
        assert!(!is_init(Some(OsStr::new("research"))));
        assert!(!is_init(Some(OsStr::new("escepine-init-not"))));
        assert!(!is_init(None));
    }
}
