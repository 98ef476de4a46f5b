//! Why a proof could not be carried out (as opposed to a property that does not hold).

use std::path::PathBuf;

use escepine_registry::diagnostic::Diagnostics;

use crate::report::{RequestEnvironment, Step};

/// A proof that could not be carried out. None of these is a pass: a missing or failing
/// solver, or one that answers `unknown`, leaves the property unproved.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// The invariants or the old policies are invalid (each diagnostic names its file).
    #[error("{what} are invalid:\n{}", diagnostics.render())]
    Invalid {
        /// What was read (`the invariants in tools/invariants`).
        what: String,
        /// Every problem of every file.
        diagnostics: Diagnostics,
    },
    /// A directory of invariants could not be read.
    #[error("cannot read the invariants directory {}: {source}", dir.display())]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No solver executable at `$CVC5` or as `cvc5` on `PATH`.
    #[error(
        "the cvc5 solver `{program}` cannot be started ({source}); install it with `bash .ci/cvc5` \
         (or point $CVC5 at a cvc5 executable)"
    )]
    SolverMissing {
        /// The program that was run (`$CVC5`, else `cvc5`).
        program: String,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// The solver failed (exited, printed an error, or answered what cvc5 does not).
    #[error("the cvc5 solver `{program}` failed proving {step}: {source}")]
    SolverFailed {
        /// The program that was run.
        program: String,
        /// The property and request environment being proved.
        step: Box<Step>,
        /// What went wrong.
        #[source]
        source: Box<cedar_policy_symcc::err::Error>,
    },
    /// The solver answered `unknown` (a time or resource limit, say): the property is unproved.
    #[error("the cvc5 solver `{program}` answered `unknown` for {step}: not proved")]
    SolverUnknown {
        /// The program that was run.
        program: String,
        /// The property and request environment being proved.
        step: Box<Step>,
    },
    /// The symbolic compiler could not encode a policy set, or not decode the solver's model.
    #[error("cannot prove {step}: {source}")]
    Symbolic {
        /// The property and request environment being proved.
        step: Box<Step>,
        /// What the symbolic compiler said.
        #[source]
        source: Box<cedar_policy_symcc::err::Error>,
    },
    /// The schema's request environments cannot be compiled (its actions are incomplete).
    #[error("cannot compile the request environment {env}: {source}")]
    Environment {
        /// The request environment.
        env: Box<RequestEnvironment>,
        /// What the symbolic compiler said.
        #[source]
        source: Box<cedar_policy_symcc::err::Error>,
    },
    /// The asynchronous runtime the solver is driven from could not be started.
    #[error("cannot start the runtime that drives the solver: {0}")]
    Runtime(#[source] std::io::Error),
}

impl ProveError {
    /// Whether the solver is to blame (missing, failed, or `unknown`): the command line's exit
    /// status 2.
    pub fn is_solver(&self) -> bool {
        matches!(
            self,
            Self::SolverMissing { .. } | Self::SolverFailed { .. } | Self::SolverUnknown { .. }
        )
    }
}
