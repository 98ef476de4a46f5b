//! Limits and the process group shared by every executor that starts a host process (the
//! `stdio-json` executor in [`super::process`], the `mcp-stdio` transport, the import of an MCP
//! server's listing): below all of them, so none depends on another for it.

use std::sync::atomic::{AtomicBool, Ordering};

/// Default bound of a tool's stdout; beyond it the attempt is a protocol violation.
pub const DEFAULT_STDOUT_LIMIT: usize = 16 * 1024 * 1024;
/// Default bound of the stderr kept per attempt; the rest is counted and noted as truncated.
pub const DEFAULT_STDERR_LIMIT: usize = 64 * 1024;

/// The process group of one attempt; killed with `SIGKILL` on [`ProcessGroup::kill`] and on
/// drop unless disarmed (when the attempt finished and its group was already killed).
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<rustix::process::Pid>,
    armed: AtomicBool,
}

impl ProcessGroup {
    /// The group led by `leader` (started with `process_group(0)`).
    pub fn new(leader: Option<u32>) -> Self {
        // `process_group(0)` makes the leader's pid the group id. Never signal group 0 (ours)
        // or 1 (`kill(-1)` means every process).
        let pgid = leader
            .and_then(|p| i32::try_from(p).ok())
            .filter(|&p| p > 1)
            .and_then(rustix::process::Pid::from_raw);
        Self {
            pgid,
            armed: AtomicBool::new(true),
        }
    }

    /// Kill every process of the group with `SIGKILL`.
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (nothing left in the group) is the normal case after a clean exit.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }

    /// Leave the group alive on drop (it was already killed, or its attempt finished).
    pub fn disarm(&self) {
        self.armed.store(false, Ordering::Relaxed);
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed.load(Ordering::Relaxed) {
            self.kill();
        }
    }
}
