//! How a sandbox's first process — PID 1 of a namespace sandbox, or the guest of a gVisor one —
//! starts the tool and waits for it: the job's argument and environment strings made C strings
//! before it starts; in a gVisor guest, the tool started in this process's memory until it
//! executes (as `posix_spawn` does) with a close-on-exec pipe that carries why it could not
//! start (a namespace sandbox's PID 1 starts it ahead of the job instead, see
//! [`super::waiting`], on a [`Stack`] of this module); then, on both tiers, the parent's stdio
//! let go, and every process reaped until the tool's status is known.

use std::ffi::CString;
use std::io::Read;

use rustix::process::WaitOptions;

use crate::protocol::FromInit;

/// In the tool's process of a gVisor guest, first: into `cwd`, under `limits` (a namespace
/// sandbox's applies its limits ahead of the job and changes directory at its start, see
/// [`super::waiting`]).
pub(super) fn confine(cwd: &str, limits: &crate::Limits) -> Result<(), String> {
    rustix::process::chdir(cwd).map_err(|e| chdir_failed(cwd, e))?;
    super::limits::apply(limits)
}

/// `argv` and `env` (`NAME=value`) as C strings; a NUL byte in either refuses the job.
pub(super) fn c_strings(
    argv: Vec<String>,
    env: Vec<(String, String)>,
) -> Result<(Vec<CString>, Vec<CString>), String> {
    if argv.is_empty() {
        return Err("no program to run".into());
    }
    let cstr =
        |s: String, what: &str| CString::new(s).map_err(|_| format!("{what} contains a NUL byte"));
    let argv = argv
        .into_iter()
        .map(|a| cstr(a, "an argument"))
        .collect::<Result<_, _>>()?;
    let envp = env
        .into_iter()
        .map(|(k, v)| cstr(format!("{k}={v}"), "an environment variable"))
        .collect::<Result<_, _>>()?;
    Ok((argv, envp))
}

/// The stack the tool's process runs on until it executes (beneath it, one page that faults).
const CHILD_STACK: usize = 256 * 1024;

/// Starts the tool's process, which runs `child` (confine and execute; it returns only why it
/// failed). Returns the tool's pid once it has executed, or why it could not.
///
/// The process shares this one's memory until it executes (`CLONE_VM | CLONE_VFORK`, as
/// `posix_spawn` does), on a stack of its own: no page table is copied and none of this
/// process's pages is faulted in again, which a `fork` of PID 1 would cost on every call. This
/// process is suspended meanwhile; whatever `child` consumed stays consumed here, and what it
/// allocates before it fails is leaked (it ends right after).
///
/// The caller must have one thread only: the child runs ordinary Rust code (it may allocate)
/// while no other thread may hold a lock of this address space.
pub(super) fn fork_tool<F: FnOnce() -> String>(child: F) -> Result<i32, String> {
    use std::os::fd::{AsRawFd, RawFd};

    struct Start<F> {
        child: Option<F>,
        err: RawFd,
    }

    extern "C" fn run<F: FnOnce() -> String>(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Start` of the parent, which is suspended (CLONE_VFORK) until
        // this process executes or exits, so nothing else touches it meanwhile.
        let start = unsafe { &mut *arg.cast::<Start<F>>() };
        let why = match start.child.take() {
            Some(child) => child(),
            None => "the tool's process started twice".to_string(),
        };
        // SAFETY: the pipe's write end stays open in this process's descriptor table (a copy
        // of the parent's) until it executes or exits.
        let err = unsafe { std::os::fd::BorrowedFd::borrow_raw(start.err) };
        let _ = rustix::io::write(err, why.as_bytes());
        // SAFETY: `_exit` ends this process at once, running none of the exit handlers and
        // flushing none of the buffers it shares with the parent.
        unsafe { libc::_exit(127) }
    }

    let (err_r, err_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| format!("pipe: {e}"))?;
    let stack = Stack::new(CHILD_STACK)?;
    let mut start = Start {
        child: Some(child),
        err: err_w.as_raw_fd(),
    };
    // SAFETY: `run::<F>` gets a pointer to `start`, which outlives the child's use of it: with
    // CLONE_VFORK this call returns only once the child has executed or exited. The stack is
    // mapped, writable, and ends at `stack.top()` (16-byte aligned); nothing else uses it.
    let pid = unsafe {
        libc::clone(
            run::<F>,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_mut(&mut start).cast(),
        )
    };
    if pid < 0 {
        return Err(format!(
            "cannot start the tool's process: {}",
            std::io::Error::last_os_error()
        ));
    }
    drop(stack);
    drop(err_w);
    let mut why = String::new();
    let _ = std::fs::File::from(err_r).read_to_string(&mut why);
    if why.is_empty() {
        Ok(pid)
    } else {
        Err(why)
    }
}

/// An anonymous mapping used as a stack, with a page beneath it that faults on overflow.
pub(super) struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

impl Stack {
    /// A stack of `size` bytes (and its guard page).
    pub(super) fn new(size: usize) -> Result<Self, String> {
        // SAFETY: sysconf reads a constant of the system.
        let guard = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = size + guard;
        // SAFETY: a new private anonymous mapping, at an address the kernel picks.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!(
                "mapping the tool's process's stack: {}",
                std::io::Error::last_os_error()
            ));
        }
        let stack = Self { base, len };
        // SAFETY: the first page of the mapping just made.
        if unsafe { libc::mprotect(base, guard, libc::PROT_NONE) } != 0 {
            return Err(format!(
                "protecting the stack's guard page: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(stack)
    }

    /// The stack's top (it grows down), 16-byte aligned.
    pub(super) fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, which is page-aligned and so 16-byte aligned.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, used by nobody any more.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Points this process's stdin, stdout and stderr at `/dev/null` (the tool holds the pipes).
pub(super) fn let_go_of_stdio() {
    null_stdio(0);
    null_stdio(1);
    null_stdio(2);
}

/// Reaps every process until the tool `pid` has ended: its status.
pub(super) fn reap(pid: i32) -> Result<FromInit, String> {
    reap_until(pid, WaitOptions::empty())?
        .ok_or_else(|| "wait returned with no process ended".to_string())
}

/// Reaps every process that has ended, without waiting for one: the tool `pid`'s status once
/// it is among them.
pub(super) fn reap_ended(pid: i32) -> Result<Option<FromInit>, String> {
    reap_until(pid, WaitOptions::NOHANG)
}

/// Reaps processes (`wait` with `options`) until the tool `pid` is among them (its status),
/// or, with `NOHANG`, until none more has ended (`None`).
fn reap_until(pid: i32, options: WaitOptions) -> Result<Option<FromInit>, String> {
    loop {
        match rustix::process::wait(options) {
            Ok(None) => return Ok(None),
            Ok(Some((reaped, status))) if reaped.as_raw_nonzero().get() == pid => {
                return status_of(status).map(Some)
            }
            Ok(Some(_)) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(format!("wait: {e}")),
        }
    }
}

/// What the tool's wait status reports.
fn status_of(status: rustix::process::WaitStatus) -> Result<FromInit, String> {
    if let Some(code) = status.exit_status() {
        return Ok(FromInit::Exited { code });
    }
    if let Some(signal) = status.terminating_signal() {
        return Ok(FromInit::Signaled { signal });
    }
    Err(format!("the tool ended with wait status {status:?}"))
}

/// Points `fd` (0, 1 or 2) at `/dev/null`.
pub(super) fn null_stdio(which: i32) {
    if let Ok(null) = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        let _ = match which {
            0 => rustix::stdio::dup2_stdin(&null),
            1 => rustix::stdio::dup2_stdout(&null),
            _ => rustix::stdio::dup2_stderr(&null),
        };
    }
}

/// Executes `argv` with `envp`; returns only on failure, with why.
pub(super) fn execute(argv: &[CString], envp: &[CString]) -> String {
    let (argv_ptrs, envp_ptrs) = (pointers(argv), pointers(envp));
    // SAFETY: both arrays are null-terminated and point into `argv`/`envp`, which outlive the
    // call; `execve` only returns on failure.
    unsafe {
        libc::execve(argv[0].as_ptr(), argv_ptrs.as_ptr(), envp_ptrs.as_ptr());
    }
    exec_failed(argv, std::io::Error::last_os_error())
}

/// `strings` as the null-terminated array of pointers `execve` takes (valid while `strings`
/// is).
pub(super) fn pointers(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Why the tool could not change into `cwd`.
pub(super) fn chdir_failed(cwd: &str, e: impl std::fmt::Display) -> String {
    format!("chdir {cwd}: {e}")
}

/// Why the tool `argv` could not be executed.
pub(super) fn exec_failed(argv: &[CString], e: impl std::fmt::Display) -> String {
    let program = argv.first().map(|a| a.to_string_lossy());
    format!("cannot execute {}: {e}", program.unwrap_or_default())
}
