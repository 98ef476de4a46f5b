//! The sandbox's init: the Linux backend's zygote ([`SERVER_FLAG`], one per backend), and the
//! processes it forks for every sandbox.
//!
//! The init is no separate program: the backend starts the program that embeds it
//! (`/proc/self/exe`) with `argv[0]` = [`PROCESS_NAME`], and that program's `main` calls
//! [`dispatch`] first, which runs the init and never returns (as `runc init` does). A program
//! that cannot do this may name the crate's `escepine-sandbox-init` binary instead.
//!
//! A sandbox's outer process has the control socket ([`super::protocol`]) as its standard input,
//! whose first message brings the tool's stdin pipe; its standard output and error are the
//! tool's. Each sandbox runs in two processes:
//!
//! - the **outer** process (in the host's namespaces) reads [`Provision`], enters the
//!   network namespace the host made ahead of demand (never used, or emptied by an ended
//!   sandbox) when one came with it
//!   (`netns`), clones the sandbox's PID 1 into fresh user, PID, mount, IPC, UTS and cgroup
//!   namespaces (and a network namespace, when none came), writes its
//!   `setgroups`/`uid_map`/`gid_map` (uid and gid 0 inside → the unprivileged outside id), lets
//!   it go on, and waits for it;
//! - **PID 1** becomes uid 0 of its namespace, builds the root file system (`mounts`), brings
//!   loopback up when the sandbox has egress and made its own network namespace, empties the
//!   bounding set and locks the secure bits (so no program executed from it holds a
//!   capability), prepares the landlock ruleset (`fence`), installs the seccomp filter
//!   (`seccomp`, compiled once by the zygote) on itself but for `mount`, and starts the tool's
//!   process (`waiting`), which inherits the filter and the empty bounding set, applies the
//!   limits, enforces the ruleset, refuses itself `mount` too and waits. PID 1 binds the
//!   loopback relay's socket (`relay`), reports ready and waits for [`Exec`]: it places the
//!   call's inputs and hands the job to the waiting process, which changes directory and
//!   executes (losing every capability PID 1 still holds); PID 1 runs the relay, reaps every
//!   process, and when the tool ends reports its status and exits — which kills everything
//!   left in the PID namespace.
//!
//! Both processes are single-threaded whenever they fork or clone (the relay thread starts
//! after the tool's process), so the code between a fork and what follows may be ordinary
//! Rust; the tool's waiting process, which shares PID 1's memory, keeps to system calls once
//! PID 1 runs again (see `waiting`).

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
mod waiting;

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::process::{Pid, Signal, WaitOptions};

use super::protocol::{Exec, FromInit, Provision, HOSTNAME, MAX_LINE, WORKSPACE};
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

/// The entry point of the init: with `--server`, the zygote (`server`);
/// otherwise one sandbox's outer process on its standard streams.
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
    std::process::exit(outer())
}

/// The argument that makes `escepine-sandbox-init` the zygote.
pub const SERVER_FLAG: &str = "--server";
/// The zygote's `argv[0]`, which every sandbox's PID 1 inherits: no host path.
pub const PROCESS_NAME: &str = "escepine-init";

/// The zygote: one long-lived, single-threaded process per backend that forks the outer
/// process of each sandbox, so that no sandbox pays for starting a program (exec, dynamic
/// loading: most of a millisecond here).
///
/// Its standard input is a `SOCK_SEQPACKET` socket from the runtime; each message carries
/// exactly three descriptors — the new sandbox's control socket, and the write ends of its
/// stdout and stderr pipes. For each, it forks a child that makes them its standard input,
/// output and error and runs [`outer`] exactly as a freshly started `escepine-sandbox-init`
/// would. Children are reaped by the kernel (`SIGCHLD` ignored here, restored in the child). It
/// ends when its socket reads end-of-file: when the runtime drops the backend, or dies — and its
/// sandboxes with it (each outer process has `PR_SET_PDEATHSIG` = `SIGKILL`, and so has PID 1).
fn server() -> i32 {
    let requests = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(_) => return 70,
    };
    spawn::null_stdio(0);
    // SAFETY: setting a signal disposition to SIG_IGN installs no handler code.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
    // Once, before the first fork: every sandbox's PID 1 inherits the compiled filters (an
    // error is reported by each PID 1 that asks for them).
    let _ = seccomp::compiled();
    loop {
        let fds = match receive_fds(&requests) {
            Ok(Some(fds)) => fds,
            Ok(None) => return 0,
            Err(_) => continue,
        };
        let [control, stdout, stderr] = match <[OwnedFd; 3]>::try_from(fds) {
            Ok(three) => three,
            Err(_) => continue,
        };
        let zygote = rustix::process::getpid();
        // SAFETY: this process never starts a thread, so the child may run ordinary Rust code
        // (no lock can be held by a thread that does not exist in the child).
        match unsafe { libc::fork() } {
            0 => {
                // SAFETY: restoring the default disposition installs no handler code.
                unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
                drop(requests);
                // The sandbox dies with the zygote, which dies with the runtime: this process
                // gets SIGKILL when the zygote ends, and PID 1 when this process ends. (Checked
                // after setting it, in case the zygote ended before.)
                if rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).is_err()
                    || rustix::process::getppid() != Some(zygote)
                {
                    exit::end(70)
                }
                let ok = rustix::stdio::dup2_stdin(&control).is_ok()
                    && rustix::stdio::dup2_stdout(&stdout).is_ok()
                    && rustix::stdio::dup2_stderr(&stderr).is_ok();
                drop((control, stdout, stderr));
                exit::end(if ok { outer() } else { 70 })
            }
            // The child holds its copies; a failed fork drops the request, whose control
            // socket then reads end-of-file on the runtime's side.
            _ => drop((control, stdout, stderr)),
        }
    }
}

/// The descriptors of the next request; `None` at end of stream.
fn receive_fds(socket: &OwnedFd) -> Result<Option<Vec<OwnedFd>>, rustix::io::Errno> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut byte = [0u8; 16];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        match rustix::net::recvmsg(
            socket,
            &mut [std::io::IoSliceMut::new(&mut byte)],
            &mut ancillary,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    let mut fds = Vec::new();
    for msg in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = msg {
            fds.extend(received);
        }
    }
    if got.bytes == 0 && fds.is_empty() {
        return Ok(None);
    }
    Ok(Some(fds))
}

/// The outer process; returns its exit status.
fn outer() -> i32 {
    // The control socket arrives as stdin: keep a close-on-exec copy, and free fd 0.
    let control = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(_) => return 70,
    };
    spawn::null_stdio(0);
    // The first message carries the read end of the tool's stdin pipe; it becomes fd 0.
    let first = receive_provision(&control);
    let mut ctl = match Control::new(control) {
        Ok(c) => c,
        Err(_) => return 70,
    };
    let (provision, image, netns): (Provision, OwnedFd, Option<OwnedFd>) = match first {
        Ok(Some((p, stdin, image, netns))) => {
            if let Err(e) = rustix::stdio::dup2_stdin(&stdin) {
                ctl.send(&FromInit::Failed {
                    message: format!("dup2 of the tool's stdin: {e}"),
                });
                return 70;
            }
            (p, image, netns)
        }
        Ok(None) => return 0,
        Err(message) => {
            ctl.send(&FromInit::Failed { message });
            return 70;
        }
    };
    // The workspace, made with the host's root's credentials (before the user namespace).
    let workspace = match mounts::workspace(&provision) {
        Ok(fd) => fd,
        Err(message) => {
            ctl.send(&FromInit::Failed { message });
            return 70;
        }
    };
    // Into the sandbox's memory cgroup, before PID 1 exists: every process of the sandbox is
    // created inside it.
    if let Some(dir) = &provision.cgroup {
        if let Err(message) = join_cgroup(dir) {
            ctl.send(&FromInit::Failed { message });
            return 70;
        }
    }
    let (sync_r, sync_w) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok(p) => p,
        Err(e) => {
            ctl.send(&FromInit::Failed {
                message: format!("pipe: {e}"),
            });
            return 70;
        }
    };
    let mut flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP;
    match netns {
        // The host's namespace, never used or emptied (its loopback up if the sandbox has
        // egress): entered here, as the host's root, so PID 1 is created in it.
        Some(netns) => {
            if let Err(message) = enter_netns(&netns) {
                ctl.send(&FromInit::Failed { message });
                return 70;
            }
        }
        None => flags |= libc::CLONE_NEWNET,
    }
    // SAFETY: `clone` with a null stack and no CLONE_VM/CLONE_THREAD behaves like `fork`: the
    // child gets a copy of this address space. This process never starts a thread, so the child
    // may go on running ordinary Rust code (no lock can be held by a thread that does not exist
    // in the child). The arguments after the stack are unused without CLONE_*TID/SETTLS flags.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        ctl.send(&FromInit::Failed {
            message: format!(
                "cannot create the sandbox's namespaces: {}",
                std::io::Error::last_os_error()
            ),
        });
        return 70;
    }
    if pid == 0 {
        drop(sync_w);
        pid1(ctl, provision, sync_r, image, workspace);
    }
    drop(sync_r);
    drop((image, workspace));
    let pid = pid as i32;
    if let Err(message) = write_maps(pid, &provision) {
        if let Some(p) = Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(p, Signal::KILL);
        }
        ctl.send(&FromInit::Failed { message });
        let _ = rustix::process::wait(WaitOptions::empty());
        return 70;
    }
    ctl.send(&FromInit::Spawned {
        pid1: pid,
        outer: rustix::process::getpid().as_raw_nonzero().get(),
    });
    let _ = rustix::io::write(&sync_w, b"g");
    drop(sync_w);
    drop(ctl);
    // The tool's pipes must see EOF when the tool's processes are gone, not when this one is.
    spawn::null_stdio(1);
    spawn::null_stdio(2);
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((p, _))) if p.as_raw_nonzero().get() == pid => return 0,
            Ok(_) => continue,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return 0,
        }
    }
}

/// Moves this process into the cgroup `dir`.
///
/// On cgroup v1 it writes `0` (itself) to `tasks`, which moves its only thread (this process
/// never starts one): a move of the calling thread alone is the one the kernel makes without
/// taking `cgroup_threadgroup_rwsem` for writing, a lock that waits for an RCU grace period
/// when nobody took it lately (milliseconds, under `cgroup_mutex`) and made the move the
/// slowest step of the slowest cold calls. Cgroup v2, which has no `tasks`, moves the process
/// through `cgroup.procs`.
fn join_cgroup(dir: &std::path::Path) -> Result<(), String> {
    let tasks = dir.join("tasks");
    let (file, written) = match std::fs::write(&tasks, "0") {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let procs = dir.join("cgroup.procs");
            let pid = rustix::process::getpid().as_raw_nonzero().to_string();
            let written = std::fs::write(&procs, pid);
            (procs, written)
        }
        written => (tasks, written),
    };
    written.map_err(|e| format!("cannot join the memory cgroup {}: {e}", file.display()))
}

/// Enters the network namespace `netns`.
fn enter_netns(netns: &OwnedFd) -> Result<(), String> {
    rustix::thread::move_into_link_name_space(
        netns.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| format!("entering the sandbox's network namespace: {e}"))
}

/// What the outer process receives first: the provision, the tool's stdin pipe, the root image
/// and the network namespace the provision announces.
type Received = (Provision, OwnedFd, OwnedFd, Option<OwnedFd>);

/// Reads the [`Provision`] line and the descriptors that come with it (`SCM_RIGHTS`): the
/// tool's stdin pipe, the root image and, when [`Provision::netns`] says so, a network
/// namespace; `None` if the host closed the socket first.
fn receive_provision(control: &OwnedFd) -> Result<Option<Received>, String> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut line: Vec<u8> = Vec::new();
    let mut fds: Vec<OwnedFd> = Vec::new();
    // One page: a provision is a few hundred bytes, and this process, forked from the zygote,
    // pays a page fault for every page it writes (a 64 KiB buffer, zeroed, was 16 of them).
    let mut buf = [0u8; 4096];
    while !line.ends_with(b"\n") {
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
        let mut ancillary = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(
            control,
            &mut [std::io::IoSliceMut::new(&mut buf)],
            &mut ancillary,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(|e| format!("cannot read the control socket: {e}"))?;
        for msg in ancillary.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = msg {
                fds.extend(received);
            }
        }
        if got.bytes == 0 {
            return Ok(None);
        }
        line.extend_from_slice(&buf[..got.bytes]);
        if line.len() > MAX_LINE {
            return Err("the provision message is too long".into());
        }
    }
    let provision: Provision =
        serde_json::from_slice(&line).map_err(|e| format!("malformed provision: {e}"))?;
    let mut fds = fds.into_iter();
    let (Some(stdin), Some(image)) = (fds.next(), fds.next()) else {
        return Err("the provision came without the tool's stdin and the root image".into());
    };
    let netns = fds.next();
    if netns.is_some() != provision.netns {
        return Err("the provision's network namespace and its descriptors disagree".into());
    }
    Ok(Some((provision, stdin, image, netns)))
}

/// Maps uid and gid 0 of the new user namespace to the outside ids.
fn write_maps(pid: i32, p: &Provision) -> Result<(), String> {
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/{pid}/{file}"), text)
            .map_err(|e| format!("cannot write /proc/{pid}/{file}: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("0 {} 1\n", p.outside_uid))?;
    write("gid_map", format!("0 {} 1\n", p.outside_gid))?;
    Ok(())
}

/// PID 1 of the sandbox: never returns.
fn pid1(
    mut ctl: Control,
    provision: Provision,
    sync: OwnedFd,
    image: OwnedFd,
    workspace: OwnedFd,
) -> ! {
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
            let report = match launch(prepared, exec) {
                Ok(r) => r,
                Err(message) => FromInit::Failed { message },
            };
            ctl.send(&report);
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
    /// The relay's listening socket and the proxy's socket directory (egress only).
    relay: Option<(std::net::TcpListener, OwnedFd)>,
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
    let relay = match proxy {
        Some(dir) => Some((relay::listen()?, dir)),
        None => None,
    };
    ctl.send(&FromInit::Ready);
    Ok(Some(Prepared { tool, relay }))
}

/// Starts the tool and reports how it ended.
fn launch(prepared: Prepared, exec: Exec) -> Result<FromInit, String> {
    let Prepared { tool, relay } = prepared;
    let (argv, envp) = spawn::c_strings(exec.argv, exec.env)?;
    let cwd = CString::new(exec.cwd.unwrap_or_else(|| WORKSPACE.to_string()))
        .map_err(|_| "the working directory contains a NUL byte")?;
    inputs::place(exec.files)?;
    let started = tool.go(argv, envp, cwd)?;
    // Its thread while the tool starts: not on the way to it.
    if let Some((listener, dir)) = relay {
        relay::spawn(listener, dir);
    }
    let status = spawn::reap(started.pid())?;
    started.outcome()?;
    Ok(status)
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
