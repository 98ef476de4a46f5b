//! Process exit statuses of the `escepine` commands.

/// Success.
pub const OK: i32 = 0;
/// The inputs are invalid (or a registration failed).
pub const INVALID: i32 = 1;
/// Bad usage.
pub const USAGE: i32 = 2;
/// `escepine import`: the server could not be started or read.
pub const SERVER_FAILED: i32 = 3;
/// `escepine run` and `resume`: the run could not be driven (ledger unavailable, unknown run,
/// inconsistent journal, an SOP that changed since the run started, its lease lost while
/// driving it).
pub const NOT_DRIVEN: i32 = 14;
/// `escepine call` (and `run`, `resume` while a step waits): the call waits for an approver.
pub const AWAITING_APPROVAL: i32 = 8;
/// `escepine approve` and `reject`: the decision was refused (no such waiting call, already
/// decided, expired, the requester, or a principal Cedar does not permit); nothing changed.
pub const APPROVAL_REFUSED: i32 = 3;

use escepine_runtime::CallKind;

/// The exit status of `escepine call` for a call that ended with `kind` — the one place it
/// is decided: 0 ok, 3 denied, 4 input rejected or unknown tool (or a typed client that
/// does not match), 5 failed, timed out or ledger unavailable, 6 output rejected, 7 budget
/// exceeded, 8 awaiting approval; a call rejected by its approver, or expired, exits 3 (it was
/// refused).
pub const fn call(kind: CallKind) -> i32 {
    match kind {
        CallKind::Ok => OK,
        CallKind::Denied | CallKind::Rejected | CallKind::Expired => 3,
        CallKind::UnknownTool | CallKind::InputRejected | CallKind::ClientMismatch => 4,
        CallKind::Failed | CallKind::TimedOut | CallKind::LedgerUnavailable => 5,
        CallKind::OutputRejected => 6,
        CallKind::BudgetExceeded => 7,
        CallKind::AwaitingApproval => AWAITING_APPROVAL,
    }
}

/// Exit status of the `ledger` commands for an unreadable ledger (missing, not a ledger) or an
/// unreadable key or checkpoint file.
pub(crate) const LEDGER_UNREADABLE: i32 = USAGE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_run_exits_as_a_waiting_call() {
        use escepine_runtime::sop::RunStatus;
        assert_eq!(RunStatus::AwaitingApproval.exit_code(), AWAITING_APPROVAL);
        assert_eq!(call(CallKind::AwaitingApproval), AWAITING_APPROVAL);
    }

    #[test]
    fn every_kind_has_the_contracts_exit_status() {
        let codes: Vec<(&str, i32)> = CallKind::ALL
            .iter()
            .map(|k| (k.as_str(), call(*k)))
            .collect();
        assert_eq!(
            codes,
            [
                ("ok", 0),
                ("denied", 3),
                ("failed", 5),
                ("timed_out", 5),
                ("output_rejected", 6),
                ("budget_exceeded", 7),
                ("awaiting_approval", 8),
                ("rejected", 3),
                ("expired", 3),
                ("unknown_tool", 4),
                ("input_rejected", 4),
                ("ledger_unavailable", 5),
                ("client_mismatch", 4),
            ]
        );
    }
}
