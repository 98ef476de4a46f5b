//! `--executor`: where the commands that run tools (`call`, `run`, `resume`, `serve`) run them.

use std::sync::Arc;

use crate::executor::{Executor, ProcessExecutor};
use crate::sandbox::SandboxExecutor;

/// Where tools run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExecutorKind {
    /// One fresh Linux sandbox per attempt (the default).
    Sandbox,
    /// A plain child process: no isolation, no egress fence. Only on request.
    Process,
}

/// The `--executor` flag.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ExecutorArgs {
    /// Where tools run: `sandbox` (one fresh Linux sandbox per attempt: namespaces, tmpfs root,
    /// seccomp, landlock, egress only through the proxy) or `process` (an unsandboxed child
    /// process, for machines without user namespaces).
    #[arg(
        long,
        value_enum,
        value_name = "sandbox|process",
        default_value = "sandbox"
    )]
    executor: ExecutorKind,
}

impl ExecutorArgs {
    /// The chosen executor.
    ///
    /// # Errors
    /// When the sandbox is chosen and its init binary cannot be found.
    pub(crate) fn build(&self) -> Result<Arc<dyn Executor>, String> {
        match self.executor {
            ExecutorKind::Process => Ok(Arc::new(ProcessExecutor::new())),
            ExecutorKind::Sandbox => match SandboxExecutor::new() {
                Ok(s) => Ok(Arc::new(s)),
                Err(e) => Err(format!(
                    "the sandbox is unavailable: {e} (`--executor process` runs tools \
                     unsandboxed)"
                )),
            },
        }
    }
}
