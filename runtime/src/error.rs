//! The typed errors a governed call can end with.

use crate::gate::Violation;

/// How a governed call failed. Callers match on the variant; every variant that got past
/// authorization is also recorded in the ledger.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The proposal names no registered tool; nothing ran.
    #[error("unknown tool `{0}`: not in the registry")]
    UnknownTool(String),
    /// The payload deviates from the input schema; nothing ran.
    #[error("input rejected: {}", list(.0))]
    InputRejected(Vec<Violation>),
    /// Cedar denied the call; nothing ran, nothing is retried.
    #[error("denied by policy [{}]{}", .policy_ids.join(", "), reasons_suffix(.reasons))]
    Denied {
        /// The call id recorded in the ledger.
        call_id: String,
        /// The determining policies (empty for a default deny).
        policy_ids: Vec<String>,
        /// Evaluation errors, the denied element, …
        reasons: Vec<String>,
    },
    /// The last attempt outlived the tool's timeout.
    #[error("timed out after {attempts} attempt(s) of {timeout_ms} ms each")]
    TimedOut {
        /// The call id.
        call_id: String,
        /// Attempts made.
        attempts: u32,
        /// The per-attempt bound.
        timeout_ms: u64,
    },
    /// Every attempt failed, or a permanent failure stopped the retries.
    #[error("failed after {attempts} attempt(s): {last_error}")]
    Failed {
        /// The call id.
        call_id: String,
        /// Attempts made.
        attempts: u32,
        /// The last error (scrubbed).
        last_error: String,
    },
    /// The output violates the output schema; it was recorded as a failure, not returned.
    #[error("output rejected: {}", list(.violations))]
    OutputRejected {
        /// The call id.
        call_id: String,
        /// The violations.
        violations: Vec<Violation>,
    },
    /// The ledger could not be written: the call stops (before execution if it was the intent).
    #[error("{0}")]
    LedgerUnavailable(#[from] crate::ledger::LedgerError),
    /// The typed client's payload or output did not (de)serialise.
    #[error("typed payload: {0}")]
    Serde(String),
    /// The typed client was compiled from another contract than the registry holds (another
    /// version, or other input or output schemas); nothing ran.
    #[error("the typed client does not match the registry: {0}")]
    ClientMismatch(String),
}

impl CallError {
    /// The exit status `escepine call` uses for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Denied { .. } => 3,
            Self::UnknownTool(_)
            | Self::InputRejected(_)
            | Self::Serde(_)
            | Self::ClientMismatch(_) => 4,
            Self::TimedOut { .. } | Self::Failed { .. } | Self::LedgerUnavailable(_) => 5,
            Self::OutputRejected { .. } => 6,
        }
    }
}

fn list(v: &[Violation]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn reasons_suffix(r: &[String]) -> String {
    if r.is_empty() {
        String::new()
    } else {
        format!(": {}", r.join("; "))
    }
}
