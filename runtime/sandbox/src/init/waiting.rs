//! The tool's process of a namespace sandbox, started and confined while PID 1 builds the
//! sandbox, before the job is known: a call then only hands it the job, and it changes
//! directory and executes. Its limits, `PR_SET_NO_NEW_PRIVS`, Landlock domain and seccomp filter
//! — a clone and a dozen system calls — are off the call's critical path, which a warm
//! sandbox's call pays for in full otherwise.
//!
//! The process shares PID 1's memory (`CLONE_VM`, as [`super::spawn::fork_tool`]'s does): no
//! page table is copied, which a `fork` of PID 1 would cost every sandbox. While it confines
//! itself PID 1 waits for it, as a `vfork` parent does, so that it may run ordinary Rust code.
//! From its report on, both run: it then allocates nothing, takes no lock and calls nothing
//! but system calls (through `rustix`, which keeps no `errno`), until it executes — whereupon
//! it has memory of its own — or ends.

use std::ffi::{CStr, CString};
use std::io::Read;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicPtr, Ordering};

use super::spawn::{chdir_failed, exec_failed, pointers, Stack};

/// The stack the process runs on until it executes.
const STACK: usize = 256 * 1024;

/// First byte of the process's report: it is confined and waits for its job.
const CONFINED: u8 = 0;
/// First byte of the process's report: it could not confine itself; why follows.
const NOT_CONFINED: u8 = 1;
/// Its report after the job: `chdir` failed; the errno follows (4 bytes, native order).
const CHDIR_FAILED: u8 = b'c';
/// Its report after the job: `execve` failed; the errno follows (4 bytes, native order).
const EXEC_FAILED: u8 = b'e';

/// The job, as pointers into PID 1's memory (shared with the process until it executes).
#[derive(Default)]
struct Job {
    /// The null-terminated argument vector.
    argv: AtomicPtr<*const libc::c_char>,
    /// The null-terminated environment.
    envp: AtomicPtr<*const libc::c_char>,
    /// The working directory.
    cwd: AtomicPtr<libc::c_char>,
}

/// What the process starts with (in PID 1's memory, which waits until it is confined).
struct Start<F> {
    confine: Option<F>,
    report: RawFd,
    go: RawFd,
    /// PID 1's ends of the two pipes, which this process's copy of the descriptor table holds
    /// too: closed first, so that PID 1 closing its own is seen.
    theirs: [RawFd; 2],
    job: *const Job,
}

/// A confined tool's process waiting for its job (see the [module](self)). Dropping it without
/// [`WaitingTool::go`] ends the process.
pub(super) struct WaitingTool {
    pid: i32,
    /// One byte written here lets the process go; closing it ends the process.
    go: Option<OwnedFd>,
    report: std::fs::File,
    job: Box<Job>,
    /// Dropped after the process has executed or ended.
    _stack: Stack,
}

impl WaitingTool {
    /// Starts the process, which runs `confine` (and returns why it failed, if it did), and
    /// returns once it is confined and waits.
    pub(super) fn start<F: FnOnce() -> Result<(), String>>(confine: F) -> Result<Self, String> {
        let (report_r, report_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| format!("pipe: {e}"))?;
        let (go_r, go_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| format!("pipe: {e}"))?;
        let stack = Stack::new(STACK)?;
        let job = Box::<Job>::default();
        let mut start = Start {
            confine: Some(confine),
            report: report_w.as_raw_fd(),
            go: go_r.as_raw_fd(),
            theirs: [report_r.as_raw_fd(), go_w.as_raw_fd()],
            job: std::ptr::from_ref(job.as_ref()),
        };
        // SAFETY: `run::<F>` gets a pointer to `start`, which it reads only until it reports
        // (this function waits for that report below, with `start` alive). `job` is boxed and
        // outlives the process's use of it (`WaitingTool` keeps it until the process has
        // executed or ended). The stack is mapped, writable, ends at `stack.top()` (16-byte
        // aligned) and is kept as long as `job`.
        let pid = unsafe {
            libc::clone(
                run::<F>,
                stack.top(),
                libc::CLONE_VM | libc::SIGCHLD,
                std::ptr::from_mut(&mut start).cast(),
            )
        };
        if pid < 0 {
            return Err(format!(
                "cannot start the tool's process: {}",
                std::io::Error::last_os_error()
            ));
        }
        // The process holds its own copies (its descriptor table is a copy of this one's).
        drop((report_w, go_r));
        let mut report = std::fs::File::from(report_r);
        let mut first = [0u8; 1];
        let confined = match report.read(&mut first) {
            Ok(1) if first[0] == CONFINED => Ok(()),
            Ok(1) => {
                let mut why = String::new();
                let _ = report.read_to_string(&mut why);
                Err(why)
            }
            _ => Err("the tool's process ended before it was confined".to_string()),
        };
        let waiting = Self {
            pid,
            go: Some(go_w),
            report,
            job,
            _stack: stack,
        };
        confined.map(|()| waiting)
    }

    /// Hands the process its job: it changes into `cwd` and executes `argv` with `envp`.
    /// Returns at once, without waiting for either: why it could not is known once it has
    /// ended ([`Started::outcome`]), so that this process is not woken while the tool starts.
    pub(super) fn go(
        mut self,
        argv: Vec<CString>,
        envp: Vec<CString>,
        cwd: CString,
    ) -> Result<Started, String> {
        let (mut argv_ptrs, mut envp_ptrs) = (pointers(&argv), pointers(&envp));
        self.job
            .argv
            .store(argv_ptrs.as_mut_ptr(), Ordering::Release);
        self.job
            .envp
            .store(envp_ptrs.as_mut_ptr(), Ordering::Release);
        self.job
            .cwd
            .store(cwd.as_ptr().cast_mut(), Ordering::Release);
        let go = self
            .go
            .take()
            .ok_or("the tool's process was let go twice")?;
        let started = Started {
            tool: self,
            argv,
            cwd,
            _strings: (envp, argv_ptrs, envp_ptrs),
        };
        let written = rustix::io::write(&go, &[1]);
        // Closed before `started` can be dropped: if the byte did not go, the process reads end
        // of file and ends, which `started`'s drop waits for.
        drop(go);
        written.map_err(|e| format!("letting the tool's process go: {e}"))?;
        Ok(started)
    }
}

/// A tool's process given its job. Its strings, stack and report stay until it has executed or
/// ended: dropping this value waits for that (`tool`, dropped first, waits).
pub(super) struct Started {
    tool: WaitingTool,
    argv: Vec<CString>,
    cwd: CString,
    /// The environment and both pointer arrays, which the process reads until it executes.
    _strings: (
        Vec<CString>,
        Vec<*const libc::c_char>,
        Vec<*const libc::c_char>,
    ),
}

impl Started {
    /// The process's pid.
    pub(super) fn pid(&self) -> i32 {
        self.tool.pid
    }

    /// Once the process has ended: why it could not execute the job, if it could not.
    pub(super) fn outcome(&mut self) -> Result<(), String> {
        let mut got = Vec::new();
        let _ = self.tool.report.read_to_end(&mut got);
        let errno = |bytes: &[u8]| {
            let raw = <[u8; 4]>::try_from(bytes).map_or(0, i32::from_ne_bytes);
            std::io::Error::from_raw_os_error(raw)
        };
        match got.split_first() {
            None => Ok(()),
            Some((&CHDIR_FAILED, rest)) => {
                Err(chdir_failed(&self.cwd.to_string_lossy(), errno(rest)))
            }
            Some((&EXEC_FAILED, rest)) => Err(exec_failed(&self.argv, errno(rest))),
            Some(_) => Err("the tool's process reported nonsense".to_string()),
        }
    }
}

impl Drop for WaitingTool {
    fn drop(&mut self) {
        // Closing the pipe ends a process never let go. Then wait for end of file: once the
        // process has executed (the pipe is close-on-exec) or ended, its stack, its job and
        // (dropped after this, see `Started`) its strings are no longer read.
        drop(self.go.take());
        let _ = self.report.read_to_end(&mut Vec::new());
    }
}

/// The process: confine, report, wait for the job, execute it.
extern "C" fn run<F: FnOnce() -> Result<(), String>>(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Start` of PID 1, which waits (reading the report) until this
    // process reports below, so nothing else touches it meanwhile.
    let start = unsafe { &mut *arg.cast::<Start<F>>() };
    let (report, go, job) = (start.report, start.go, start.job);
    for fd in start.theirs {
        // SAFETY: a descriptor of this process's own table that nothing here uses.
        unsafe { rustix::io::close(fd) };
    }
    let confined = match start.confine.take() {
        Some(confine) => confine(),
        None => Err("the tool's process started twice".to_string()),
    };
    // SAFETY: both pipe ends stay open in this process's descriptor table (a copy of PID 1's)
    // until it executes or ends.
    let (report, go) = unsafe { (BorrowedFd::borrow_raw(report), BorrowedFd::borrow_raw(go)) };
    if let Err(why) = confined {
        let _ = rustix::io::write(report, &[NOT_CONFINED]);
        let _ = rustix::io::write(report, why.as_bytes());
        end()
    }
    // From here on PID 1 runs too: system calls only.
    if rustix::io::write(report, &[CONFINED]) != Ok(1) {
        end()
    }
    let mut byte = [0u8; 1];
    loop {
        match rustix::io::read(go, &mut byte) {
            Ok(1) => break,
            Err(rustix::io::Errno::INTR) => continue,
            // PID 1 closed the pipe: no job.
            _ => end(),
        }
    }
    // SAFETY: `job` is PID 1's boxed `Job`, alive until this process executes or ends; PID 1
    // stored every pointer (Release) before it wrote the byte just read. The pointers are
    // PID 1's strings, alive and unchanged until then.
    let (argv, envp, cwd) = unsafe {
        let job = &*job;
        (
            job.argv.load(Ordering::Acquire),
            job.envp.load(Ordering::Acquire),
            CStr::from_ptr(job.cwd.load(Ordering::Acquire)),
        )
    };
    if let Err(e) = rustix::process::chdir(cwd) {
        fail(report, CHDIR_FAILED, e.raw_os_error())
    }
    // SAFETY: both arrays are null-terminated arrays of PID 1's C strings (see above);
    // `execve` only returns on failure.
    let errno = unsafe {
        libc::syscall(libc::SYS_execve, *argv, argv, envp);
        // The C library's `errno` is PID 1's main thread's (this process runs on its thread
        // pointer); PID 1 is blocked reading the report, and never reads it then.
        *libc::__errno_location()
    };
    fail(report, EXEC_FAILED, errno)
}

/// Reports `what` and `errno`, and ends the process.
fn fail(report: BorrowedFd<'_>, what: u8, errno: i32) -> ! {
    let e = errno.to_ne_bytes();
    let _ = rustix::io::write(report, &[what, e[0], e[1], e[2], e[3]]);
    end()
}

/// Ends the process at once (no exit handler, no buffer flushed: they are PID 1's).
fn end() -> ! {
    // SAFETY: `_exit` runs nothing of this process.
    unsafe { libc::_exit(127) }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;

    use rustix::process::{Pid, Resource, Rlimit, WaitOptions};

    use super::WaitingTool;

    fn c(s: &str) -> CString {
        CString::new(s).expect("no NUL")
    }

    /// The exit code of the child `pid`, once it has ended.
    fn exit_code(pid: i32) -> Option<i32> {
        let pid = Pid::from_raw(pid).expect("a pid");
        let (_, status) = rustix::process::waitpid(Some(pid), WaitOptions::empty())
            .expect("waitpid")
            .expect("a status");
        status.exit_status()
    }

    fn nofile() -> Option<u64> {
        rustix::process::getrlimit(Resource::Nofile).current
    }

    #[test]
    fn the_job_runs_confined_where_it_is_told_and_the_confinement_stays_in_the_process() {
        let before = nofile();
        let dir = tempfile::tempdir().expect("tempdir");
        let tool = WaitingTool::start(|| {
            let limit = Rlimit {
                current: Some(77),
                maximum: Some(77),
            };
            rustix::process::setrlimit(Resource::Nofile, limit).map_err(|e| e.to_string())
        })
        .expect("confined");
        let argv = [
            c("/bin/sh"),
            c("-c"),
            c("echo \"$(pwd) $(ulimit -n) $GREETING\" > out"),
        ];
        let envp = [c("GREETING=hello")];
        let dir_c = c(dir.path().to_str().expect("a UTF-8 path"));
        let mut started = tool.go(argv.into(), envp.into(), dir_c).expect("let go");
        assert_eq!(exit_code(started.pid()), Some(0));
        started.outcome().expect("it executed");
        let out = std::fs::read_to_string(dir.path().join("out")).expect("the job wrote");
        assert_eq!(out.trim(), format!("{} 77 hello", dir.path().display()));
        assert_eq!(nofile(), before, "the limit is the process's alone");
    }

    #[test]
    fn a_confinement_that_fails_is_reported_and_nothing_waits() {
        let Err(why) = WaitingTool::start(|| Err("refused for the test".to_string())) else {
            panic!("a failed confinement must fail the start");
        };
        assert_eq!(why, "refused for the test");
    }

    #[test]
    fn a_missing_directory_or_program_is_named_with_the_error() {
        let tool = WaitingTool::start(|| Ok(())).expect("confined");
        let mut started = tool
            .go(
                vec![c("/bin/true")],
                Vec::new(),
                c("/nonexistent/escepine-dir"),
            )
            .expect("let go");
        assert_eq!(exit_code(started.pid()), Some(127));
        assert_eq!(
            started.outcome().expect_err("no such directory"),
            "chdir /nonexistent/escepine-dir: No such file or directory (os error 2)"
        );

        let tool = WaitingTool::start(|| Ok(())).expect("confined");
        let mut started = tool
            .go(vec![c("/nonexistent/escepine-tool")], Vec::new(), c("/"))
            .expect("let go");
        assert_eq!(exit_code(started.pid()), Some(127));
        assert_eq!(
            started.outcome().expect_err("no such program"),
            "cannot execute /nonexistent/escepine-tool: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn a_process_never_given_a_job_ends_when_it_is_dropped() {
        let tool = WaitingTool::start(|| Ok(())).expect("confined");
        let pid = tool.pid;
        drop(tool);
        assert_eq!(exit_code(pid), Some(127));
    }
}
