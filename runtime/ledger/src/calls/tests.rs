use escepine_contract::SideEffectClass;
use serde_json::json;

use super::*;
use crate::entry::{canonical_json, sha256_hex};
use crate::memory::MemoryLedger;
use crate::record::{ApprovalRequest, ApprovalResult, CallResult, Decision, Transition};

fn intent(call_id: &str, waits_until: Option<u64>) -> Record {
    let payload = json!({"to": "alice"});
    Record::Intent(Intent {
        call_id: call_id.into(),
        idempotency_key: format!("key-{call_id}"),
        run_id: Some("run-1".into()),
        step: Some("send".into()),
        compensates: None,
        tool_id: "send".into(),
        tool_version: "1.0.0".into(),
        class: SideEffectClass::Supersede,
        principal: r#"Agent::"alice""#.into(),
        payload_hash: sha256_hex(canonical_json(&payload)),
        payload,
        decision: match waits_until {
            Some(_) => Decision::AwaitingApproval,
            None => Decision::Allow,
        },
        policy_ids: vec!["p".into()],
        reasons: vec![],
        overlay: vec![],
        egress_origins: vec![],
        deadline_ms: None,
        credential_exemptions: vec![],
        files: Vec::new(),
        attestation: None,
        shadow: None,
        approval: waits_until.map(|expires_at_ms| ApprovalRequest {
            expires_at_ms,
            reasons: vec!["a person looks".into()],
        }),
        flow: None,
        flow_state: None,
    })
}

fn approval(call_id: &str, result: ApprovalResult) -> Record {
    Record::Approval(Approval {
        call_id: call_id.into(),
        approver: r#"Agent::"bob""#.into(),
        attestation: None,
        result,
        policy_ids: vec!["approvers".into()],
    })
}

fn outcome(call_id: &str, result: CallResult) -> Record {
    Record::Outcome(Outcome {
        call_id: call_id.into(),
        result,
        attempts: vec![Attempt {
            start_ms: 1,
            duration_us: 2,
            error_class: None,
            error: None,
            stderr: None,
            egress_refusals: vec![],
            egress_requests: vec![],
            credential: None,
        }],
        output_hash: None,
        output: None,
        error: None,
        budget: None,
        entered: None,
    })
}

fn transition() -> Record {
    Record::Transition(Transition {
        run_id: "run-1".into(),
        event: "transition".into(),
        state: None,
        data: serde_json::Value::Null,
    })
}

async fn ledger(records: Vec<Record>) -> MemoryLedger {
    let ledger = MemoryLedger::new();
    for r in records {
        ledger.append(r).await.expect("append");
    }
    ledger
}

#[tokio::test]
async fn entries_fold_into_calls_in_the_order_each_first_appears() {
    let ledger = ledger(vec![
        transition(),
        intent("b", Some(u64::MAX)),
        intent("a", None),
        transition(),
        outcome("a", CallResult::Ok),
        approval("b", ApprovalResult::Approved),
        outcome("b", CallResult::Ok),
    ])
    .await;
    let calls = CallView::new(&ledger).calls().expect("calls");
    let ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["b", "a"]);
    let b = &calls[0];
    assert_eq!(b.intent.as_ref().map(|r| r.seq), Some(2));
    assert_eq!(b.approval.as_ref().map(|r| r.seq), Some(6));
    assert_eq!(b.outcome.as_ref().map(|r| r.seq), Some(7));
    assert_eq!(b.first_seq(), Some(2));
    assert_eq!(b.attempts().len(), 1);
    assert_eq!(calls[1].approval, None);
    // One call read through the index is the same call.
    assert_eq!(
        CallView::new(&ledger).call("b").expect("read"),
        Some(b.clone())
    );
}

#[tokio::test]
async fn a_second_entry_of_a_kind_does_not_count_and_is_kept_aside() {
    let ledger = ledger(vec![
        intent("a", Some(u64::MAX)),
        approval("a", ApprovalResult::Rejected),
        approval("a", ApprovalResult::Approved),
        outcome("a", CallResult::Rejected),
        intent("a", None),
        outcome("a", CallResult::Ok),
    ])
    .await;
    let call = CallView::new(&ledger)
        .call("a")
        .expect("read")
        .expect("a call");
    assert_eq!(call.intent.as_ref().map(|r| r.seq), Some(1));
    assert_eq!(
        call.approval.as_ref().map(|r| r.record.result),
        Some(ApprovalResult::Rejected)
    );
    assert_eq!(
        call.outcome.as_ref().map(|r| r.record.result),
        Some(CallResult::Rejected)
    );
    let ignored: Vec<(u64, &str)> = call.ignored.iter().map(|i| (i.entry.seq, i.kind)).collect();
    assert_eq!(ignored, [(3, "approval"), (5, "intent"), (6, "outcome")]);
    assert!(matches!(call.state(0), CallState::Ended(o) if o.result == CallResult::Rejected));
    // The fold of the whole chain says the same.
    assert_eq!(fold(ledger.entries().expect("entries")), vec![call]);
}

#[tokio::test]
async fn one_call_is_read_from_its_own_entries_only() {
    let mut records = Vec::new();
    for n in 0..50 {
        records.push(intent(&format!("c{n}"), None));
        records.push(transition());
        records.push(outcome(&format!("c{n}"), CallResult::Ok));
    }
    let ledger = ledger(records).await;
    let before = ledger.rows_read();
    let call = CallView::new(&ledger)
        .call("c17")
        .expect("read")
        .expect("a call");
    assert_eq!(ledger.rows_read() - before, 2, "its intent and outcome");
    assert_eq!(call.intent.as_ref().map(|r| r.seq), Some(52));
    assert_eq!(CallView::new(&ledger).call("nope").expect("read"), None);
    assert_eq!(
        ledger.rows_read() - before,
        2,
        "an unknown call reads nothing"
    );
}

#[tokio::test]
async fn a_recorded_entry_is_the_entry_it_was_read_from() {
    let ledger = ledger(vec![transition(), intent("a", None)]).await;
    let call = CallView::new(&ledger).call("a").expect("read").expect("a");
    let intent = call.intent.expect("an intent");
    let entry = ledger.entry(2).expect("read").expect("entry 2");
    assert_eq!(intent.entry(), entry);
    assert_eq!(intent.committed(), entry.committed());
    crate::trust::check_in_ledger(&ledger, &intent.entry(), &crate::trust::Trust::default())
        .expect("it checks as the stored entry");
}

#[tokio::test]
async fn a_call_stands_where_its_last_entry_puts_it() {
    let state = |records: Vec<Record>, now: u64| async move {
        let ledger = ledger(records).await;
        CallView::new(&ledger).state("a", now).expect("state")
    };
    assert_eq!(state(vec![transition()], 0).await, CallState::Unknown);
    assert_eq!(
        state(vec![outcome("a", CallResult::Ok)], 0).await,
        CallState::Unknown,
        "an outcome without an intent is no call"
    );
    assert_eq!(state(vec![intent("a", None)], 0).await, CallState::InFlight);
    let CallState::Waiting(w) = state(vec![intent("a", Some(100))], 99).await else {
        panic!("waiting before its expiry");
    };
    assert_eq!(
        (w.expires_at_ms, w.intent_entry.seq, w.reasons.len()),
        (100, 1, 1)
    );
    assert!(matches!(
        state(vec![intent("a", Some(100))], 100).await,
        CallState::Expired(_)
    ));
    let decided = state(
        vec![
            intent("a", Some(100)),
            approval("a", ApprovalResult::Approved),
        ],
        200,
    )
    .await;
    assert!(matches!(decided, CallState::Decided(a) if a.result == ApprovalResult::Approved));
    let ended = state(
        vec![
            intent("a", Some(100)),
            approval("a", ApprovalResult::Rejected),
            outcome("a", CallResult::Rejected),
        ],
        0,
    )
    .await;
    assert!(matches!(ended, CallState::Ended(o) if o.result == CallResult::Rejected));
}
