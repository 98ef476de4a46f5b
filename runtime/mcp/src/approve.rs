//! The built-in MCP tool `approve` (the reserved tool id): an approver decides a waiting call.
//!
//! Listed by `escepine serve` for every principal (any principal may be an approver; Cedar
//! decides, on the call's tool, with `Action::"approve"`). Input
//! `{"call_id": "<32 lower-case hex>", "decision": "approve" | "reject"}` (`decision` defaults
//! to `approve`). The caller is the approver (its principal, and the parents its access token
//! gave it), through [`Runtime::decide`]:
//!
//! - a decision taken is a result whose `structuredContent` is
//!   `{"call_id", "decision": "approved" | "rejected", "kind", "output"?, "error"?}`: `kind` is
//!   how the call ended (`ok`, `rejected`, or any other [`escepine_runtime::CallKind`]),
//!   `output` its gated output when `ok`, `error` the details of any other end;
//! - a refusal — the requester approving their own call, a principal Cedar does not permit, an
//!   expired call, one already decided, an unknown call or one that never waited — is a tool
//!   error of kind `approval_refused` with the `reason` and the `call_id`; it changes nothing.
//!
//! The server never asks for approval through elicitation: a decision is only ever this tool,
//! called by a principal other than the requester.

use std::sync::Arc;

use escepine_runtime::approval::{ApprovalError, Decider, Verdict};
use escepine_runtime::{CallOutcome, CallReport, Runtime};
use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};

use super::results::{refusal_body, report_body, tool_error};

/// The result of the `approve` tool called by `approver` with `arguments`.
pub async fn call(
    runtime: &Runtime,
    approver: Decider<'_>,
    arguments: Option<&Map<String, Value>>,
) -> CallToolResult {
    match ApproveInput::parse(arguments) {
        Ok(input) => decide(runtime, approver, &input).await,
        Err(e) => tool_error(
            format!("the input of `{APPROVE_TOOL}` is rejected: {e}"),
            json!({ "error": {
                "kind": escepine_runtime::CallKind::InputRejected.as_str(),
                "message": e.to_string(),
                "violations": [{ "pointer": e.pointer, "keyword": e.keyword, "message": e.message }],
            }}),
        ),
    }
}

/// The tool's name: the reserved tool id `approve`.
pub const APPROVE_TOOL: &str = "approve";

/// What the approver decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Record it rejected; nothing runs.
    Reject,
}

/// The tool's input, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproveInput {
    /// The waiting call.
    pub call_id: String,
    /// The decision.
    pub decision: Decision,
}

/// A refused input: the JSON pointer, the schema keyword, the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {message}")]
pub struct InputError {
    /// Where (`""`, `/call_id`, `/decision`, `/<field>`).
    pub pointer: String,
    /// The JSON Schema keyword the input breaks.
    pub keyword: &'static str,
    /// The rule.
    pub message: String,
}

impl ApproveInput {
    /// Read the tool's arguments.
    ///
    /// # Errors
    /// [`InputError`] naming the field and the rule.
    pub fn parse(arguments: Option<&Map<String, Value>>) -> Result<Self, InputError> {
        let err = |pointer: &str, keyword, message: &str| InputError {
            pointer: pointer.to_string(),
            keyword,
            message: message.to_string(),
        };
        let empty = Map::new();
        let args = arguments.unwrap_or(&empty);
        if let Some(other) = args.keys().find(|k| *k != "call_id" && *k != "decision") {
            return Err(err(
                &format!("/{other}"),
                "additionalProperties",
                "only `call_id` and `decision` are accepted",
            ));
        }
        let call_id = match args.get("call_id") {
            None => return Err(err("", "required", "`call_id` is required")),
            Some(Value::String(id)) if is_call_id(id) => id.clone(),
            Some(_) => {
                return Err(err(
                    "/call_id",
                    "pattern",
                    "a call id is 32 lower-case hexadecimal digits",
                ))
            }
        };
        let decision = match args.get("decision") {
            None => Decision::Approve,
            Some(Value::String(d)) if d == "approve" => Decision::Approve,
            Some(Value::String(d)) if d == "reject" => Decision::Reject,
            Some(_) => {
                return Err(err(
                    "/decision",
                    "enum",
                    "`decision` is \"approve\" or \"reject\"",
                ))
            }
        };
        Ok(Self { call_id, decision })
    }
}

fn is_call_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The `tools/list` entry of `approve`.
pub fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["call_id"],
        "properties": {
            "call_id": {
                "type": "string",
                "pattern": "^[0-9a-f]{32}$",
                "description": "The waiting call's id (the task id, or the `call_id` of an \
                                `awaiting_approval` error)."
            },
            "decision": {
                "type": "string",
                "enum": ["approve", "reject"],
                "default": "approve",
                "description": "`approve` runs the call once; `reject` records it rejected."
            }
        }
    });
    let schema = match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let mut tool = Tool::new(
        APPROVE_TOOL,
        "Approve or reject a call that waits for approval. The requester of a call can never \
         approve it; Cedar decides who may (Action::\"approve\" on the call's tool).",
        Arc::new(schema),
    );
    tool.annotations = Some(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            .open_world(false),
    );
    tool
}

/// Decide `input` as `approver`: the result of the `approve` tool.
pub async fn decide(
    runtime: &Runtime,
    approver: Decider<'_>,
    input: &ApproveInput,
) -> CallToolResult {
    let verdict = match input.decision {
        Decision::Approve => Verdict::Approve,
        Decision::Reject => Verdict::Reject,
    };
    let decided = runtime.decide(approver, &input.call_id, verdict).await;
    match decided {
        Ok(report) => CallToolResult::structured(decided_body(input.decision, &report)),
        Err(ApprovalError::Call(e)) => tool_error(e.to_string(), refusal_body(&e)),
        Err(e) => tool_error(e.to_string(), refused_body(&input.call_id, &e)),
    }
}

/// The `structuredContent` of a decision taken.
fn decided_body(decision: Decision, report: &CallReport) -> Value {
    let mut body = json!({
        "call_id": report.call_id(),
        "decision": match decision {
            Decision::Approve => "approved",
            Decision::Reject => "rejected",
        },
        "kind": report.kind().as_str(),
    });
    let extra = match report.outcome() {
        CallOutcome::Ok(output) => json!({ "output": output }),
        CallOutcome::Rejected { .. } => json!({}),
        _ => json!({ "error": report_body(report)["error"].clone() }),
    };
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    body
}

/// The machine name of a refusal (`reason` of an `approval_refused` error).
pub fn reason(e: &ApprovalError) -> &'static str {
    match e {
        ApprovalError::UnknownCall(_) => "unknown_call",
        ApprovalError::NotWaiting(_) => "not_waiting",
        ApprovalError::AlreadyDecided { .. } => "already_decided",
        ApprovalError::Expired { .. } => "expired",
        ApprovalError::SelfApproval { .. } => "self_approval",
        ApprovalError::NotRequester { .. } => "not_requester",
        ApprovalError::FilesNotKept { .. } => "files_not_kept",
        ApprovalError::NotPermitted { .. } => "not_permitted",
        ApprovalError::Untrusted { .. } => "untrusted_entry",
        ApprovalError::Ledger(_) => "ledger_unavailable",
        ApprovalError::Call(_) => "call",
    }
}

/// The details of a refused decision: `{"error": {"kind": "approval_refused", "reason", …}}`,
/// or `ledger_unavailable` when the ledger could not be read or written.
pub fn refused_body(call_id: &str, e: &ApprovalError) -> Value {
    let kind = match e {
        ApprovalError::Ledger(_) => "ledger_unavailable",
        _ => "approval_refused",
    };
    json!({ "error": {
        "kind": kind,
        "reason": reason(e),
        "message": e.to_string(),
        "call_id": call_id,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<ApproveInput, InputError> {
        ApproveInput::parse(v.as_object())
    }

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn the_decision_defaults_to_approve() {
        assert_eq!(
            parse(json!({ "call_id": ID })),
            Ok(ApproveInput {
                call_id: ID.into(),
                decision: Decision::Approve
            })
        );
        assert_eq!(
            parse(json!({ "call_id": ID, "decision": "reject" })).map(|i| i.decision),
            Ok(Decision::Reject)
        );
    }

    #[test]
    fn a_bad_input_names_its_field_and_rule() {
        let e = parse(json!({})).unwrap_err();
        assert_eq!((e.pointer.as_str(), e.keyword), ("", "required"));
        let e = parse(json!({ "call_id": ID.to_uppercase() })).unwrap_err();
        assert_eq!((e.pointer.as_str(), e.keyword), ("/call_id", "pattern"));
        let e = parse(json!({ "call_id": ID, "decision": "maybe" })).unwrap_err();
        assert_eq!((e.pointer.as_str(), e.keyword), ("/decision", "enum"));
        let e = parse(json!({ "call_id": ID, "as": "bob" })).unwrap_err();
        assert_eq!(
            (e.pointer.as_str(), e.keyword),
            ("/as", "additionalProperties")
        );
    }

    #[test]
    fn the_listed_tool_is_the_reserved_id() {
        let t = tool();
        assert_eq!(t.name, APPROVE_TOOL);
        assert_eq!(t.input_schema["required"], json!(["call_id"]));
    }
}
