//! The cvc5 process the proofs run: `$CVC5`, else `cvc5` on `PATH`.

use std::time::Duration;

use cedar_policy_symcc::solver::LocalSolver;
use tokio::process::Command;

use crate::error::ProveError;

/// The environment variable naming the cvc5 executable.
pub const CVC5_VAR: &str = "CVC5";

/// How to start the solver: the program and its per-query time limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Solver {
    program: String,
    per_query: Duration,
}

impl Solver {
    /// `$CVC5` when set, else `cvc5` (looked up on `PATH`), with a 60 s limit per query.
    pub fn from_env() -> Self {
        Self::program(std::env::var(CVC5_VAR).unwrap_or_else(|_| "cvc5".to_string()))
    }

    /// The solver at `program` (a path, or a name looked up on `PATH`), 60 s per query.
    pub fn program(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            per_query: Duration::from_secs(60),
        }
    }

    /// The same solver with another time limit per query (`--tlimit-per`); a query that hits
    /// it answers `unknown`, which is [`ProveError::SolverUnknown`].
    pub fn per_query(mut self, limit: Duration) -> Self {
        self.per_query = limit;
        self
    }

    /// The program run.
    pub fn program_name(&self) -> &str {
        &self.program
    }

    /// Start the process: `<program> --lang smt --tlimit-per=<ms>`, SMT-LIB on its stdin.
    ///
    /// # Errors
    /// [`ProveError::SolverMissing`] when it cannot be started.
    pub(crate) fn spawn(&self) -> Result<LocalSolver, ProveError> {
        let limit = format!("--tlimit-per={}", self.per_query.as_millis().max(1));
        let mut command = Command::new(&self.program);
        command
            .args(["--lang", "smt", limit.as_str()])
            .kill_on_drop(true);
        LocalSolver::from_command(&mut command).map_err(|e| match e {
            cedar_policy_symcc::solver::SolverError::Io(source) => ProveError::SolverMissing {
                program: self.program.clone(),
                source,
            },
            other => ProveError::SolverMissing {
                program: self.program.clone(),
                source: std::io::Error::other(other.to_string()),
            },
        })
    }
}
