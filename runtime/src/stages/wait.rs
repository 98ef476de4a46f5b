//! Stage 4, for a call allowed only with approval: it waits. Its intent records the decision
//! `awaiting-approval` and until when it waits; nothing runs and no outcome is recorded until
//! an approver approves or rejects it (`crate::approval`), or it expires.

use std::time::Duration;

use super::context::CallContext;
use crate::report::{CallOutcome, CallReport};
use escepine_ledger::entry::{now_ms, Committed};
use escepine_ledger::record::ApprovalRequest;
use escepine_policy::authorize::Decision;

/// What the intent records of the wait, when the decision needs approval: the expiry (now
/// plus `ttl`) and the `@approval` reasons.
pub(crate) fn request(decision: &Decision, ttl: Duration) -> Option<ApprovalRequest> {
    (decision.allowed() && decision.needs_approval()).then(|| ApprovalRequest {
        expires_at_ms: now_ms().saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
        reasons: decision.approval_reasons(),
    })
}

/// The report of the waiting call: its intent, no outcome, nothing run.
pub(crate) fn waiting(
    cx: &CallContext<'_>,
    intent: Committed,
    decision: &Decision,
    request: ApprovalRequest,
) -> CallReport {
    crate::telemetry::in_stage(crate::telemetry::Stage::ApprovalWait, |span| {
        span.record("escepine.approval.expires_at_ms", request.expires_at_ms);
    });
    crate::telemetry::metrics::metrics().approvals_waiting(1);
    CallReport {
        call_id: cx.ids.call_id.clone(),
        idempotency_key: cx.ids.idempotency_key.clone(),
        outcome: CallOutcome::AwaitingApproval {
            expires_at_ms: request.expires_at_ms,
            policy_ids: decision.policy_ids().to_vec(),
            reasons: request.reasons,
        },
        intent,
        outcome_entry: None,
        attempts: 0,
    }
}
