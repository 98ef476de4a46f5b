//! [`CallError`]: the refusals of a governed call before any intent was recorded.

use crate::kind::CallKind;
use escepine_policy::gate::violation_list;
use escepine_policy::gate::Violation;

/// A call refused before its intent was recorded (nothing ran, nothing is in the ledger), or
/// stopped because the ledger could not be written. Every other end of a call is a
/// [`CallReport`](crate::CallReport) whose [`CallOutcome`](crate::CallOutcome) is data.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The proposal names no registered tool; nothing ran.
    #[error("unknown tool `{0}`: not in the registry")]
    UnknownTool(String),
    /// The payload deviates from the input schema; nothing ran.
    #[error("input rejected: {}", violation_list(.0))]
    InputRejected(Vec<Violation>),
    /// The workspace files given do not match the tool's `sandbox_profile.workspace_inputs`
    /// (a file it does not declare, a required one missing, one larger than its bound);
    /// nothing ran.
    #[error("workspace files rejected: {}", .0.join("; "))]
    FilesRejected(Vec<String>),
    /// The ledger could not be written: the call stops (before execution if it was the intent;
    /// before returning if it was the outcome).
    #[error("{0}")]
    LedgerUnavailable(#[from] escepine_ledger::error::LedgerError),
    /// The typed client was compiled from another contract than the registry holds (another
    /// version, other input or output schemas, or a payload its types cannot serialise);
    /// nothing ran.
    #[error("the typed client does not match the registry: {0}")]
    ClientMismatch(String),
}

impl CallError {
    /// The refusal's kind.
    pub const fn kind(&self) -> CallKind {
        match self {
            Self::UnknownTool(_) => CallKind::UnknownTool,
            Self::InputRejected(_) | Self::FilesRejected(_) => CallKind::InputRejected,
            Self::LedgerUnavailable(_) => CallKind::LedgerUnavailable,
            Self::ClientMismatch(_) => CallKind::ClientMismatch,
        }
    }
}
