//! [`CallKind`]: how a governed call ended, in one word, the one classification that tracing,
//! MCP, the SOP engine and the command line all read.

use std::fmt;

use escepine_ledger::record::CallResult;

/// How a governed call ended, in one word: the single classification every edge reads
/// (the `error.type` of the call's span, the `kind` of an MCP error result, the SOP engine's
/// failure kinds, the exit status of `escepine call`).
///
/// The first nine are outcomes (the call got past its intent; its outcome is recorded, except
/// for a call awaiting approval, whose outcome comes when it is decided);
/// the last four are refusals ([`crate::CallError`]) before any intent was recorded, except
/// [`CallKind::LedgerUnavailable`], which also ends a call whose outcome could not be committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// The output passed the output gate and was returned.
    Ok,
    /// Cedar denied the call; nothing ran.
    Denied,
    /// Every attempt failed, or a permanent failure stopped the retries.
    Failed,
    /// The last attempt outlived its timeout.
    TimedOut,
    /// The output violated the output schema; it was recorded, not returned.
    OutputRejected,
    /// A budget of the principal and tool had no room; recorded, nothing ran.
    BudgetExceeded,
    /// Allowed only with an approver's approval: the intent is recorded, nothing ran yet.
    AwaitingApproval,
    /// An approver rejected the waiting call; recorded, nothing ran.
    Rejected,
    /// The call waited past its expiry; recorded, nothing ran.
    Expired,
    /// The proposal names no registered tool; nothing ran or was recorded.
    UnknownTool,
    /// The payload deviates from the input schema; nothing ran or was recorded.
    InputRejected,
    /// The ledger could not be written.
    LedgerUnavailable,
    /// A typed client compiled from another contract than the registry holds.
    ClientMismatch,
}

impl CallKind {
    /// Every kind, in the order above.
    pub const ALL: [Self; 13] = [
        Self::Ok,
        Self::Denied,
        Self::Failed,
        Self::TimedOut,
        Self::OutputRejected,
        Self::BudgetExceeded,
        Self::AwaitingApproval,
        Self::Rejected,
        Self::Expired,
        Self::UnknownTool,
        Self::InputRejected,
        Self::LedgerUnavailable,
        Self::ClientMismatch,
    ];

    /// The stable snake-case name: `ok`, `denied`, `failed`, `timed_out`, `output_rejected`,
    /// `budget_exceeded`, `awaiting_approval`, `rejected`, `expired`,
    /// `unknown_tool`, `input_rejected`, `ledger_unavailable`, `client_mismatch`.
    pub const fn as_str(self) -> &'static str {
        match self {
            // An outcome's kind is spelled as the ledger records its result.
            Self::Ok => CallResult::Ok.as_str(),
            Self::Denied => CallResult::Denied.as_str(),
            Self::Failed => CallResult::Failed.as_str(),
            Self::TimedOut => CallResult::TimedOut.as_str(),
            Self::OutputRejected => CallResult::OutputRejected.as_str(),
            Self::BudgetExceeded => CallResult::BudgetExceeded.as_str(),
            Self::Rejected => CallResult::Rejected.as_str(),
            Self::Expired => CallResult::Expired.as_str(),
            Self::AwaitingApproval => "awaiting_approval",
            Self::UnknownTool => "unknown_tool",
            Self::InputRejected => "input_rejected",
            Self::LedgerUnavailable => "ledger_unavailable",
            Self::ClientMismatch => "client_mismatch",
        }
    }

    /// The kind of a recorded outcome.
    pub const fn of_result(result: CallResult) -> Self {
        match result {
            CallResult::Ok => Self::Ok,
            CallResult::Denied => Self::Denied,
            CallResult::Failed => Self::Failed,
            CallResult::TimedOut => Self::TimedOut,
            CallResult::OutputRejected => Self::OutputRejected,
            CallResult::BudgetExceeded => Self::BudgetExceeded,
            CallResult::Rejected => Self::Rejected,
            CallResult::Expired => Self::Expired,
        }
    }
}

impl fmt::Display for CallKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_stable_and_distinct() {
        let names: Vec<&str> = CallKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "ok",
                "denied",
                "failed",
                "timed_out",
                "output_rejected",
                "budget_exceeded",
                "awaiting_approval",
                "rejected",
                "expired",
                "unknown_tool",
                "input_rejected",
                "ledger_unavailable",
                "client_mismatch"
            ]
        );
        for r in [
            CallResult::Ok,
            CallResult::Denied,
            CallResult::Failed,
            CallResult::TimedOut,
            CallResult::OutputRejected,
            CallResult::BudgetExceeded,
            CallResult::Rejected,
            CallResult::Expired,
        ] {
            // The ledger's own name of a result is the kind's name.
            let recorded = serde_json::to_value(r).unwrap();
            assert_eq!(recorded, CallKind::of_result(r).as_str());
        }
    }
}
