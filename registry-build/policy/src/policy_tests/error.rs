//! [`PolicyTestError`]: why policy tests did not pass.

use super::report::Report;
use crate::authorize::AuthorizeError;
use escepine_registry::diagnostic::Diagnostics;

/// Why [`check`](super::check) (or [`load`](super::load)) did not pass.
#[derive(Debug, thiserror::Error)]
pub enum PolicyTestError {
    /// Test files that cannot be run: every problem of every file, each at its JSON pointer.
    #[error("{}", .0.render())]
    Files(Diagnostics),
    /// The registry's authorizer cannot be built (the runtime would not start either).
    #[error("the registry cannot be authorized: {0}")]
    Authorizer(#[source] AuthorizeError),
    /// A tool's input schema does not compile into a gate (the runtime would not start either).
    #[error("tool `{tool}`: its input schema does not compile: {message}")]
    Gate {
        /// The tool id.
        tool: String,
        /// What the validator said.
        message: String,
    },
    /// Cases failed: every failure, each naming its file and case.
    #[error("{0}")]
    Failed(Report),
}
