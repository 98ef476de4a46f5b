//! [`SandboxExecutor::self_test`]: whether sandboxes can be provisioned and run on this machine,
//! asked once, outside any call.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use escepine_contract::EgressGrant;
use escepine_sandbox::{Job, JobStatus, SandboxError, SAFE_PATH, TOOL_LANG};

use super::executor::SandboxExecutor;

/// The program a self-test runs: it exits 0 and needs nothing but its libraries.
const PROBE: &str = "true";

/// How long a self-test may take, provisioning included.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// What a successful [`SandboxExecutor::self_test`] found.
#[derive(Debug, Clone)]
pub struct SelfTest {
    /// The backend that ran it (`linux`).
    pub backend: &'static str,
    /// The program that ran in the sandbox.
    pub program: PathBuf,
    /// Provisioning, the run and the teardown together.
    pub took: Duration,
}

impl SandboxExecutor {
    /// Provision one fresh sandbox of this executor's backend, run `true` (found on the tools'
    /// `PATH`) in it with no network, no secrets and nothing written, under the executor's
    /// limits, check that it exited 0, and destroy the sandbox. Not a governed call: nothing is recorded, and nothing it returns
    /// is used; it tells whether sandboxes work on this machine (namespaces, the init, the root
    /// of copies, the limits), before a program commits to them.
    ///
    /// # Errors
    /// What failed: no `true` on the tools' `PATH`, provisioning, the run, or an exit other
    /// than 0.
    pub async fn self_test(&self) -> Result<SelfTest, SandboxError> {
        let started = Instant::now();
        let program = SAFE_PATH
            .split(':')
            .map(|dir| Path::new(dir).join(PROBE))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                SandboxError::Init(format!("no `{PROBE}` on {SAFE_PATH} to run as a self-test"))
            })?;
        let spec = self
            .spec_of(&program, None, Vec::new(), &EgressGrant::default())
            .await?;
        let backend = self.backend();
        let mut sandbox = backend.provision(spec).await?;
        let job = Job {
            argv: vec![program.display().to_string()],
            env: vec![
                ("PATH".into(), SAFE_PATH.into()),
                ("LANG".into(), TOOL_LANG.into()),
            ],
            cwd: None,
            stdin: String::new(),
            files: Default::default(),
            deadline: tokio::time::Instant::now() + PROBE_TIMEOUT,
            stdout_limit: 4096,
            stderr_limit: 4096,
            scrubber: None,
        };
        let ran = backend.execute(&mut sandbox, job).await;
        let teardown = backend.destroy(sandbox).await;
        for problem in &teardown.problems {
            tracing::warn!(%problem, "sandbox self-test teardown");
        }
        let out = ran?;
        if out.status != JobStatus::Exited(0) {
            let stderr = out.stderr.trim_end();
            return Err(SandboxError::Init(format!(
                "the self-test's `{}` ended with {:?}{}{stderr}",
                program.display(),
                out.status,
                if stderr.is_empty() {
                    ""
                } else {
                    "; its stderr: "
                },
            )));
        }
        Ok(SelfTest {
            backend: backend.name(),
            program,
            took: started.elapsed(),
        })
    }
}
