//! Starting a host process for one attempt, one way for every caller that does (the
//! `stdio-json` executor in [`super::process`], the `mcp-stdio` transport, the import of an MCP
//! server's listing): stdin, stdout and stderr piped, a new process group that is killed with
//! `SIGKILL` when its [`ProcessGroup`] is dropped, and the leader killed when its [`Child`] is.

use std::io;
use std::time::Duration;

use escepine_sandbox::JobStatus;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

use super::group::ProcessGroup;

/// How long a killed process is waited for before tokio's reaper is left to collect it (it can
/// only be stuck in the kernel: `SIGKILL` cannot be caught).
pub const REAP_GRACE: Duration = Duration::from_secs(5);

/// The three pipes of a started process.
#[derive(Debug)]
pub struct Pipes {
    /// Its stdin.
    pub stdin: ChildStdin,
    /// Its stdout.
    pub stdout: ChildStdout,
    /// Its stderr.
    pub stderr: ChildStderr,
}

/// Start `command` with piped stdio in a new process group.
///
/// Bind the result as `let (child, group, pipes) = …`: bindings are dropped in reverse order,
/// so the group is killed before tokio's kill-on-drop of the leader, while the leader cannot
/// have been reaped (its pid still names the group).
///
/// # Errors
/// Why the process could not be started.
pub fn spawn_piped(command: &mut Command) -> io::Result<(Child, ProcessGroup, Pipes)> {
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let group = ProcessGroup::new(child.id());
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(io::Error::other("its pipes were not set up"));
    };
    Ok((
        child,
        group,
        Pipes {
            stdin,
            stdout,
            stderr,
        },
    ))
}

/// How `child` ended if it exits by `until` (`None`: still running, or not waitable).
pub async fn exit_by(child: &mut Child, until: Instant) -> Option<JobStatus> {
    tokio::time::timeout_at(until, child.wait())
        .await
        .ok()
        .and_then(Result::ok)
        .map(JobStatus::from_exit)
}

/// Kill `group` and wait up to [`REAP_GRACE`] for its leader to be reaped.
pub async fn kill_and_reap(child: &mut Child, group: &ProcessGroup) {
    group.kill();
    let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
    group.disarm();
}
