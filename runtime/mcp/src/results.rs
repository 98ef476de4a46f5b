//! The MCP results of governed calls: a completed call's result with its call id in `_meta`, and
//! the tool error of any other end, its details (`{"error": {"kind", "message", …}}`) in
//! `_meta` and a second text block. The server, the tasks and the `approve` tool all answer
//! through these.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{json, Map, Value};

use escepine_runtime::CallError;
use escepine_runtime::{CallKind, CallOutcome, CallReport};

/// The `_meta` key of a completed call's result holding its call id (its ledger entries).
pub const CALL_ID_META: &str = "dev.escepine/call_id";

/// The `_meta` key of an error result holding its details (`{"error": {"kind", …}}`).
pub const ERROR_META: &str = "dev.escepine/error";

/// The `_meta` of a completed call's result: its call id under [`CALL_ID_META`].
pub(crate) fn call_id_meta(call_id: &str) -> MetaObject {
    let mut meta = Map::new();
    meta.insert(CALL_ID_META.into(), Value::from(call_id));
    MetaObject(meta)
}

/// A tool result with `isError: true`: the message, then the details as JSON text, the same
/// details in `_meta` under [`ERROR_META`].
pub(crate) fn tool_error(message: String, body: Value) -> CallToolResult {
    let mut result = CallToolResult::error(vec![
        ContentBlock::text(message),
        ContentBlock::text(body.to_string()),
    ]);
    let mut meta = Map::new();
    meta.insert(ERROR_META.into(), body);
    result.meta = Some(MetaObject(meta));
    result
}

/// How a call's end reaches an MCP client, by its [`CallKind`] — the one place the mapping is
/// made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A result with the output as `structuredContent` (`ok`).
    Structured,
    /// A JSON-RPC error, invalid params (`unknown_tool`, as MCP specifies for an unknown tool).
    InvalidParams,
    /// A tool result with `isError: true` and the details of [`report_body`] or
    /// [`refusal_body`] (every other kind).
    ToolError,
}

/// The reply for a call that ended with `kind`.
pub const fn reply(kind: CallKind) -> Reply {
    match kind {
        CallKind::Ok => Reply::Structured,
        CallKind::UnknownTool => Reply::InvalidParams,
        CallKind::Denied
        | CallKind::Failed
        | CallKind::TimedOut
        | CallKind::OutputRejected
        | CallKind::BudgetExceeded
        | CallKind::AwaitingApproval
        | CallKind::Rejected
        | CallKind::Expired
        | CallKind::InputRejected
        | CallKind::LedgerUnavailable
        | CallKind::ClientMismatch => Reply::ToolError,
    }
}

/// The details of an error result for a call that got past its intent (its `_meta`
/// [`ERROR_META`] and second text block): `{"error": {"kind", "message", "call_id", …}}`.
pub fn report_body(report: &CallReport) -> Value {
    let mut body = json!({
        "kind": report.kind().as_str(),
        "message": report.to_string(),
        "call_id": report.call_id(),
    });
    let extra = match report.outcome() {
        CallOutcome::Ok(_) => json!({}),
        CallOutcome::Denied {
            policy_ids,
            reasons,
        } => json!({ "policy_ids": policy_ids, "reasons": reasons }),
        CallOutcome::TimedOut { timeout_ms } => {
            json!({ "attempts": report.attempts(), "timeout_ms": timeout_ms })
        }
        CallOutcome::Failed { .. } => json!({ "attempts": report.attempts() }),
        CallOutcome::OutputRejected { violations } => json!({
            // The validator's messages may quote the rejected output: pointers and keywords only.
            "message": "the tool's output violates its output schema; it was recorded, not returned",
            "violations": violations.iter().map(|v| json!({
                "pointer": v.pointer, "keyword": v.keyword,
            })).collect::<Vec<_>>(),
        }),
        CallOutcome::BudgetExceeded { budget } => json!({ "budget": budget }),
        CallOutcome::AwaitingApproval {
            expires_at_ms,
            policy_ids,
            reasons,
        } => json!({
            "expires_at_ms": expires_at_ms,
            "policy_ids": policy_ids,
            "reasons": reasons,
        }),
        CallOutcome::Rejected {
            approver,
            withdrawn,
        } => json!({ "approver": approver, "withdrawn": withdrawn }),
        CallOutcome::Expired { expired_at_ms } => json!({ "expired_at_ms": expired_at_ms }),
    };
    merge(&mut body, extra);
    json!({ "error": body })
}

/// The details of an error result for a call refused before its intent:
/// `{"error": {"kind", "message", …}}`.
pub fn refusal_body(e: &CallError) -> Value {
    let mut body = json!({ "kind": e.kind().as_str(), "message": e.to_string() });
    let extra = match e {
        CallError::UnknownTool(tool) => json!({ "tool": tool }),
        CallError::InputRejected(violations) => json!({
            "violations": violations.iter().map(|v| json!({
                "pointer": v.pointer, "keyword": v.keyword, "message": v.message,
            })).collect::<Vec<_>>(),
        }),
        CallError::FilesRejected(problems) => json!({ "files": problems }),
        CallError::LedgerUnavailable(_) | CallError::ClientMismatch(_) => json!({}),
    };
    merge(&mut body, extra);
    json!({ "error": body })
}

fn merge(body: &mut Value, extra: Value) {
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
}
