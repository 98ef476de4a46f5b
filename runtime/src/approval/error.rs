//! [`ApprovalError`]: why a decision on a waiting call was refused (and changed nothing), or
//! could not be recorded.

use crate::error::CallError;
use crate::kind::CallKind;
use escepine_ledger::error::LedgerError;
use escepine_ledger::trust::UntrustedEntry;

/// Why an approval or rejection did not happen. Every variant but [`ApprovalError::Ledger`]
/// and [`ApprovalError::Call`] is a refusal that changed nothing: the call still waits (or was
/// already decided, or has expired).
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// No intent in the ledger has this call id.
    #[error("no call `{0}` is recorded in the ledger")]
    UnknownCall(String),
    /// The call never waited for approval.
    #[error("call `{0}` does not wait for approval: its decision was not awaiting-approval")]
    NotWaiting(String),
    /// The call was already approved, rejected or found expired.
    #[error("call `{call_id}` was already decided: {result}")]
    AlreadyDecided {
        /// The call.
        call_id: String,
        /// What was recorded (`approved`, `rejected`, `expired`, or the outcome's result).
        result: String,
    },
    /// The call waited past its expiry (now recorded `expired`).
    #[error("call `{call_id}` waited past its expiry ({expired_at}): nothing ran")]
    Expired {
        /// The call.
        call_id: String,
        /// When its wait ended (UTC ISO 8601).
        expired_at: String,
    },
    /// The call was given workspace files, whose bytes the ledger does not keep (only their
    /// sizes and digests), so it cannot run once approved; rejecting it still works.
    #[error("call `{call_id}` was given workspace files ({}), which the ledger keeps as digests, not bytes: it cannot run once approved; reject it and ask for the call again without needing approval, or with a policy that permits it outright", names.join(", "))]
    FilesNotKept {
        /// The call.
        call_id: String,
        /// The names of its files.
        names: Vec<String>,
    },
    /// The approver is the principal who asked for the call.
    #[error("{principal} asked for call `{call_id}` and cannot decide on it: an approver is never the requester")]
    SelfApproval {
        /// The call.
        call_id: String,
        /// The requester.
        principal: String,
    },
    /// A withdrawal by a principal other than the one who asked for the call.
    #[error("only the principal who asked for call `{call_id}` can withdraw it, not {principal}")]
    NotRequester {
        /// The call.
        call_id: String,
        /// Who tried.
        principal: String,
    },
    /// Cedar does not permit the approver `Action::"approve"` on the call's tool.
    #[error("{approver} may not approve calls of `{tool}`: {}", reasons.join("; "))]
    NotPermitted {
        /// The would-be approver.
        approver: String,
        /// The call's tool.
        tool: String,
        /// Cedar's reasons.
        reasons: Vec<String>,
    },
    /// The waiting call's entry read back from the ledger is not what was committed (its
    /// content, its place in the chain, its payload hash, or a trusted checkpoint): nothing ran
    /// and nothing was recorded.
    #[error("refusing to decide on call `{call_id}`: {source}")]
    Untrusted {
        /// The call.
        call_id: String,
        /// What the check found.
        #[source]
        source: Box<UntrustedEntry>,
    },
    /// The ledger could not be read or written.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The approved call was refused (its payload no longer passes the gate, its tool is no
    /// longer registered) or its outcome could not be committed.
    #[error(transparent)]
    Call(#[from] CallError),
}

impl ApprovalError {
    /// Whether the decision was refused and nothing changed (everything but a ledger failure
    /// or the approved call's own refusal).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, Self::Ledger(_) | Self::Call(_))
    }

    /// The kind of the approved call's refusal, or of a ledger failure, when it is one of
    /// those.
    pub fn call_kind(&self) -> Option<CallKind> {
        match self {
            Self::Ledger(_) => Some(CallKind::LedgerUnavailable),
            Self::Call(e) => Some(e.kind()),
            _ => None,
        }
    }
}
