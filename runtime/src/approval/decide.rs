//! Deciding on a waiting call: the checks (in this order: the call waits, the approver is not
//! the requester, Cedar permits the approver, the wait has not expired, the store's claim),
//! then the `approval` entry, then the approved call or the rejection's outcome. A withdrawal
//! (the requester cancelling its own request) checks instead that the decider *is* the
//! requester, asks Cedar nothing, and ends the call as a rejection does.

use escepine_contract::{Attestation, Principal};

use super::error::ApprovalError;
use crate::report::{expired_message, CallOutcome, CallReport};
use crate::stages::{self, CallIds, CallOptions, Parts};
use escepine_ledger::calls::state::{CallState, Waiting};
use escepine_ledger::calls::CallView;
use escepine_ledger::entry::{iso8601, now_ms};
use escepine_ledger::record::{Approval, ApprovalResult, CallResult, Outcome, Record};
use escepine_ledger::store::Ledger;
use escepine_ledger::trust::{self, Trust};

/// What is decided on a waiting call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// An approver runs the call.
    Approve,
    /// An approver runs nothing.
    Reject,
    /// Its requester withdraws it (cancels its MCP task): nothing runs.
    Withdraw,
}

/// Who decides on a waiting call: a principal, and what an identity provider vouched for about
/// it (its parents, with which Cedar is asked; recorded in the `approval` entry).
#[derive(Debug, Clone, Copy)]
pub struct Decider<'a> {
    /// The approver (or, for a withdrawal, the requester).
    pub principal: &'a Principal,
    /// Its attestation, when a token named it.
    pub attestation: Option<&'a Attestation>,
}

impl<'a> Decider<'a> {
    /// A principal named without a token (the command line, a development bearer token).
    pub fn named(principal: &'a Principal) -> Self {
        Self {
            principal,
            attestation: None,
        }
    }

    fn parents(&self) -> &'a [Principal] {
        self.attestation.map_or(&[], |a| a.parents.as_slice())
    }
}

/// The approver recorded for an expiry the runtime found.
const RUNTIME: &str = "runtime";

/// Approve, reject or withdraw `call_id` as `decider`.
pub(crate) async fn decide(
    parts: &Parts<'_>,
    decider: Decider<'_>,
    call_id: &str,
    verdict: Verdict,
) -> Result<CallReport, ApprovalError> {
    let approver = decider.principal;
    let (waiting, expired) = waiting(parts.ledger, parts.trust, call_id)?;
    let is_requester = approver.to_string() == waiting.principal;
    let policy_ids = if verdict == Verdict::Withdraw {
        if !is_requester {
            return Err(ApprovalError::NotRequester {
                call_id: call_id.to_string(),
                principal: approver.to_string(),
            });
        }
        Vec::new()
    } else {
        if is_requester {
            return Err(ApprovalError::SelfApproval {
                call_id: call_id.to_string(),
                principal: waiting.principal,
            });
        }
        let decision =
            parts
                .authorizer
                .authorize_approval_as(approver, decider.parents(), &waiting.tool_id);
        if !decision.allowed() {
            return Err(ApprovalError::NotPermitted {
                approver: approver.to_string(),
                tool: waiting.tool_id,
                reasons: decision.reasons().to_vec(),
            });
        }
        decision.policy_ids().to_vec()
    };
    if expired {
        record_expiry(parts.ledger, &waiting).await?;
        return Err(ApprovalError::Expired {
            call_id: call_id.to_string(),
            expired_at: iso8601(waiting.expires_at_ms),
        });
    }
    let requester = requester(&waiting)?;
    let opts = options(&waiting);
    if verdict == Verdict::Approve {
        if !waiting.intent.files.is_empty() {
            return Err(ApprovalError::FilesNotKept {
                call_id: call_id.to_string(),
                names: waiting
                    .intent
                    .files
                    .iter()
                    .map(|f| f.name.clone())
                    .collect(),
            });
        }
        // A refusal of the call itself comes before anything is recorded.
        stages::approvable(
            parts,
            &requester,
            &waiting.tool_id,
            waiting.intent.payload.clone(),
            &opts,
        )?;
    }
    claim(parts.ledger, call_id).await?;
    let result = match verdict {
        Verdict::Approve => ApprovalResult::Approved,
        Verdict::Reject => ApprovalResult::Rejected,
        Verdict::Withdraw => ApprovalResult::Withdrawn,
    };
    parts
        .ledger
        .append(Record::Approval(Approval {
            call_id: call_id.to_string(),
            approver: approver.to_string(),
            attestation: decider.attestation.cloned(),
            result,
            policy_ids,
        }))
        .await?;
    crate::telemetry::metrics::metrics().approvals_waiting(-1);
    match verdict {
        Verdict::Approve => {
            let ids = CallIds {
                call_id: waiting.call_id.clone(),
                idempotency_key: waiting.intent.idempotency_key.clone(),
            };
            Ok(stages::approved(
                parts,
                &requester,
                &waiting.tool_id,
                waiting.intent.payload.clone(),
                &opts,
                ids,
                waiting.intent_entry.clone(),
            )
            .await?)
        }
        Verdict::Reject | Verdict::Withdraw => {
            let outcome = CallOutcome::Rejected {
                approver: approver.to_string(),
                withdrawn: verdict == Verdict::Withdraw,
            };
            let error = outcome_text(&outcome);
            end(parts.ledger, &waiting, CallResult::Rejected, error, outcome).await
        }
    }
}

/// The error an outcome that ran nothing records: what its report says.
fn outcome_text(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Rejected {
            approver,
            withdrawn: true,
        } => crate::report::withdrawn_message(approver),
        CallOutcome::Rejected { approver, .. } => crate::report::rejected_message(approver),
        CallOutcome::Expired { expired_at_ms } => expired_message(*expired_at_ms),
        // Only a rejection, a withdrawal or an expiry ends a waiting call without running it.
        other => other.kind().as_str().to_string(),
    }
}

/// Record the expiry of `call_id` if it waited past it: `None` when it is still waiting.
pub(crate) async fn expire(
    ledger: &dyn Ledger,
    trust: &Trust,
    call_id: &str,
) -> Result<Option<CallReport>, ApprovalError> {
    let (waiting, expired) = waiting(ledger, trust, call_id)?;
    if !expired {
        return Ok(None);
    }
    record_expiry(ledger, &waiting).await.map(Some)
}

/// The waiting call, and whether it is past its expiry; any other state is a refusal. The call
/// is read through the ledger's call view (its own entries, not the chain), and the intent it
/// acts on is checked first ([`trust`](escepine_ledger::trust)): a payload edited in the store
/// is never run.
fn waiting(
    ledger: &dyn Ledger,
    trust: &Trust,
    call_id: &str,
) -> Result<(Waiting, bool), ApprovalError> {
    let call = CallView::new(ledger).call(call_id)?;
    let checked = |w: Waiting| {
        let Some(intent) = call.as_ref().and_then(|c| c.intent.as_ref()) else {
            return Ok(w);
        };
        trust::check_in_ledger(ledger, &intent.entry(), trust)
            .map(|()| w)
            .map_err(|source| ApprovalError::Untrusted {
                call_id: call_id.to_string(),
                source: Box::new(source),
            })
    };
    let state = call
        .as_ref()
        .map_or(CallState::Unknown, |c| c.state(now_ms()));
    match state {
        CallState::Waiting(w) => Ok((checked(w)?, false)),
        CallState::Expired(w) => Ok((checked(w)?, true)),
        CallState::Unknown => Err(ApprovalError::UnknownCall(call_id.to_string())),
        CallState::InFlight => Err(ApprovalError::NotWaiting(call_id.to_string())),
        CallState::Decided(a) => Err(decided(call_id, a.result.as_str())),
        CallState::Ended(o) => Err(decided(call_id, o.result.as_str())),
    }
}

fn decided(call_id: &str, result: &str) -> ApprovalError {
    ApprovalError::AlreadyDecided {
        call_id: call_id.to_string(),
        result: result.to_string(),
    }
}

/// The store's claim on the decision: only the first decider goes on.
async fn claim(ledger: &dyn Ledger, call_id: &str) -> Result<(), ApprovalError> {
    if ledger.claim_approval(call_id).await? {
        Ok(())
    } else {
        Err(decided(
            call_id,
            "another decision was taken at the same time",
        ))
    }
}

/// The expiry: the claim, the `approval` entry (`expired`, by the runtime), the outcome.
async fn record_expiry(
    ledger: &dyn Ledger,
    waiting: &Waiting,
) -> Result<CallReport, ApprovalError> {
    claim(ledger, &waiting.call_id).await?;
    ledger
        .append(Record::Approval(Approval {
            call_id: waiting.call_id.clone(),
            approver: RUNTIME.to_string(),
            attestation: None,
            result: ApprovalResult::Expired,
            policy_ids: Vec::new(),
        }))
        .await?;
    let outcome = CallOutcome::Expired {
        expired_at_ms: waiting.expires_at_ms,
    };
    let error = outcome_text(&outcome);
    let ended = end(ledger, waiting, CallResult::Expired, error, outcome).await;
    if ended.is_ok() {
        crate::telemetry::metrics::metrics().approvals_waiting(-1);
    }
    ended
}

/// The outcome of a call that ran nothing (rejected or expired).
async fn end(
    ledger: &dyn Ledger,
    waiting: &Waiting,
    result: CallResult,
    error: String,
    outcome: CallOutcome,
) -> Result<CallReport, ApprovalError> {
    let entry = ledger
        .append(Record::Outcome(Outcome {
            call_id: waiting.call_id.clone(),
            result,
            attempts: Vec::new(),
            output_hash: None,
            output: None,
            error: Some(error),
            budget: None,
            // Nothing ran: nothing entered the flow.
            entered: None,
        }))
        .await?;
    Ok(CallReport {
        call_id: waiting.call_id.clone(),
        idempotency_key: waiting.intent.idempotency_key.clone(),
        outcome,
        intent: waiting.intent_entry.clone(),
        outcome_entry: Some(entry),
        attempts: 0,
    })
}

/// The requester, as the intent names it.
fn requester(waiting: &Waiting) -> Result<Principal, ApprovalError> {
    waiting.principal.parse().map_err(|e| {
        ApprovalError::Ledger(escepine_ledger::error::LedgerError::failed(
            format!(
                "the intent of call `{}` names no principal",
                waiting.call_id
            ),
            e,
        ))
    })
}

/// The call's options as its intent records them.
fn options(waiting: &Waiting) -> CallOptions {
    CallOptions {
        run_id: waiting.run_id.clone(),
        step: waiting.step.clone(),
        idempotency_key: Some(waiting.intent.idempotency_key.clone()),
        compensates: waiting.intent.compensates.clone(),
        openai_strict_nulls: false,
        // An approved call has none: `decide` refuses to approve a call that was given any.
        files: escepine_contract::WorkspaceFiles::new(),
        // The requester's parents as its token gave them when it asked: the approved call is
        // authorized again with them.
        attestation: waiting.intent.attestation.clone(),
        // The requester's token is not kept while the call waits: an approved call to a remote
        // endpoint that exchanges the caller's token fails, saying so.
        caller_token: None,
        trace: None,
        // The flow the intent recorded: the approved call is authorized again in that flow's
        // state as it is when approved.
        flow: waiting.intent.flow.clone(),
    }
}
