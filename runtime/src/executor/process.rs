//! The process executor: one process per attempt, speaking design.md's `stdio-json` protocol.
//!
//! Each attempt resolves the tool's binary (refusing it if the record's `sha256` differs; a pinned
//! binary runs from a sealed private copy of exactly the bytes hashed, so swapping or rewriting
//! the file after the check changes nothing), starts
//! it in a new process group with a cleared environment, writes the payload JSON on its stdin and
//! closes it, and reads its stdout and stderr, both bounded. Exit 0 with exactly one JSON value on
//! stdout is success; exit 75 (`EX_TEMPFAIL`) is a transient failure; any other status or a signal
//! is a permanent one. On timeout, and when the attempt is dropped, the whole process group is
//! killed with `SIGKILL`; when the tool exits, whatever it left running in its group is killed too,
//! so nothing outlives the attempt that started it.
//!
//! This executor isolates nothing beyond the environment: no file-system, network or resource
//! limits (the sandbox executor wraps it for those), and it reports no egress refusals.

mod resolve;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::telemetry::{ENV_TRACEPARENT, ENV_TRACESTATE};
use escepine_contract::{Transport, ENV_CALL_ID, ENV_IDEMPOTENCY_KEY};
use escepine_registry::record::{ResolvedCommand, ToolRecord};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::time::Instant;

pub use self::resolve::PinnedCopy;
use self::resolve::{PinCache, SearchDirs};
use super::bounded::{read_bounded, read_stderr, Bounded};
use super::exit::{self, Finished};
use super::seam::{ExecError, Execution, Executor, Invocation};
use super::spawn::{kill_and_reap, spawn_piped, Pipes};
use escepine_ledger::store::BoxFuture;

pub use super::group::{DEFAULT_STDERR_LIMIT, DEFAULT_STDOUT_LIMIT};
use escepine_sandbox::JobStatus;
pub use escepine_sandbox::{SAFE_PATH, TOOL_LANG};

/// Runs each attempt as one fresh process speaking `stdio-json`.
///
/// The environment of the process holds only `PATH` ([`SAFE_PATH`]), `LANG` ([`TOOL_LANG`]),
/// `ESCEPINE_CALL_ID`, `ESCEPINE_IDEMPOTENCY_KEY` and the secrets the tool declares (taken from
/// [`Invocation::secrets`]); secrets never appear in argv. The working directory is inherited.
#[derive(Debug, Clone)]
pub struct ProcessExecutor {
    dirs: SearchDirs,
    stdout_limit: usize,
    stderr_limit: usize,
    pins: Arc<PinCache>,
}

/// A tool's binary as resolved for one attempt.
#[derive(Debug, Clone)]
pub struct Program {
    /// Where the endpoint's binary is.
    pub path: PathBuf,
    /// For a record with a `sha256` pin: the sealed copy of the binary whose digest matched,
    /// which is what runs.
    pub pinned: Option<PinnedCopy>,
}

impl Default for ProcessExecutor {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcessExecutor {
    /// An executor with the default bounds, finding workspace binaries in the default places.
    pub fn new() -> Self {
        Self {
            dirs: SearchDirs::default(),
            stdout_limit: DEFAULT_STDOUT_LIMIT,
            stderr_limit: DEFAULT_STDERR_LIMIT,
            pins: Arc::default(),
        }
    }

    /// Look for workspace binaries (`ResolvedCommand::WorkspaceBin`) in `dir` first. May be
    /// called several times; the directories are searched in the order given, before the
    /// directory of the current executable, its parent and the workspace's `target/`.
    pub fn with_bin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dirs.bin_dirs.push(dir.into());
        self
    }

    /// The workspace whose `target/{release,debug}/` holds built workspace binaries (by default
    /// the workspace above the record's file, else above the working directory).
    pub fn with_workspace_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.dirs.workspace_root = Some(root.into());
        self
    }

    /// Bound the tool's stdout to `bytes` (default [`DEFAULT_STDOUT_LIMIT`]); more is a
    /// [`ExecError::Protocol`] violation and the process group is killed.
    pub fn with_stdout_limit(mut self, bytes: usize) -> Self {
        self.stdout_limit = bytes;
        self
    }

    /// Keep at most `bytes` of the tool's stderr (default [`DEFAULT_STDERR_LIMIT`]); the rest is
    /// read, counted and noted as truncated. The cut comes after scrubbing, so that a secret
    /// straddling it is not half kept.
    pub fn with_stderr_limit(mut self, bytes: usize) -> Self {
        self.stderr_limit = bytes;
        self
    }

    /// The binary to run for `tool` (a `stdio-json` tool or an `mcp-stdio` server), its digest
    /// checked against the record's `sha256` if given.
    ///
    /// Fails with [`ExecError::Spawn`] for a binary that cannot be found, or a digest that
    /// differs (naming the expected and the actual digest).
    pub async fn program(&self, tool: &ToolRecord) -> Result<PathBuf, ExecError> {
        Ok(self.resolve(tool).await?.path)
    }

    /// The binary of `tool`'s endpoint, whatever its transport, and for a pinned record the
    /// sealed copy whose digest matched (see [`ProcessExecutor::program`]).
    ///
    /// # Errors
    /// As [`ProcessExecutor::program`].
    pub async fn resolve(&self, tool: &ToolRecord) -> Result<Program, ExecError> {
        let path = resolve::locate(tool, &self.dirs)?;
        let Some(expected) = &tool.endpoint().sha256 else {
            return Ok(Program { path, pinned: None });
        };
        // Hashing reads the whole binary: keep it off the async workers.
        let (pins, tool_id, at, expected) = (
            Arc::clone(&self.pins),
            tool.tool_id().to_string(),
            path.clone(),
            expected.clone(),
        );
        let copy = tokio::task::spawn_blocking(move || {
            resolve::verify_digest(&pins, &tool_id, &at, &expected)
        })
        .await
        .map_err(|e| ExecError::Spawn(format!("the digest check failed: {e}")))??;
        Ok(Program {
            path,
            pinned: Some(copy),
        })
    }

    /// The command for one attempt: `program` with the endpoint's `args` and the tool's
    /// environment (see [`ProcessExecutor`]). [`ProcessExecutor::run`] adds the pipes and the
    /// process group; a wrapping executor may add its own isolation in between.
    ///
    /// Only the secrets the record declares are passed, each if [`Invocation::secrets`] has
    /// it. Fails with [`ExecError::Spawn`] if a declared secret's name is reserved (`PATH`,
    /// `LANG`, the two `ESCEPINE_` variables) or not a valid variable name.
    pub fn command(&self, program: &Path, inv: &Invocation<'_>) -> Result<Command, ExecError> {
        self.command_at(Command::new(program), inv)
    }

    /// As [`ProcessExecutor::command`] for a resolved [`Program`]: a pinned one executes its
    /// sealed copy (`/proc/self/fd/N`, kept open across the exec so that a `#!` script's
    /// interpreter reads the copy too), with the binary's path as `argv[0]`.
    ///
    /// # Errors
    /// As [`ProcessExecutor::command`].
    pub fn program_command(
        &self,
        program: &Program,
        inv: &Invocation<'_>,
    ) -> Result<Command, ExecError> {
        let Some(copy) = &program.pinned else {
            return self.command(&program.path, inv);
        };
        use std::os::fd::AsRawFd;
        let fd = copy.fd().as_raw_fd();
        let mut cmd = Command::new(format!("/proc/self/fd/{fd}"));
        cmd.arg0(&program.path);
        let keep = copy.clone();
        // SAFETY: the closure runs in the child between fork and exec and makes one
        // async-signal-safe call (fcntl) on a descriptor the child inherited open.
        unsafe {
            cmd.pre_exec(move || {
                rustix::io::fcntl_setfd(keep.fd(), rustix::io::FdFlags::empty())?;
                Ok(())
            });
        }
        self.command_at(cmd, inv)
    }

    fn command_at(&self, mut cmd: Command, inv: &Invocation<'_>) -> Result<Command, ExecError> {
        if let ResolvedCommand::Linked(host) = &inv.tool.endpoint().resolved {
            cmd.arg(escepine_contract::linked::FLAG).arg(host);
        }
        cmd.args(&inv.tool.endpoint().args)
            .env_clear()
            .env("PATH", SAFE_PATH)
            .env("LANG", TOOL_LANG)
            .env(ENV_CALL_ID, inv.call_id)
            .env(ENV_IDEMPOTENCY_KEY, inv.idempotency_key);
        if let Some(trace) = inv.trace {
            cmd.env(ENV_TRACEPARENT, trace.traceparent());
            if let Some(state) = trace.tracestate() {
                cmd.env(ENV_TRACESTATE, state);
            }
        }
        for name in inv.tool.secrets() {
            if [
                "PATH",
                "LANG",
                ENV_CALL_ID,
                ENV_IDEMPOTENCY_KEY,
                ENV_TRACEPARENT,
                ENV_TRACESTATE,
            ]
            .contains(&name.as_str())
                || name.is_empty()
                || name.contains(['=', '\0'])
            {
                return Err(ExecError::Spawn(format!(
                    "`{}` declares a secret named `{name}`, which cannot be passed in the \
                     environment",
                    inv.tool.tool_id()
                )));
            }
            // A declared secret the secret source does not have is left unset: the tool
            // reports its own failure. Provided values the tool does not declare are not passed.
            if let Some(value) = inv.secrets.get(name) {
                cmd.env(name, value);
            }
        }
        Ok(cmd)
    }

    /// Run one attempt of `command` (as built by [`ProcessExecutor::command`]) until `deadline`:
    /// stdin gets the payload and EOF, stdout and stderr are read bounded, the exit status is
    /// classified. The process starts in a new process group, which is killed with `SIGKILL` on
    /// timeout, when the tool has exited (whatever it left running), and when this future is
    /// dropped.
    pub async fn run(
        &self,
        mut command: Command,
        inv: &Invocation<'_>,
        deadline: Instant,
    ) -> Result<Execution, ExecError> {
        let tool = inv.tool.tool_id();
        let payload = serde_json::to_vec(inv.payload)
            .map_err(|e| ExecError::Spawn(format!("cannot encode the payload of `{tool}`: {e}")))?;
        let (mut child, group, pipes) = spawn_piped(&mut command).map_err(|e| {
            ExecError::Spawn(format!(
                "cannot start {} for `{tool}`: {e}",
                command.as_std().get_program().to_string_lossy()
            ))
        })?;
        let Pipes {
            mut stdin,
            stdout,
            stderr,
        } = pipes;

        // One scrubber for the attempt: stderr's, and the quote of a malformed stdout.
        let scrubber = inv.scrubber();
        let attempt = async {
            let feed = async {
                // A tool may exit without reading its input: its exit status tells.
                let _ = stdin.write_all(&payload).await;
                let _ = stdin.shutdown().await;
                drop(stdin);
            };
            let out = async {
                let read = read_bounded(stdout, self.stdout_limit, false).await;
                if !matches!(read, Ok(Bounded { dropped: 0, .. })) {
                    // Too much output, or unreadable: stop the tool now.
                    group.kill();
                }
                read
            };
            let err = read_stderr(stderr, self.stderr_limit, &scrubber);
            let status = async {
                let status = child.wait().await;
                // The leader is gone: kill what it left in its group, which also closes the
                // pipes those leftovers hold, so the reads above reach EOF.
                group.kill();
                status
            };
            tokio::join!(feed, out, err, status)
        };

        match tokio::time::timeout_at(deadline, attempt).await {
            Ok(((), out, stderr, status)) => {
                group.disarm();
                let status = status.map_err(|e| {
                    ExecError::Spawn(format!("cannot wait for `{tool}` to finish: {e}"))
                })?;
                let stdout = out.map_err(|e| {
                    ExecError::Protocol(format!("cannot read the stdout of `{tool}`: {e}"))
                })?;
                let end = Finished {
                    status: JobStatus::from_exit(status),
                    stdout_overflow: stdout.dropped > 0,
                    stdout: stdout.kept,
                    stderr,
                };
                exit::stdio_json(tool, end, self.stdout_limit, &scrubber)
            }
            Err(_) => {
                kill_and_reap(&mut child, &group).await;
                Err(ExecError::TimedOut(inv.timeout))
            }
        }
    }

    async fn attempt(&self, inv: Invocation<'_>) -> Result<Execution, ExecError> {
        super::seam::workspace_files_refused(&inv)?;
        let deadline = Instant::now() + inv.timeout;
        let program = tokio::time::timeout_at(deadline, self.resolve(inv.tool))
            .await
            .map_err(|_| ExecError::TimedOut(inv.timeout))??;
        let command = self.program_command(&program, &inv)?;
        match inv.tool.endpoint().transport {
            Transport::StdioJson => self.run(command, &inv, deadline).await,
            // One MCP session per attempt: see `crate::mcp::transport`.
            #[cfg(feature = "mcp-stdio")]
            Transport::McpStdio => crate::mcp::transport::run(command, &inv, deadline).await,
            #[cfg(not(feature = "mcp-stdio"))]
            Transport::McpStdio => Err(super::seam::mcp_stdio_unavailable(inv.tool)),
            // The runtime hands remote tools to its remote executor, never to this one.
            Transport::McpHttp => Err(ExecError::Spawn(format!(
                "tool `{}` is a remote endpoint (`mcp-http`): no process runs it",
                inv.tool.tool_id()
            ))),
        }
    }
}

impl Executor for ProcessExecutor {
    fn execute<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Result<Execution, ExecError>> {
        Box::pin(self.attempt(inv))
    }
}
