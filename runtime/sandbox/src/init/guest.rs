//! The guest of a gVisor sandbox: the container's first process (`escepine-init --guest`),
//! which plays the part PID 1 plays in a namespace sandbox.
//!
//! It connects to the host's control socket (in the host directory bound at
//! `/.escepine/run`, reachable through `runsc --host-uds=open`) before anything of the tool
//! exists, keeps a descriptor of that directory for the relay, and detaches `/.escepine` (its
//! own binary, its libraries and the sockets) and covers it with an empty read-only tmpfs, so
//! the tool finds no host file and no socket but its own. Then, as PID 1 does: it reads
//! [`GuestSetup`], reports [`FromInit::Ready`], waits for [`Exec`], places the workspace
//! inputs, starts the loopback relay when the sandbox has egress, hands the workspace to the
//! tool's user ([`TOOL_ID`]), starts the tool — which applies the limits, drops every
//! capability, becomes that user, sets `no_new_privs` and the same seccomp filters as the
//! namespace tier, and executes — and reports its status. When the guest exits, gVisor ends
//! every process of the container; it exits as soon as the host's end of the control socket
//! closes, so a runtime killed during a job leaves no container running.
//!
//! gVisor does not implement Landlock; its boundary is the user-space kernel itself.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

use rustix::fs::{Mode, OFlags};

use super::control::Control;
use super::{inputs, relay, seccomp, spawn, watch};
use crate::protocol::{Exec, FromInit, GuestSetup, CONTROL_SOCKET, GUEST_DIR, HOSTNAME, WORKSPACE};

/// The argument that makes the init the guest of a gVisor sandbox.
pub const GUEST_FLAG: &str = "--guest";
/// The tool's user and group in a gVisor sandbox: not the guest's (uid 0), so the tool cannot
/// signal the guest or touch its files — what Landlock's scopes do on the namespace tier.
pub const TOOL_ID: u32 = 65534;

/// The guest; returns its exit status (0 once the tool's status is reported).
pub(super) fn main() -> i32 {
    let run = format!("{GUEST_DIR}/run");
    let stream = match UnixStream::connect(format!("{run}/{CONTROL_SOCKET}")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("escepine-init: cannot reach the host's control socket: {e}");
            return 125;
        }
    };
    let mut ctl = match Control::new(OwnedFd::from(stream)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("escepine-init: the control socket: {e}");
            return 125;
        }
    };
    match serve(&mut ctl, &run) {
        Ok(Some(status)) => {
            ctl.send(&status);
            0
        }
        Ok(None) => 0,
        Err(message) => {
            ctl.send(&FromInit::Failed { message });
            125
        }
    }
}

/// Sets up, waits for the job, runs it; `None` when the host went away first.
fn serve(ctl: &mut Control, run: &str) -> Result<Option<FromInit>, String> {
    let Some(setup) = ctl.recv::<GuestSetup>()? else {
        return Ok(None);
    };
    let proxy = if setup.proxy {
        let dir = rustix::fs::open(
            run,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("opening {run}: {e}"))?;
        Some(dir)
    } else {
        None
    };
    rustix::mount::unmount(GUEST_DIR, rustix::mount::UnmountFlags::DETACH)
        .map_err(|e| format!("detaching {GUEST_DIR}: {e}"))?;
    // gVisor leaves what it made beneath the mount point reachable (its stubs of the binds,
    // which still read as the host's files): an empty read-only tmpfs covers all of it.
    rustix::mount::mount(
        "escepine",
        GUEST_DIR,
        "tmpfs",
        rustix::mount::MountFlags::RDONLY
            | rustix::mount::MountFlags::NOSUID
            | rustix::mount::MountFlags::NODEV
            | rustix::mount::MountFlags::NOEXEC,
        c"size=4096,mode=0555",
    )
    .map_err(|e| format!("covering {GUEST_DIR}: {e}"))?;
    rustix::system::sethostname(HOSTNAME.as_bytes()).map_err(|e| format!("sethostname: {e}"))?;
    let relay = match proxy {
        Some(dir) => {
            // gVisor's loopback may be up already; the relay's bind tells if it is not.
            let _ = crate::netns::loopback_up();
            Some(relay::listen(dir)?)
        }
        None => None,
    };
    let filters = seccomp::compiled()?;
    ctl.send(&FromInit::Ready);
    let Some(exec) = ctl.recv::<Exec>()? else {
        return Ok(None);
    };
    let (argv, envp) = spawn::c_strings(exec.argv, exec.env)?;
    inputs::place(exec.files)?;
    let (uid, gid) = (
        rustix::fs::Uid::from_raw(TOOL_ID),
        rustix::fs::Gid::from_raw(TOOL_ID),
    );
    rustix::fs::chown(WORKSPACE, Some(uid), Some(gid))
        .map_err(|e| format!("handing {WORKSPACE} to the tool's user: {e}"))?;
    let cwd = exec.cwd.unwrap_or_else(|| WORKSPACE.to_string());
    let pid = spawn::fork_tool(|| child(&setup.limits, filters, &cwd, &argv, &envp))?;
    spawn::let_go_of_stdio();
    // A runtime killed during the job leaves no sandbox running: this process ends once the
    // host's end of the control socket closes, which ends every process of the container, and
    // `runsc` with it.
    watch::until_tool_ends(pid, relay, Some(ctl.socket())).map(Some)
}

/// In the tool's process: confine it and execute the tool. Returns only on failure, with why.
fn child(
    limits: &crate::Limits,
    filters: &seccomp::Filters,
    cwd: &str,
    argv: &[CString],
    envp: &[CString],
) -> String {
    if let Err(e) = spawn::confine(cwd, limits) {
        return e;
    }
    if let Err(e) = super::limits::drop_capabilities() {
        return e;
    }
    // The tool's own user, with no supplementary group: a uid other than 0 holds no
    // capability at all from here on.
    if let Err(e) = rustix::thread::set_thread_groups(&[]) {
        return format!("setgroups: {e}");
    }
    let gid = rustix::process::Gid::from_raw(TOOL_ID);
    if let Err(e) = rustix::thread::set_thread_res_gid(gid, gid, gid) {
        return format!("setresgid({TOOL_ID}): {e}");
    }
    let uid = rustix::process::Uid::from_raw(TOOL_ID);
    if let Err(e) = rustix::thread::set_thread_res_uid(uid, uid, uid) {
        return format!("setresuid({TOOL_ID}): {e}");
    }
    if let Err(e) = rustix::thread::set_no_new_privs(true) {
        return format!("PR_SET_NO_NEW_PRIVS: {e}");
    }
    for filter in [&filters.sandbox, &filters.tool] {
        if let Err(e) = seccomp::apply(filter) {
            return e;
        }
    }
    spawn::execute(argv, envp)
}
