//! The typed errors of a governed call: [`CallError`], the refusals before any intent was
//! recorded, and [`NoOutput`], why a caller that wants only the output did not get one.

use crate::gate::Violation;
use crate::report::{violation_list, CallKind, CallOutcome, CallReport};

/// A call refused before its intent was recorded (nothing ran, nothing is in the ledger), or
/// stopped because the ledger could not be written. Every other end of a call is a
/// [`CallReport`] whose [`CallOutcome`] is data.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The proposal names no registered tool; nothing ran.
    #[error("unknown tool `{0}`: not in the registry")]
    UnknownTool(String),
    /// The payload deviates from the input schema; nothing ran.
    #[error("input rejected: {}", violation_list(.0))]
    InputRejected(Vec<Violation>),
    /// The ledger could not be written: the call stops (before execution if it was the intent;
    /// before returning if it was the outcome).
    #[error("{0}")]
    LedgerUnavailable(#[from] crate::ledger::LedgerError),
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
            Self::InputRejected(_) => CallKind::InputRejected,
            Self::LedgerUnavailable(_) => CallKind::LedgerUnavailable,
            Self::ClientMismatch(_) => CallKind::ClientMismatch,
        }
    }
}

/// Why a call gave no output: refused before its intent, ended with another outcome than
/// [`CallOutcome::Ok`], or (typed client) an output its type could not read. What
/// [`CallReport::into_output`] and the typed client return.
#[derive(Debug, thiserror::Error)]
pub enum NoOutput {
    /// Refused before the intent.
    #[error(transparent)]
    Refused(#[from] CallError),
    /// The call ended with an outcome other than `Ok` (the report holds it).
    #[error("{0}")]
    Ended(Box<CallReport>),
    /// The typed client could not read the gated output as its output type (the call is
    /// recorded as `ok`).
    #[error("the typed client cannot read the output of call {call_id}: {message}")]
    OutputType {
        /// The call.
        call_id: String,
        /// The deserialiser's message.
        message: String,
    },
}

impl NoOutput {
    /// The kind: the refusal's, the outcome's, or [`CallKind::ClientMismatch`] for an output
    /// the typed client cannot read.
    pub fn kind(&self) -> CallKind {
        match self {
            Self::Refused(e) => e.kind(),
            Self::Ended(r) => r.kind(),
            Self::OutputType { .. } => CallKind::ClientMismatch,
        }
    }

    /// The report, for a call that got past its intent with another outcome than `Ok`.
    pub fn report(&self) -> Option<&CallReport> {
        match self {
            Self::Ended(r) => Some(r),
            _ => None,
        }
    }

    /// The outcome, for a call that got past its intent with another outcome than `Ok`.
    pub fn outcome(&self) -> Option<&CallOutcome> {
        self.report().map(CallReport::outcome)
    }

    /// The refusal, for a call refused before its intent.
    pub fn refusal(&self) -> Option<&CallError> {
        match self {
            Self::Refused(e) => Some(e),
            _ => None,
        }
    }

    /// The call id, when an intent was recorded.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Self::Refused(_) => None,
            Self::Ended(r) => Some(r.call_id()),
            Self::OutputType { call_id, .. } => Some(call_id),
        }
    }
}
