//! What the ledger records: intents before execution, outcomes after it, SOP transitions.
//!
//! These are the bodies of ledger entries; [`crate::entry::Entry`] chains them. The format is
//! documented in `runtime/LEDGER.md` so another store can hold the same chain.

use std::fmt;

use escepine_contract::SideEffectClass;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One ledger record (the body of an entry), tagged by `kind`.
///
/// Records are built once per entry and moved into the writer; boxing the large variant would
/// add an allocation per entry for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Record {
    /// Written after authorization and before any execution.
    Intent(Intent),
    /// Written after the call ended, before control returns to the caller.
    Outcome(Outcome),
    /// An approver's decision on a call that waited for approval (or its expiry), written
    /// before the approved call runs.
    Approval(Approval),
    /// An SOP run's state-machine event (start, transition, end, superseded, …).
    Transition(Transition),
    /// A label removed from a flow by an approver Cedar permitted to declassify it.
    Declassification(Declassification),
}

/// The intent of one call: who asked for what, and what Cedar decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// Unique id of this call.
    pub call_id: String,
    /// The same across the call's attempts (and across a resume of the same SOP step).
    pub idempotency_key: String,
    /// The SOP run, if the call is a step of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The SOP state, if the call is a step of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The call this one compensates, if it is a saga compensation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compensates: Option<String>,
    /// The tool id.
    pub tool_id: String,
    /// The tool version.
    pub tool_version: String,
    /// The tool's side-effect class, recorded as `read-only`, `compensatable` or `supersede`.
    pub class: SideEffectClass,
    /// The principal (`Agent::"id"`).
    pub principal: String,
    /// What an identity provider vouched for about the principal, when its access token named
    /// it (`escepine serve --oauth`): the issuer, a SHA-256 of the token's `jti` (never the
    /// token) and the parents its claims gave the principal, with which the call was authorized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestation: Option<escepine_contract::Attestation>,
    /// The canonical payload, secrets scrubbed.
    pub payload: Value,
    /// SHA-256 (hex) of the canonical payload.
    pub payload_hash: String,
    /// What Cedar decided: `allow`, `deny`, or `awaiting-approval` (allowed once an approver
    /// approves; see `approval`).
    pub decision: Decision,
    /// Ids of the determining policies.
    pub policy_ids: Vec<String>,
    /// Why a DENY was reached without a determining policy (an evaluation error, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Runtime overlay entries in force for this tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlay: Vec<String>,
    /// The origins (`scheme://host:port`) the call's egress admits because its authorization
    /// allowed their URLs (a profile with `authorized-urls`), sorted; fixed before the sandbox
    /// started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress_origins: Vec<String>,
    /// The call's overall deadline in milliseconds from its first attempt: every attempt at
    /// the tool's timeout plus every retry delay at its longest
    /// ([`escepine_contract::RetryPolicy::deadline_ms`]). Absent only in entries written before
    /// the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// The input properties the record exempts from the credential-name rule
    /// (`"x-not-credential": "<why>"`), each with its reviewed reason, and those the rule lets
    /// through as a recognised shape (`recognised as a pagination token (<rule id>): …`): what
    /// this call's payload was allowed to carry under a credential-like name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub credential_exemptions: Vec<CredentialExemption>,
    /// The workspace files the caller gave (`sandbox_profile.workspace_inputs`), by name: their
    /// sizes and SHA-256 digests, never their bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<WorkspaceFileDigest>,
    /// What the shadow (candidate) policy set decided on the very same request, present only
    /// when it disagrees with `decision`. Never enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ShadowDecision>,
    /// For a call whose decision is `awaiting-approval`: until when it waits, and the reasons
    /// of the `@approval` permits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRequest>,
    /// The flow the call belongs to (an SOP run, the id the caller named, or its principal's
    /// default flow). Absent only in entries written before flows existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<escepine_contract::FlowId>,
    /// The flow's state Cedar decided on (`context.flow`): what replay re-authorizes with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_state: Option<escepine_contract::FlowState>,
}

/// One workspace file of a call, as its intent records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceFileDigest {
    /// Its name in `/workspace`.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// SHA-256 (hex) of its bytes.
    pub sha256: String,
}

/// What Cedar decided on a call, as its intent records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Decision {
    /// Allowed: the call runs.
    #[serde(rename = "allow")]
    Allow,
    /// Denied: nothing runs; an outcome `denied` follows.
    #[serde(rename = "deny")]
    Deny,
    /// Allowed once an approver other than the requester approves: the call waits.
    #[serde(rename = "awaiting-approval")]
    AwaitingApproval,
}

impl Decision {
    /// Every decision, in the order of the enum.
    pub const ALL: [Self; 3] = [Self::Allow, Self::Deny, Self::AwaitingApproval];

    /// The ledger's spelling: `allow`, `deny` or `awaiting-approval`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::AwaitingApproval => "awaiting-approval",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the intent of a call waiting for approval records of the wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    /// When the wait ends, Unix milliseconds: the intent's time plus the runtime's approval
    /// time to live. An approval after it is refused and the call is recorded `expired`.
    pub expires_at_ms: u64,
    /// The values of the determining `@approval` annotations (the empty ones left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// An approver's decision on a waiting call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// The waiting call.
    pub call_id: String,
    /// The principal who decided (`Agent::"id"`); `runtime` for an expiry the runtime found;
    /// the requester itself for a withdrawal.
    pub approver: String,
    /// What an identity provider vouched for about the approver, when its access token named
    /// it (as an intent's `attestation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestation: Option<escepine_contract::Attestation>,
    /// `approved`, `rejected`, `withdrawn` or `expired`.
    pub result: ApprovalResult,
    /// The policies that permitted the approver `Action::"approve"` on the tool (empty for an
    /// expiry).
    pub policy_ids: Vec<String>,
}

/// What became of a waiting call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalResult {
    /// Approved: the call runs next, once, and its outcome follows.
    Approved,
    /// Rejected: nothing ran; an outcome `rejected` follows.
    Rejected,
    /// Withdrawn by its requester before anyone decided (an MCP client cancelled the call's
    /// task): nothing ran; an outcome `rejected` follows.
    Withdrawn,
    /// Past its expiry: nothing ran; an outcome `expired` follows.
    Expired,
}

impl ApprovalResult {
    /// `approved`, `rejected`, `withdrawn` or `expired`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Withdrawn => "withdrawn",
            Self::Expired => "expired",
        }
    }
}

/// The decision of the shadow policy set on a call, recorded where it disagrees with the
/// enforced one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShadowDecision {
    /// What the candidate set decided.
    pub decision: Decision,
    /// The candidate set's determining policies (on deny, the satisfied forbids and the
    /// policies whose evaluation failed).
    pub policy_ids: Vec<String>,
}

/// One reviewed exemption from the credential-name rule, as an intent records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialExemption {
    /// Where the property sits in a payload (list steps as `/-`).
    pub pointer: String,
    /// The reviewed reason the record gives.
    pub reason: String,
}

/// How an attempt failed, as its entry records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The tool said it may succeed if tried again (exit 75, an MCP error marked transient).
    Transient,
    /// The tool failed for good (another status, a signal, a tool error).
    Permanent,
    /// The attempt outlived the tool's timeout.
    Timeout,
    /// The tool could not be started (not found, a digest that differs, a sandbox refused).
    Spawn,
    /// The tool broke its protocol (no or malformed output, too much output).
    Protocol,
}

impl ErrorClass {
    /// The ledger's spelling: `transient`, `permanent`, `timeout`, `spawn`, `protocol`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Transient => "transient",
            Self::Permanent => "permanent",
            Self::Timeout => "timeout",
            Self::Spawn => "spawn",
            Self::Protocol => "protocol",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attempt of a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    /// Start, Unix milliseconds.
    pub start_ms: u64,
    /// Duration in microseconds.
    pub duration_us: u64,
    /// `None` on success; else how the attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    /// The error message, scrubbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The tool's stderr, bounded and scrubbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// Egress refusals of the sandbox's proxy during this attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress_refusals: Vec<String>,
    /// Requests the sandbox's proxy admitted during this attempt, each with its path
    /// (`GET host:port/path?query`; a tunnel, `CONNECT host:port`), scrubbed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress_requests: Vec<String>,
    /// The credential the runtime presented to a remote endpoint (`mcp-http`) in this attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<CredentialUse>,
}

/// What the ledger keeps of a credential the runtime presented to a remote endpoint: never the
/// token or the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialUse {
    /// `bearer`, `client_credentials` or `token_exchange`.
    pub grant: String,
    /// SHA-256 (hex) of the token endpoint's URL that issued the token (OAuth grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_sha256: Option<String>,
    /// The `sub` the token was issued for, as the token says (OAuth grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallResult {
    /// The output passed the output gate and was returned.
    Ok,
    /// Cedar denied the call; nothing ran.
    Denied,
    /// Every attempt failed (or a permanent failure stopped the retries).
    Failed,
    /// The last attempt ran out of time.
    TimedOut,
    /// The output violated the output schema; nothing was returned.
    OutputRejected,
    /// A budget of the call's principal and tool had no room (named in `budget`); nothing ran,
    /// nothing was retried.
    BudgetExceeded,
    /// The call waited for approval and an approver rejected it; nothing ran.
    Rejected,
    /// The call waited for approval past its expiry; nothing ran.
    Expired,
}

impl CallResult {
    /// Every result, in the order of the enum.
    pub const ALL: [Self; 8] = [
        Self::Ok,
        Self::Denied,
        Self::Failed,
        Self::TimedOut,
        Self::OutputRejected,
        Self::BudgetExceeded,
        Self::Rejected,
        Self::Expired,
    ];

    /// The ledger's spelling: `ok`, `denied`, `failed`, `timed_out`, `output_rejected`,
    /// `budget_exceeded`, `rejected`, `expired`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Denied => "denied",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::OutputRejected => "output_rejected",
            Self::BudgetExceeded => "budget_exceeded",
            Self::Rejected => "rejected",
            Self::Expired => "expired",
        }
    }
}

/// The outcome of one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// The call id of the matching intent.
    pub call_id: String,
    /// How it ended.
    pub result: CallResult,
    /// Each attempt.
    pub attempts: Vec<Attempt>,
    /// SHA-256 (hex) of the canonical output, when one was produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_hash: Option<String>,
    /// The canonical output, scrubbed (present when `result` is `ok`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The final error, scrubbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The id of the budget that refused the call (present when `result` is
    /// `budget_exceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// What the call brought into its flow: present when it ran (at least one attempt),
    /// whatever its result, since a failed call's error can carry what it read too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entered: Option<FlowEntry>,
}

/// What one call that ran brought into its flow, as its outcome records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowEntry {
    /// The flow.
    pub flow: escepine_contract::FlowId,
    /// The tool that ran.
    pub tool_id: String,
    /// The principal that called it (`Agent::"id"`).
    pub principal: String,
    /// The labels of the tool's output and of what it reads (its record's `data_labels`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// The origins it reached: those of the URLs Cedar authorized, and a remote endpoint's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<String>,
}

/// A label removed from a flow: by whom, why, and on which policies' word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declassification {
    /// The flow.
    pub flow: escepine_contract::FlowId,
    /// The label removed.
    pub label: String,
    /// The approver (`Agent::"id"`).
    pub principal: String,
    /// Why, as the approver gave it.
    pub reason: String,
    /// The policies that permitted it.
    pub policy_ids: Vec<String>,
}

/// An SOP run event (issue: SOP engine). Kept open-ended: `event` names it, `data` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transition {
    /// The run.
    pub run_id: String,
    /// `run_started`, `step_started`, `transition`, `compensated`, `superseded`, `run_ended`, …
    pub event: String,
    /// The state concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Event data.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub data: Value,
}

impl From<Intent> for Record {
    fn from(intent: Intent) -> Self {
        Record::Intent(intent)
    }
}

impl From<Approval> for Record {
    fn from(approval: Approval) -> Self {
        Record::Approval(approval)
    }
}

impl From<Outcome> for Record {
    fn from(outcome: Outcome) -> Self {
        Record::Outcome(outcome)
    }
}

impl Record {
    /// The call this record belongs to (intents and outcomes), if any.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Record::Intent(i) => Some(&i.call_id),
            Record::Outcome(o) => Some(&o.call_id),
            Record::Approval(a) => Some(&a.call_id),
            Record::Transition(_) | Record::Declassification(_) => None,
        }
    }

    /// The SOP run this record names directly (intents of run steps and transitions), if any.
    ///
    /// An outcome names only its call; [`crate::store::Ledger::entries_for_run`] joins it to its
    /// intent.
    pub fn run_id(&self) -> Option<&str> {
        match self {
            Record::Intent(i) => i.run_id.as_deref(),
            Record::Outcome(_) | Record::Approval(_) | Record::Declassification(_) => None,
            Record::Transition(t) => Some(&t.run_id),
        }
    }

    /// The record's `kind` tag: `intent`, `outcome`, `approval`, `transition` or
    /// `declassification`.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::Intent(_) => "intent",
            Record::Outcome(_) => "outcome",
            Record::Approval(_) => "approval",
            Record::Transition(_) => "transition",
            Record::Declassification(_) => "declassification",
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn intent_body(extra: Value) -> Value {
        let mut body = json!({
            "kind": "intent", "call_id": "c", "idempotency_key": "k", "tool_id": "t",
            "tool_version": "1.0.0", "class": "read-only", "principal": "Agent::\"a\"",
            "payload": {}, "payload_hash": "00", "decision": "allow", "policy_ids": []
        });
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        body
    }

    #[test]
    fn egress_origins_are_decoded_and_omitted_when_empty() {
        let origins =
            json!({"egress_origins": ["http://127.0.0.1:8080", "https://example.com:443"]});
        let Record::Intent(i) =
            serde_json::from_value(intent_body(origins.clone())).expect("decodes")
        else {
            panic!("an intent");
        };
        assert_eq!(
            i.egress_origins,
            ["http://127.0.0.1:8080", "https://example.com:443"]
        );
        let back = serde_json::to_value(Record::Intent(i.clone())).expect("encodes");
        assert_eq!(back["egress_origins"], origins["egress_origins"]);

        let Record::Intent(none) = serde_json::from_value(intent_body(json!({}))).expect("decodes")
        else {
            panic!("an intent");
        };
        assert!(none.egress_origins.is_empty());
        let back = serde_json::to_value(Record::Intent(none)).expect("encodes");
        assert!(back.get("egress_origins").is_none(), "{back}");
        // Still closed: a misspelt field is refused.
        assert!(
            serde_json::from_value::<Record>(intent_body(json!({"egress_origin": []}))).is_err()
        );
    }

    #[test]
    fn the_decision_and_class_keep_their_recorded_spellings() {
        for (decision, text) in [
            (Decision::Allow, "allow"),
            (Decision::Deny, "deny"),
            (Decision::AwaitingApproval, "awaiting-approval"),
        ] {
            assert_eq!(
                serde_json::to_value(decision).expect("encodes"),
                json!(text)
            );
            assert_eq!(decision.as_str(), text);
        }
        for class in SideEffectClass::ALL {
            let body =
                intent_body(json!({"class": class.as_str(), "decision": "awaiting-approval"}));
            let Record::Intent(i) = serde_json::from_value(body.clone()).expect("decodes") else {
                panic!("an intent");
            };
            assert_eq!((i.class, i.decision), (class, Decision::AwaitingApproval));
            let back = serde_json::to_value(Record::Intent(i)).expect("encodes");
            assert_eq!(back, body, "re-encoded exactly as recorded");
        }
        for (field, value) in [("decision", "permit"), ("class", "read_only")] {
            let body = intent_body(json!({ field: value }));
            assert!(
                serde_json::from_value::<Record>(body).is_err(),
                "{field} {value} is refused"
            );
        }
    }

    #[test]
    fn the_shadow_decision_is_decoded_closed_and_omitted_when_absent() {
        let shadow = json!({"shadow": {"decision": "deny", "policy_ids": ["no-example"]}});
        let Record::Intent(i) =
            serde_json::from_value(intent_body(shadow.clone())).expect("decodes")
        else {
            panic!("an intent");
        };
        assert_eq!(
            i.shadow,
            Some(ShadowDecision {
                decision: Decision::Deny,
                policy_ids: vec!["no-example".into()]
            })
        );
        let back = serde_json::to_value(Record::Intent(i)).expect("encodes");
        assert_eq!(back["shadow"], shadow["shadow"]);

        let Record::Intent(none) = serde_json::from_value(intent_body(json!({}))).expect("decodes")
        else {
            panic!("an intent");
        };
        let back = serde_json::to_value(Record::Intent(none)).expect("encodes");
        assert!(back.get("shadow").is_none(), "{back}");
        // Closed at both levels.
        let extra = json!({"shadow": {"decision": "deny", "policy_ids": [], "why": "x"}});
        assert!(serde_json::from_value::<Record>(intent_body(extra)).is_err());
        let missing = json!({"shadow": {"decision": "deny"}});
        assert!(serde_json::from_value::<Record>(intent_body(missing)).is_err());
    }
}
