//! Starting the server to import and reading its raw `tools/list`: in a sandbox (the default)
//! or as a host process (`--unsandboxed`). Either way its stderr is read, bounded, and its last
//! lines are quoted when the server fails before listing (`ModuleNotFoundError: …`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::Command;
use tokio::time::Instant;

use super::model::{ImportError, ServerTools};
use escepine_runtime::executor::bounded::{read_stderr, with_stderr_tail};
use escepine_runtime::executor::group::{DEFAULT_STDERR_LIMIT, DEFAULT_STDOUT_LIMIT};
use escepine_runtime::executor::process::{SAFE_PATH, TOOL_LANG};
use escepine_runtime::executor::spawn::{exit_by, spawn_piped, Pipes};
use escepine_runtime::executor::ExecError;
use escepine_runtime::mcp::rpc::RawClient;
use escepine_runtime::mcp::transport::{SessionError, SHUTDOWN_GRACE};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_runtime::sandbox::ServerSession;
use escepine_runtime::scrub::Scrubber;
use escepine_sandbox::JobStatus;
use escepine_sandbox::ToolImage;

/// Initialize a session on `read`/`write` (the server's stdout and stdin) and read every page
/// of `tools/list`, raw. The session is closed (the server's stdin with it) before this returns.
///
/// # Errors
/// [`SessionError`] as the raw client reports it.
pub async fn list_over<R, W>(read: R, write: W) -> Result<ServerTools, SessionError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut client = RawClient::connect(read, write, DEFAULT_STDOUT_LIMIT).await?;
    let tools = client.list_tools().await?;
    Ok(ServerTools::new(client.server_info(), tools))
}

/// Start `command` as a host process — with a cleared environment: `PATH` (the tools' own,
/// [`SAFE_PATH`]), `LANG` ([`TOOL_LANG`]) and the host's `HOME` only — in a new process group
/// killed at the end, and read its tools within `timeout`.
///
/// # Errors
/// [`ImportError`]; a failed session quotes the end of the server's stderr.
pub async fn list_unsandboxed(
    command: &[String],
    timeout: Duration,
) -> Result<ServerTools, ImportError> {
    let (program, args) = command.split_first().ok_or(ImportError::NoCommand)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .env("PATH", SAFE_PATH)
        .env("LANG", TOOL_LANG);
    if let Some(home) = std::env::var_os("HOME") {
        cmd.env("HOME", home);
    }
    let (mut child, group, pipes) = spawn_piped(&mut cmd).map_err(|e| ImportError::Spawn {
        command: program.clone(),
        why: e.to_string(),
    })?;
    let Pipes {
        stdin,
        stdout,
        stderr,
    } = pipes;
    let scrubber = Scrubber::default();
    let deadline = Instant::now() + timeout;
    let work = async {
        let listed = tokio::time::timeout_at(deadline, list_over(stdout, stdin)).await;
        let status = exit_by(&mut child, Instant::now() + SHUTDOWN_GRACE).await;
        group.kill();
        (listed, status)
    };
    let ((listed, status), stderr) =
        tokio::join!(work, read_stderr(stderr, DEFAULT_STDERR_LIMIT, &scrubber));
    outcome(program, listed, status, &stderr, timeout)
}

/// Start `program` (absolute) with `args` in a sandbox of `executor`
/// ([`SandboxExecutor::attach_server`]: no host environment, no network, `read_only` besides
/// its binary's own files), read its tools within `timeout`, and destroy the sandbox.
///
/// # Errors
/// [`ImportError`]; a failed session quotes the end of the server's stderr.
pub async fn list_sandboxed(
    executor: &SandboxExecutor,
    program: &Path,
    args: &[String],
    read_only: &[PathBuf],
    timeout: Duration,
) -> Result<ServerTools, ImportError> {
    let shown = program.display().to_string();
    list_attached(
        &shown,
        executor.attach_server(program, args, read_only),
        timeout,
    )
    .await
}

/// Start the server of `command` and `args` (as a record's endpoint gives them: empty, the
/// image's `Entrypoint` and `Cmd`) on the root of `image`, in a sandbox of `executor`
/// ([`SandboxExecutor::attach_image_server`]: the image's `Env` and `WorkingDir`, no host
/// environment, no network, `read_only` bound), read its tools within `timeout`, and destroy
/// the sandbox.
///
/// # Errors
/// [`ImportError`]; a failed session quotes the end of the server's stderr.
pub async fn list_in_image(
    executor: &SandboxExecutor,
    image: &ToolImage,
    command: &str,
    args: &[String],
    read_only: &[PathBuf],
    timeout: Duration,
) -> Result<ServerTools, ImportError> {
    let shown = if command.is_empty() {
        format!("the entrypoint of {}", image.reference)
    } else {
        format!("{command} in {}", image.reference)
    };
    list_attached(
        &shown,
        executor.attach_image_server(image, command, args, read_only),
        timeout,
    )
    .await
}

/// Wait for `start` (a server starting in its sandbox), read its tools, and destroy the
/// sandbox; all within `timeout`.
async fn list_attached(
    shown: &str,
    start: impl std::future::Future<Output = Result<ServerSession, ExecError>>,
    timeout: Duration,
) -> Result<ServerTools, ImportError> {
    let deadline = Instant::now() + timeout;
    let session = tokio::time::timeout_at(deadline, start)
        .await
        .map_err(|_| ImportError::TimedOut {
            command: shown.to_string(),
            timeout,
        })?
        .map_err(|e| ImportError::Spawn {
            command: shown.to_string(),
            why: e.to_string(),
        })?;
    let (attached, sandbox) = session.into_parts();
    let escepine_sandbox::Attached {
        stdin,
        stdout,
        stderr,
        status,
    } = attached;
    let scrubber = Scrubber::default();
    let work = async {
        let listed = tokio::time::timeout_at(deadline, list_over(stdout, stdin)).await;
        let grace = Instant::now() + SHUTDOWN_GRACE;
        let ended = tokio::time::timeout_at(grace, status)
            .await
            .ok()
            .and_then(Result::ok);
        // Destroying the sandbox ends every process in it, which closes its stderr.
        let _ = sandbox.destroy().await;
        (listed, ended)
    };
    let ((listed, status), stderr) =
        tokio::join!(work, read_stderr(stderr, DEFAULT_STDERR_LIMIT, &scrubber));
    outcome(shown, listed, status, &stderr, timeout)
}

/// The listing's result: a timeout, a failed session (its status and stderr tail quoted), or
/// the tools.
fn outcome(
    program: &str,
    listed: Result<Result<ServerTools, SessionError>, tokio::time::error::Elapsed>,
    status: Option<JobStatus>,
    stderr: &str,
    timeout: Duration,
) -> Result<ServerTools, ImportError> {
    match listed {
        Err(_) => Err(ImportError::TimedOut {
            command: program.to_string(),
            timeout,
        }),
        Ok(Ok(tools)) => Ok(tools),
        Ok(Err(e)) => {
            let ended = match status {
                Some(s) => format!("; it {s}"),
                None => String::new(),
            };
            Err(ImportError::Session {
                command: program.to_string(),
                why: with_stderr_tail(format!("{e}{ended}"), stderr),
            })
        }
    }
}
