//! How the zygote starts one sandbox: it reads the sandbox's [`Provision`], does the host's share
//! of the work (the workspace made as the host's root, the memory cgroup's file opened, the
//! network namespace entered), clones the sandbox's PID 1 straight into fresh user, PID, mount,
//! IPC and UTS namespaces (and a network namespace, when none came), writes its
//! `setgroups`/`uid_map`/`gid_map` (uid and gid 0 inside → the unprivileged outside id) and lets
//! it go on. Like `fork`, [`sandbox`] returns twice: in the zygote, and in the new PID 1.
//!
//! No process stands between the zygote and PID 1: each sandbox costs one `clone` of the zygote
//! and the tool's own process, not a forked process that only clones and waits (its fork, the
//! pages it copies on write and its exit were a fifth of a burst's CPU). The zygote's work per
//! sandbox is a few dozen system calls; what takes time (building the root, the seccomp filter,
//! the tool's process) is PID 1's, in parallel with the others'.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use rustix::process::{Pid, Signal};

use super::control::{self, Control};
use super::{exit, mounts};
use crate::protocol::{FromInit, Provision, MAX_LINE};

/// The zygote's own descriptors, which no sandbox may keep.
pub(super) struct Zygote {
    /// The socket the runtime hands sandboxes over.
    pub(super) requests: OwnedFd,
    /// The host's network namespace, which the zygote returns to after cloning a PID 1 into
    /// another.
    pub(super) netns: OwnedFd,
}

/// One sandbox handed to the zygote: its control socket, and the write ends of the tool's
/// stdout and stderr pipes.
pub(super) struct Request {
    pub(super) control: OwnedFd,
    pub(super) stdout: OwnedFd,
    pub(super) stderr: OwnedFd,
}

/// Which side of [`sandbox`]'s clone returned.
pub(super) enum Started {
    /// The zygote: the sandbox's PID 1 runs, or the host was told why it could not.
    Zygote,
    /// The sandbox's PID 1, with its standard streams, memory cgroup and cgroup namespace set.
    Pid1(Box<Pid1>),
}

/// What a new PID 1 starts from.
pub(super) struct Pid1 {
    /// Its end of the control socket.
    pub(super) ctl: Control,
    pub(super) provision: Provision,
    /// Reads one byte once the zygote has written the identity maps; end-of-file if it could
    /// not (or died).
    pub(super) sync: OwnedFd,
    /// The spec's root image (a detached mount, from the runtime).
    pub(super) image: OwnedFd,
    /// The workspace (a detached tmpfs, made by the zygote).
    pub(super) workspace: OwnedFd,
}

/// The zygote cannot go on: it could not return to the host's network namespace.
#[derive(Debug)]
pub(super) struct Stranded;

/// Starts the sandbox of `request` (see the [module](self)). In the zygote it returns
/// [`Started::Zygote`] whether or not the sandbox started (the host hears why not on the
/// control socket), and [`Stranded`] if the zygote must end.
pub(super) fn sandbox(request: Request, zygote: &Zygote) -> Result<Started, Stranded> {
    let Request {
        control,
        stdout,
        stderr,
    } = request;
    let failed = |message: String| {
        control::send_on(&control, &FromInit::Failed { message }, &[]);
        Ok(Started::Zygote)
    };
    let (provision, stdin, image, netns) = match receive_provision(&control) {
        Ok(Some(received)) => received,
        Ok(None) => return Ok(Started::Zygote),
        Err(message) => return failed(message),
    };
    // Made with the host's root's credentials, before the user namespace.
    let workspace = match mounts::workspace(&provision) {
        Ok(fd) => fd,
        Err(message) => return failed(message),
    };
    let cgroup = match provision.cgroup.as_deref().map(cgroup_file).transpose() {
        Ok(file) => file,
        Err(message) => return failed(message),
    };
    let (sync_r, sync_w) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok(p) => p,
        Err(e) => return failed(format!("pipe: {e}")),
    };
    let mut flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS;
    match &netns {
        // The host's namespace, never used or emptied (its loopback up if the sandbox has
        // egress): entered for the clone, as the host's root, so PID 1 is created in it.
        Some(netns) => {
            if let Err(message) = enter_netns(netns) {
                return failed(message);
            }
        }
        None => flags |= libc::CLONE_NEWNET,
    }
    // Where the clone puts PID 1's pidfd (in the zygote only): it names PID 1 whatever
    // happens to its pid, which the zygote never holds (PIDs 1 are reaped by the kernel).
    let mut pidfd: libc::c_int = -1;
    // SAFETY: `clone` with a null stack and no CLONE_VM/CLONE_THREAD behaves like `fork`: the
    // child gets a copy of this address space. The zygote never starts a thread, so the child
    // may go on running ordinary Rust code (no lock can be held by a thread that does not exist
    // in the child). With CLONE_PIDFD the third argument (parent_tid on every architecture's
    // order) is where the kernel writes the pidfd; the others are unused without
    // CLONE_CHILD_*TID/SETTLS.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::CLONE_PIDFD | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            std::ptr::from_mut(&mut pidfd),
            0usize,
            0usize,
        )
    };
    let clone_error = std::io::Error::last_os_error();
    if pid == 0 {
        drop(sync_w);
        let streams = [stdin, stdout, stderr];
        if let Err(message) = pid1_prologue(zygote, &streams, cgroup) {
            control::send_on(&control, &FromInit::Failed { message }, &[]);
            exit::end(70)
        }
        let Ok(ctl) = Control::new(control) else {
            exit::end(70)
        };
        drop(streams);
        return Ok(Started::Pid1(Box::new(Pid1 {
            ctl,
            provision,
            sync: sync_r,
            image,
            workspace,
        })));
    }
    drop(sync_r);
    // Back to the host's network namespace first, whatever the clone did.
    let home = if netns.is_some() {
        enter_netns(&zygote.netns)
    } else {
        Ok(())
    };
    let Some(child) = cloned(pid) else {
        let message = format!("cannot create the sandbox's namespaces: {clone_error}");
        control::send_on(&control, &FromInit::Failed { message }, &[]);
        return home.map(|()| Started::Zygote).map_err(|_| Stranded);
    };
    // SAFETY: the clone made a child, so the kernel wrote a new descriptor here, owned by
    // nobody else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    let kill = || {
        let _ = rustix::process::pidfd_send_signal(&pidfd, Signal::KILL);
    };
    if let Err(message) = home {
        kill();
        control::send_on(&control, &FromInit::Failed { message }, &[]);
        return Err(Stranded);
    }
    if let Err(message) = write_maps(child, &provision) {
        kill();
        return failed(message);
    }
    control::send_on(
        &control,
        &FromInit::Spawned {
            pid1: child.as_raw_nonzero().get(),
        },
        &[pidfd.as_fd()],
    );
    drop(pidfd);
    let _ = rustix::io::write(&sync_w, b"g");
    Ok(Started::Zygote)
}

/// In the new PID 1, first: the zygote's ways and descriptors shed, the death signal set, the
/// tool's streams as standard input, output and error, into the sandbox's memory cgroup (before
/// any process of the sandbox is created) and a cgroup namespace rooted there.
fn pid1_prologue(
    zygote: &Zygote,
    [stdin, stdout, stderr]: &[OwnedFd; 3],
    cgroup: Option<OwnedFd>,
) -> Result<(), String> {
    // SAFETY: restoring the default disposition installs no handler code.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    for fd in [&zygote.requests, &zygote.netns] {
        // SAFETY: this process's copies of the zygote's descriptors, which it never uses: the
        // `OwnedFd`s in its copy of the zygote's memory are never dropped here (this process
        // never returns to the zygote's loop).
        unsafe { libc::close(fd.as_raw_fd()) };
    }
    // The sandbox dies with the zygote, which dies with the runtime. (Should the zygote end
    // before this, the identity maps are never written and the sync pipe reads end-of-file.)
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|e| format!("PR_SET_PDEATHSIG: {e}"))?;
    rustix::stdio::dup2_stdin(stdin).map_err(|e| format!("dup2 of the tool's stdin: {e}"))?;
    rustix::stdio::dup2_stdout(stdout).map_err(|e| format!("dup2 of the tool's stdout: {e}"))?;
    rustix::stdio::dup2_stderr(stderr).map_err(|e| format!("dup2 of the tool's stderr: {e}"))?;
    if let Some(file) = cgroup {
        join_cgroup(&file)?;
        // SAFETY: only the cgroup namespace is unshared, never the descriptor table.
        unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWCGROUP) }
            .map_err(|e| format!("a cgroup namespace for the sandbox: {e}"))?;
    }
    Ok(())
}

/// The file of the cgroup `dir` that moves a process into it, opened by the zygote: writing to
/// it is allowed by who opened it (the kernel checks the opener's credentials), so PID 1 moves
/// itself through it although it no longer acts as the host's root.
///
/// On cgroup v1 it is `tasks`, which moves the writing thread alone (PID 1 has one): a move of
/// the calling thread alone is the one the kernel makes without taking
/// `cgroup_threadgroup_rwsem` for writing, a lock that waits for an RCU grace period when nobody
/// took it lately (milliseconds, under `cgroup_mutex`) and made the move the slowest step of the
/// slowest cold calls. Cgroup v2, which has no `tasks`, moves the process through
/// `cgroup.procs`.
fn cgroup_file(dir: &Path) -> Result<OwnedFd, String> {
    let open = |name: &str| {
        rustix::fs::open(
            dir.join(name),
            rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
    };
    match open("tasks") {
        Err(rustix::io::Errno::NOENT) => open("cgroup.procs"),
        other => other,
    }
    .map_err(|e| format!("cannot open the memory cgroup {}: {e}", dir.display()))
}

/// Moves this process into the cgroup whose [`cgroup_file`] is `file`.
fn join_cgroup(file: &OwnedFd) -> Result<(), String> {
    rustix::io::write(file, b"0")
        .map(drop)
        .map_err(|e| format!("cannot join the sandbox's memory cgroup: {e}"))
}

/// Enters the network namespace `netns`.
fn enter_netns(netns: &OwnedFd) -> Result<(), String> {
    rustix::thread::move_into_link_name_space(
        netns.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| format!("entering the sandbox's network namespace: {e}"))
}

/// What the zygote receives first on a sandbox's control socket: the provision, the tool's
/// stdin pipe, the root image and the network namespace the provision announces.
type Received = (Provision, OwnedFd, OwnedFd, Option<OwnedFd>);

/// Reads the [`Provision`] line and the descriptors that come with it (`SCM_RIGHTS`): the
/// tool's stdin pipe, the root image and, when [`Provision::netns`] says so, a network
/// namespace; `None` if the host closed the socket first.
fn receive_provision(control: &OwnedFd) -> Result<Option<Received>, String> {
    let mut line: Vec<u8> = Vec::new();
    let mut fds: Vec<OwnedFd> = Vec::new();
    // One page: a provision is a few hundred bytes.
    let mut buf = [0u8; 4096];
    while !line.ends_with(b"\n") {
        let (bytes, received) =
            crate::scm::recv(control, &mut buf, rustix::net::RecvFlags::empty())
                .map_err(|e| format!("cannot read the control socket: {e}"))?;
        fds.extend(received);
        if bytes == 0 {
            return Ok(None);
        }
        line.extend_from_slice(&buf[..bytes]);
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

/// The child a `clone` returning `pid` made in its parent; `None` when it made none. (Never a
/// pid of 0 or below, which `kill` would take for a process group or every process.)
fn cloned(pid: libc::c_long) -> Option<Pid> {
    i32::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .and_then(Pid::from_raw)
}

/// Maps uid and gid 0 of PID 1's new user namespace to the outside ids.
fn write_maps(pid: Pid, p: &Provision) -> Result<(), String> {
    let pid = pid.as_raw_nonzero();
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/{pid}/{file}"), text)
            .map_err(|e| format!("cannot write /proc/{pid}/{file}: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("0 {} 1\n", p.outside_uid))?;
    write("gid_map", format!("0 {} 1\n", p.outside_gid))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::cloned;

    #[test]
    fn only_a_positive_pid_names_a_child() {
        assert_eq!(cloned(-1), None, "a failed clone");
        assert_eq!(cloned(0), None, "the child's own side");
        assert_eq!(cloned(i64::from(i32::MAX) + 1), None, "no pid");
        assert_eq!(cloned(4242).map(|p| p.as_raw_nonzero().get()), Some(4242));
    }
}
