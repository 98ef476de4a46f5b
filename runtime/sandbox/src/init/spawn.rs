//! How a sandbox's first process — PID 1 of a namespace sandbox, or the guest of a gVisor one —
//! starts the tool and waits for it: the job's argument and environment strings made C strings
//! before the fork, the tool forked with a close-on-exec pipe that carries why it could not
//! start, the parent's stdio let go, and every process reaped until the tool's status is known.

use std::ffi::CString;
use std::io::Read;

use rustix::process::WaitOptions;

use crate::protocol::FromInit;

/// In the tool's process, first: into `cwd`, under `limits`, with every capability dropped for
/// good (what both tiers do before their own confinement).
pub(super) fn confine(cwd: &str, limits: &crate::Limits) -> Result<(), String> {
    rustix::process::chdir(cwd).map_err(|e| format!("chdir {cwd}: {e}"))?;
    super::limits::apply(limits)?;
    super::limits::drop_capabilities()
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

/// Forks the tool, which runs `child` (confine and execute; it returns only why it failed).
/// Returns the tool's pid once it has executed, or why it could not.
///
/// The caller must have one thread only: the child runs ordinary Rust code until it executes.
pub(super) fn fork_tool(child: impl FnOnce() -> String) -> Result<i32, String> {
    let (err_r, err_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: `fork` in a process with one thread (the caller's promise): the child may run
    // ordinary Rust code until it executes the tool or exits with `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "cannot fork the tool: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        drop(err_r);
        let why = child();
        let _ = rustix::io::write(&err_w, why.as_bytes());
        // SAFETY: `_exit` ends the child at once, without running the parent's exit handlers
        // or flushing buffers it copied.
        unsafe { libc::_exit(127) }
    }
    drop(err_w);
    let mut why = String::new();
    let _ = std::fs::File::from(err_r).read_to_string(&mut why);
    if why.is_empty() {
        Ok(pid)
    } else {
        Err(why)
    }
}

/// Lets go of the stdio pipes the tool holds now, and reaps every process until the tool `pid`
/// has ended: its status.
pub(super) fn wait_tool(pid: i32) -> Result<FromInit, String> {
    null_stdio(0);
    null_stdio(1);
    null_stdio(2);
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((reaped, status))) if reaped.as_raw_nonzero().get() == pid => {
                if let Some(code) = status.exit_status() {
                    return Ok(FromInit::Exited { code });
                }
                if let Some(signal) = status.terminating_signal() {
                    return Ok(FromInit::Signaled { signal });
                }
                return Err(format!("the tool ended with wait status {status:?}"));
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(format!("wait: {e}")),
        }
    }
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
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());
    // SAFETY: both arrays are null-terminated and point into `argv`/`envp`, which outlive the
    // call; `execve` only returns on failure.
    unsafe {
        libc::execve(argv[0].as_ptr(), argv_ptrs.as_ptr(), envp_ptrs.as_ptr());
    }
    format!(
        "cannot execute {}: {}",
        argv[0].to_string_lossy(),
        std::io::Error::last_os_error()
    )
}
