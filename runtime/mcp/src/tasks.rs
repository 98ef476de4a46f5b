//! A call that waits for approval, as an MCP task (the tasks extension,
//! `io.modelcontextprotocol/tasks`, as rmcp implements it: `tasks/get`, `tasks/update`,
//! `tasks/cancel`).
//!
//! The task id is the call id. The server holds no task state: every `tasks/get` reads the
//! call's entries from the ledger's call view ([`CallView`], through the store's index of call
//! ids), so a restarted `escepine serve` on the same ledger answers for the tasks of the one
//! before.
//!
//! | ledger state | task status | payload |
//! |---|---|---|
//! | waiting for approval | `working` | message: awaiting approval, until when |
//! | decided, outcome not yet recorded | `working` | message: approved by whom, running |
//! | ended with a result | `completed` | the `tools/call` result the call would have had: the gated output (as scrubbed in the ledger) as `structuredContent`, or a tool error (`isError`) of the outcome's kind |
//! | rejected | `failed` | error `{code: -32000, message, data: {"kind": "rejected", "call_id"}}` |
//! | withdrawn (its task cancelled) | `cancelled` | — |
//! | expired (recorded, or past its expiry) | `failed` | error `{code: -32000, message, data: {"kind": "expired", "call_id", "expired_at_ms"?}}` |
//!
//! `working`, not `input_required`: what a waiting call needs is an approver's decision, which
//! the requester's client cannot give (`input_required` asks the client for input). A task is
//! its requester's: another principal asking for it — to read or to cancel it — is told it
//! does not exist. `tasks/cancel` by the requester withdraws a call that still waits ([`cancel`]:
//! the `approval` entry `withdrawn` and the outcome `rejected` are recorded, nothing runs); a
//! call already decided, running or ended is left as it is (the extension's cancellation is
//! cooperative: the task reaches its own terminal status), and one past its expiry has its
//! expiry recorded. `tasks/update` is refused: a waiting call asks its client for no input.

use escepine_contract::Principal;
use escepine_ledger::calls::{state::CallState, Call, CallView};
use escepine_ledger::entry::{iso8601, now_ms};
use escepine_ledger::record::{ApprovalResult, CallResult, Outcome};
use escepine_ledger::trust;
use escepine_runtime::approval::{ApprovalError, Decider, Verdict};
use escepine_runtime::{CallKind, CallReport, Runtime};
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, ErrorCode, GetTaskResult, JsonObject, Task,
    TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use serde_json::{json, Value};

use super::results::{call_id_meta, tool_error};

/// The JSON-RPC error code of a task whose call was rejected or expired.
pub const APPROVAL_FAILED: ErrorCode = ErrorCode(-32000);

/// How often a client should poll a waiting call's task, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 1_000;

/// The task that answers a `tools/call` whose call waits for approval until `expires_at_ms`.
pub fn created(report: &CallReport, expires_at_ms: u64) -> CreateTaskResult {
    let at = iso8601(now_ms());
    let task = Task::new(report.call_id(), TaskStatus::Working, at.clone(), at)
        .with_status_message(waiting_message(expires_at_ms))
        .with_poll_interval_ms(POLL_INTERVAL_MS);
    CreateTaskResult::new(task)
}

/// `tasks/get` for `principal`: the task of call `task_id`, from the ledger.
///
/// # Errors
/// Invalid params for a task that does not exist or is another principal's; an internal error
/// when the ledger cannot be read.
pub fn get(
    runtime: &Runtime,
    principal: &Principal,
    task_id: &str,
) -> Result<GetTaskResult, ErrorData> {
    let ledger = &**runtime.ledger();
    let call = CallView::new(ledger)
        .call(task_id)
        .map_err(|e| ErrorData::internal_error(format!("ledger: {e}"), None))?
        .ok_or_else(|| unknown(task_id))?;
    let task = task_of(&call, principal, now_ms()).ok_or_else(|| unknown(task_id))?;
    // A completed task returns the recorded output: only as it was committed.
    if let Some(outcome) = &call.outcome {
        trust::check_in_ledger(ledger, &outcome.entry(), runtime.trust()).map_err(|e| {
            ErrorData::internal_error(format!("the outcome of call `{task_id}`: {e}"), None)
        })?;
    }
    Ok(GetTaskResult::new(task))
}

/// The task of `call` (as the ledger's call view reads it) at `now`, if it is `principal`'s.
pub fn task_of(call: &Call, principal: &Principal, now: u64) -> Option<DetailedTask> {
    let intent = call.intent.as_ref()?;
    if intent.record.principal != principal.to_string() {
        return None;
    }
    let call_id = call.call_id.as_str();
    let updated = call.updated_ms().unwrap_or(intent.at_ms);
    let task = |status| Task::new(call_id, status, iso8601(intent.at_ms), iso8601(updated));
    let working = |message: String| {
        DetailedTask::new(
            task(TaskStatus::Working)
                .with_status_message(message)
                .with_poll_interval_ms(POLL_INTERVAL_MS),
            TaskPayload::Working,
        )
    };
    Some(match call.state(now) {
        CallState::Unknown => return None,
        CallState::InFlight => working("running".into()),
        CallState::Waiting(w) => working(waiting_message(w.expires_at_ms)),
        CallState::Decided(a) => {
            working(format!("{} by {}; running", a.result.as_str(), a.approver))
        }
        CallState::Expired(w) => failed(
            task(TaskStatus::Failed),
            "the call waited past its expiry: nothing ran",
            json!({ "kind": CallKind::Expired.as_str(), "call_id": call_id, "expired_at_ms": w.expires_at_ms }),
        ),
        CallState::Ended(_) if withdrawn(call) => {
            DetailedTask::new(task(TaskStatus::Cancelled), TaskPayload::Cancelled)
        }
        CallState::Ended(outcome) => ended(task(TaskStatus::Completed), &outcome),
    })
}

/// Whether the call's approval entry is its requester's withdrawal.
fn withdrawn(call: &Call) -> bool {
    call.approval
        .as_ref()
        .is_some_and(|a| a.record.result == ApprovalResult::Withdrawn)
}

/// `tasks/cancel` by `requester`: the call of task `task_id`, if it still waits, is withdrawn
/// (recorded; nothing runs); one past its expiry has its expiry recorded; one decided, running
/// or ended is left as it is. The acknowledgement is the same in every case.
///
/// # Errors
/// Invalid params for a task that does not exist or is another principal's; an internal error
/// when the ledger cannot be read or written.
pub async fn cancel(
    runtime: &Runtime,
    requester: Decider<'_>,
    task_id: &str,
) -> Result<(), ErrorData> {
    let call = CallView::new(&**runtime.ledger())
        .call(task_id)
        .map_err(|e| ErrorData::internal_error(format!("ledger: {e}"), None))?
        .ok_or_else(|| unknown(task_id))?;
    let owned = call
        .intent
        .as_ref()
        .is_some_and(|i| i.record.principal == requester.principal.to_string());
    if !owned {
        return Err(unknown(task_id));
    }
    let withdrawn = match call.state(now_ms()) {
        CallState::Waiting(_) => runtime
            .decide(requester, task_id, Verdict::Withdraw)
            .await
            .map(drop),
        CallState::Expired(_) => runtime.expire(task_id).await.map(drop),
        _ => return Ok(()),
    };
    match withdrawn {
        // Decided by someone else meanwhile, or expired: the task shows how it ended.
        Ok(()) | Err(ApprovalError::AlreadyDecided { .. }) | Err(ApprovalError::Expired { .. }) => {
            Ok(())
        }
        Err(e) => Err(ErrorData::internal_error(
            format!("the task `{task_id}` could not be cancelled: {e}"),
            None,
        )),
    }
}

/// The refusal of `tasks/update`: a waiting call asks its client for no input.
pub fn update_refused(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(
        "this task asks for no input: it waits for an approver's decision",
        Some(json!({ "call_id": task_id })),
    )
}

fn unknown(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no task `{task_id}`"),
        Some(json!({ "task_id": task_id })),
    )
}

fn waiting_message(expires_at_ms: u64) -> String {
    format!(
        "awaiting approval by an approver other than the requester (the `approve` tool), until {}",
        iso8601(expires_at_ms)
    )
}

fn failed(task: Task, message: &str, data: Value) -> DetailedTask {
    let mut error = JsonObject::new();
    error.insert("code".into(), json!(APPROVAL_FAILED.0));
    error.insert("message".into(), json!(message));
    error.insert("data".into(), data);
    DetailedTask::new(task, TaskPayload::Failed { error })
}

/// The task of a call whose outcome is recorded.
fn ended(task: Task, outcome: &Outcome) -> DetailedTask {
    let call_id = outcome.call_id.as_str();
    let result = match (outcome.result, &outcome.output) {
        (CallResult::Rejected, _) => {
            return failed(
                task,
                "an approver rejected the call: nothing ran",
                json!({ "kind": CallKind::Rejected.as_str(), "call_id": call_id }),
            )
        }
        (CallResult::Expired, _) => {
            return failed(
                task,
                "the call waited past its expiry: nothing ran",
                json!({ "kind": CallKind::Expired.as_str(), "call_id": call_id }),
            )
        }
        (CallResult::Ok, Some(output)) => {
            CallToolResult::structured(output.clone()).with_meta(Some(call_id_meta(call_id)))
        }
        _ => outcome_error(outcome),
    };
    let result = match serde_json::to_value(result) {
        Ok(Value::Object(map)) => map,
        _ => JsonObject::new(),
    };
    DetailedTask::new(task, TaskPayload::Completed { result })
}

/// The tool error of a call that ended without an output, as the ledger records it.
fn outcome_error(outcome: &Outcome) -> CallToolResult {
    let kind = CallKind::of_result(outcome.result).as_str();
    let message = outcome
        .error
        .clone()
        .unwrap_or_else(|| format!("the call ended {kind}"));
    let mut body = json!({
        "kind": kind,
        "message": message,
        "call_id": outcome.call_id,
        "attempts": outcome.attempts.len(),
    });
    if let (Some(b), Some(budget)) = (body.as_object_mut(), &outcome.budget) {
        b.insert("budget".into(), json!(budget));
    }
    tool_error(message, json!({ "error": body }))
}
