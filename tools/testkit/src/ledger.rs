//! Records shared by the ledger's tests and benchmarks.

use escepine_contract::SideEffectClass;
use escepine_ledger::entry::{canonical_json, sha256_hex};
use escepine_ledger::record::{
    Attempt, CallResult, Decision, ErrorClass, Intent, Outcome, Record, Transition,
};
use serde_json::json;

/// The intent of call `n`, allowed, in `run` (if any).
pub fn intent(n: usize, run: Option<&str>) -> Record {
    let payload = json!({ "url": format!("https://kb.example.com/page/{n}"), "depth": 1.5, "tags": ["a", "ü"] });
    Record::Intent(Intent {
        call_id: format!("call-{n}"),
        idempotency_key: format!("key-{n}"),
        run_id: run.map(str::to_owned),
        step: run.map(|_| "read".to_string()),
        compensates: None,
        tool_id: "kb_fetch".into(),
        tool_version: "1.2.0".into(),
        class: SideEffectClass::ReadOnly,
        principal: r#"Agent::"alice""#.into(),
        payload_hash: sha256_hex(canonical_json(&payload)),
        payload,
        decision: Decision::Allow,
        policy_ids: vec!["kb-read".into(), "page-read:0".into()],
        reasons: vec![],
        overlay: vec![],
        deadline_ms: Some(90_500),
        credential_exemptions: vec![],
        files: Vec::new(),
        egress_origins: vec![],
        attestation: None,
        shadow: None,
        approval: None,
        flow: None,
        flow_state: None,
    })
}

/// A denied intent for call `n`.
pub fn denied_intent(n: usize, run: Option<&str>) -> Record {
    match intent(n, run) {
        Record::Intent(mut i) => {
            i.decision = Decision::Deny;
            i.policy_ids = vec!["no-linkedin".into()];
            Record::Intent(i)
        }
        other => other,
    }
}

/// The outcome of call `n`: one transient failure, then success.
pub fn outcome(n: usize) -> Record {
    let output = json!({ "title": format!("Page {n}"), "bytes": 1234 });
    Record::Outcome(Outcome {
        call_id: format!("call-{n}"),
        result: CallResult::Ok,
        attempts: vec![
            Attempt {
                start_ms: 1_700_000_000_000,
                duration_us: 15_250,
                error_class: Some(ErrorClass::Transient),
                error: Some("exit 75: upstream busy".into()),
                stderr: Some("busy\n".into()),
                egress_refusals: vec![],
                egress_requests: vec![],
                credential: None,
            },
            Attempt {
                start_ms: 1_700_000_000_100,
                duration_us: 3_125,
                error_class: None,
                error: None,
                stderr: None,
                egress_refusals: vec![],
                egress_requests: vec![],
                credential: None,
            },
        ],
        output_hash: Some(sha256_hex(canonical_json(&output))),
        output: Some(output),
        error: None,
        budget: None,
        entered: None,
    })
}

/// The outcome of a denied call `n`.
pub fn denied_outcome(n: usize) -> Record {
    Record::Outcome(Outcome {
        call_id: format!("call-{n}"),
        result: CallResult::Denied,
        attempts: vec![],
        output_hash: None,
        output: None,
        error: Some("denied by no-linkedin".into()),
        budget: None,
        entered: None,
    })
}

/// An SOP transition of `run`.
pub fn transition(run: &str, event: &str, state: &str) -> Record {
    Record::Transition(Transition {
        run_id: run.into(),
        event: event.into(),
        state: Some(state.into()),
        data: serde_json::Value::Null,
    })
}
