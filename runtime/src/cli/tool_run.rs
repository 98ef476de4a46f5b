//! `--executor` and `--secrets`: how the commands that run tools (`call`, `run`, `resume`,
//! `serve`) run them.

use std::path::PathBuf;
use std::sync::Arc;

use crate::executor::{Executor, ProcessExecutor};
use crate::sandbox::SandboxExecutor;
use crate::secrets::{ChainSecrets, EnvSecrets, MapSecrets, SecretSource};

/// Where tools run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExecutorKind {
    /// One fresh Linux sandbox per attempt (the default).
    Sandbox,
    /// A plain child process: no isolation, no egress fence. Only on request.
    Process,
}

/// The flags shared by the commands that run tools.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ToolRunArgs {
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
    /// Secret values as `NAME=value` lines (blank lines and `#` comments ignored), for the names
    /// tools declare in `auth.secrets`. A variable of that name in the environment wins.
    #[arg(long, value_name = "FILE")]
    secrets: Option<PathBuf>,
}

impl ToolRunArgs {
    /// The chosen executor.
    ///
    /// # Errors
    /// When the sandbox is chosen and its init binary cannot be found.
    pub(crate) fn executor(&self) -> Result<Arc<dyn Executor>, String> {
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

    /// Where secret values come from: the environment, then the `--secrets` file.
    ///
    /// # Errors
    /// When the file cannot be read or a line is not `NAME=value` (naming the file and line).
    pub(crate) fn secrets(&self) -> Result<Arc<dyn SecretSource>, String> {
        Ok(match &self.secrets {
            None => Arc::new(EnvSecrets),
            Some(path) => Arc::new(ChainSecrets(vec![
                Box::new(EnvSecrets),
                Box::new(MapSecrets::from_file(path)?),
            ])),
        })
    }
}
