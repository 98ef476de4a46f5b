//! One job in a provisioned sandbox, whatever its tier: the job's message, its stdin fed, stdout
//! bounded (an overflow kills the sandbox), stderr scrubbed and bounded, the status the
//! sandbox's init reports, and the deadline.

use std::pin::Pin;

use escepine_egress::ProxyHandle;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use crate::backend::{Attached, Job, JobOutput, JobStatus};
use crate::control_host::ControlHost;
use crate::io::{read_bounded, read_stderr, Bounded};
use crate::protocol::{Exec, ExecFile, FromInit};
use crate::SandboxError;

/// A provisioned sandbox's streams, taken for its one job.
pub(crate) struct Streams {
    /// The tool's standard input.
    pub stdin: Pin<Box<dyn AsyncWrite + Send + Sync>>,
    /// The tool's standard output.
    pub stdout: Pin<Box<dyn AsyncRead + Send + Sync>>,
    /// The tool's standard error.
    pub stderr: Pin<Box<dyn AsyncRead + Send + Sync>>,
    /// The init's control socket.
    pub control: ControlHost,
}

/// What a job needs of the sandbox it runs in.
pub(crate) trait Running: Sync {
    /// Kills everything in the sandbox.
    fn kill(&self);
    /// Whether the kernel killed a process of the sandbox for its memory bound.
    fn memory_exhausted(&self) -> bool;
    /// The sandbox's egress proxy, if it has egress.
    fn proxy(&self) -> Option<&ProxyHandle>;
}

fn exec_of(job: &mut Job) -> Exec {
    Exec {
        files: ExecFile::all(&job.files),
        argv: std::mem::take(&mut job.argv),
        env: std::mem::take(&mut job.env),
        cwd: job.cwd.take(),
    }
}

/// The streams the host reads during a job: once it has ended they are kept with the sandbox
/// ([`Sandbox::job_finished`]) and closed at its destroy, since closing each takes it out
/// of the runtime's reactor, about 30 µs of a warm call's end that its caller would otherwise
/// wait for.
///
/// [`Sandbox::job_finished`]: crate::backend::Sandbox::job_finished
pub(crate) struct Reads {
    stdout: Pin<Box<dyn AsyncRead + Send + Sync>>,
    stderr: Pin<Box<dyn AsyncRead + Send + Sync>>,
    control: ControlHost,
}

/// Runs `job` until it ends or its deadline passes (then everything in the sandbox is killed);
/// with the streams it read (its stdin is closed once fed).
pub(crate) async fn execute(
    state: &impl Running,
    streams: Streams,
    job: Job,
) -> (Result<JobOutput, SandboxError>, Reads) {
    let Streams {
        stdin,
        stdout,
        stderr,
        control,
    } = streams;
    let mut reads = Reads {
        stdout,
        stderr,
        control,
    };
    let ran = run(state, stdin, &mut reads, job).await;
    (ran, reads)
}

/// [`execute`]'s job, on the streams it reads borrowed.
async fn run(
    state: &impl Running,
    mut stdin: Pin<Box<dyn AsyncWrite + Send + Sync>>,
    reads: &mut Reads,
    mut job: Job,
) -> Result<JobOutput, SandboxError> {
    let Reads {
        stdout,
        stderr,
        control: ctl,
    } = reads;
    let exec = exec_of(&mut job);
    let payload = std::mem::take(&mut job.stdin).into_bytes();
    let work = async {
        ctl.send(&exec).await?;
        let feed = async move {
            // A tool may exit without reading its input: its status tells.
            let _ = stdin.write_all(&payload).await;
            drop(stdin);
        };
        let out = async {
            let read = read_bounded(stdout, job.stdout_limit, false).await;
            if !matches!(read, Ok(Bounded { dropped: 0, .. })) {
                // Too much output, or unreadable: stop the tool now.
                state.kill();
            }
            read
        };
        let err = read_stderr(stderr, job.stderr_limit, job.scrubber.as_deref());
        // The init reports the tool's status and exits, which ends every process of the
        // sandbox and so closes the pipes.
        let status = ctl.recv();
        let ((), out, err, status) = tokio::join!(feed, out, err, status);
        Ok::<_, SandboxError>((out, err, status))
    };
    let (out, err, status) = match tokio::time::timeout_at(job.deadline, work).await {
        Ok(r) => r?,
        Err(_) => {
            state.kill();
            return Err(SandboxError::TimedOut);
        }
    };
    let stdout = out.map_err(|e| SandboxError::io("reading the tool's stdout", e))?;
    let stderr = err;
    // A process killed for the memory bound may have been the init itself (then no status
    // came).
    let memory_exhausted = state.memory_exhausted();
    let status = match status {
        _ if stdout.dropped > 0 => JobStatus::Signaled(libc::SIGKILL),
        _ if memory_exhausted => JobStatus::Signaled(libc::SIGKILL),
        Ok(FromInit::Exited { code }) => JobStatus::Exited(code),
        Ok(FromInit::Signaled { signal }) => JobStatus::Signaled(signal),
        Ok(FromInit::Failed { message }) => return Err(SandboxError::Init(message)),
        Ok(other) => {
            return Err(SandboxError::Protocol(format!(
                "expected the tool's status, got {other:?}"
            )))
        }
        Err(e) => return Err(e),
    };
    // Every connection of the sandbox is closed by now: its refusals are complete.
    let proxy = state.proxy();
    Ok(JobOutput {
        status,
        stdout_overflow: stdout.dropped > 0,
        stdout: stdout.kept,
        stderr,
        egress_refusals: proxy.map(ProxyHandle::refusals).unwrap_or_default(),
        egress_requests: proxy.map(ProxyHandle::requests).unwrap_or_default(),
        memory_exhausted,
    })
}

/// Starts `job` and hands its streams to the caller.
pub(crate) async fn attach(streams: Streams, mut job: Job) -> Result<Attached, SandboxError> {
    let Streams {
        stdin,
        stdout,
        stderr,
        control: mut ctl,
    } = streams;
    ctl.send(&exec_of(&mut job)).await?;
    let status = async move {
        match ctl.recv().await? {
            FromInit::Exited { code } => Ok(JobStatus::Exited(code)),
            FromInit::Signaled { signal } => Ok(JobStatus::Signaled(signal)),
            FromInit::Failed { message } => Err(SandboxError::Init(message)),
            other => Err(SandboxError::Protocol(format!(
                "expected the tool's status, got {other:?}"
            ))),
        }
    };
    Ok(Attached {
        stdin: stdin as std::pin::Pin<Box<dyn AsyncWrite + Send>>,
        stdout: stdout as std::pin::Pin<Box<dyn AsyncRead + Send>>,
        stderr: stderr as std::pin::Pin<Box<dyn AsyncRead + Send>>,
        status: Box::pin(status),
    })
}
