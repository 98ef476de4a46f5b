//! [`CallState`]: where a call stands, read from the ledger's entries alone.

use escepine_ledger::entry::{now_ms, Entry};
use escepine_ledger::record::{Approval, Intent, Outcome, Record};

/// Where a call stands, by its entries in the ledger.
#[derive(Debug, Clone, PartialEq)]
pub enum CallState {
    /// No intent has this call id.
    Unknown,
    /// Its intent is recorded and it never waited for approval; no outcome yet (it is running,
    /// or its runtime stopped before recording one).
    InFlight,
    /// It waits for an approver.
    Waiting(Waiting),
    /// It waited past its expiry; nobody recorded the expiry yet.
    Expired(Waiting),
    /// An approver decided (or the expiry was recorded) and its outcome is not recorded yet:
    /// an approved call is running.
    Decided(Approval),
    /// Its outcome is recorded.
    Ended(Box<Outcome>),
}

/// A call that waits (or waited) for approval, as its intent records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool_id: String,
    /// Who asked (`Agent::"id"`); never its approver.
    pub principal: String,
    /// The SOP run it is a step of.
    pub run_id: Option<String>,
    /// The SOP state.
    pub step: Option<String>,
    /// Until when it waits, Unix milliseconds.
    pub expires_at_ms: u64,
    /// The permits that allowed it with approval.
    pub policy_ids: Vec<String>,
    /// Their `@approval` reasons.
    pub reasons: Vec<String>,
    /// The recorded intent.
    pub intent: Box<Intent>,
    /// Its entry.
    pub intent_entry: escepine_ledger::entry::Committed,
}

/// The state of `call_id` in `entries` (chain order) at `now_ms`.
pub fn state_of(entries: &[Entry], call_id: &str, now: u64) -> CallState {
    let (mut intent, mut approval, mut outcome) = (None, None, None);
    for e in entries {
        match &e.record {
            Record::Intent(i) if i.call_id == call_id => intent = Some((i, e)),
            Record::Approval(a) if a.call_id == call_id => approval = Some(a),
            Record::Outcome(o) if o.call_id == call_id => outcome = Some(o),
            _ => {}
        }
    }
    let Some((intent, entry)) = intent else {
        return CallState::Unknown;
    };
    if let Some(o) = outcome {
        return CallState::Ended(Box::new(o.clone()));
    }
    if let Some(a) = approval {
        return CallState::Decided(a.clone());
    }
    let Some(request) = &intent.approval else {
        return CallState::InFlight;
    };
    let waiting = Waiting {
        call_id: intent.call_id.clone(),
        tool_id: intent.tool_id.clone(),
        principal: intent.principal.clone(),
        run_id: intent.run_id.clone(),
        step: intent.step.clone(),
        expires_at_ms: request.expires_at_ms,
        policy_ids: intent.policy_ids.clone(),
        reasons: request.reasons.clone(),
        intent: Box::new(intent.clone()),
        intent_entry: entry.committed(),
    };
    if now >= request.expires_at_ms {
        CallState::Expired(waiting)
    } else {
        CallState::Waiting(waiting)
    }
}

/// The state of `call_id` now.
pub(crate) fn now_state(entries: &[Entry], call_id: &str) -> CallState {
    state_of(entries, call_id, now_ms())
}
