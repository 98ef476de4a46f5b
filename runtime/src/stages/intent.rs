//! Stage 4: record the intent — committed before anything can execute.

use serde_json::Value;

use super::context::CallContext;
use super::retry;
use crate::error::CallError;
use escepine_ledger::entry::{canonical_json, sha256_hex, Committed};
use escepine_ledger::record::{
    ApprovalRequest, CredentialExemption, Intent, Record, ShadowDecision, WorkspaceFileDigest,
};
use escepine_ledger::store::Ledger;
use escepine_policy::authorize::Decision;

/// The intent of the call (ids, run and step, tool, principal, the scrubbed payload and its
/// hash, the decision and its policies, the overlay, the origins its egress admits, the
/// deadline, the shadow set's decision where it disagrees, and the wait of a call allowed
/// only with approval), committed; a ledger that
/// cannot commit refuses the call before anything ran.
pub(crate) async fn record(
    cx: &CallContext<'_>,
    ledger: &dyn Ledger,
    payload: &Value,
    decision: &Decision,
    shadow: Option<ShadowDecision>,
    approval: Option<ApprovalRequest>,
) -> Result<Committed, CallError> {
    let intent = intent(cx, payload, decision, shadow, approval);
    tracing::Span::current().record("escepine.input.sha256", intent.payload_hash.as_str());
    Ok(crate::telemetry::ledger_append("intent", ledger.append(Record::Intent(intent))).await?)
}

fn intent(
    cx: &CallContext<'_>,
    payload: &Value,
    decision: &Decision,
    shadow: Option<ShadowDecision>,
    approval: Option<ApprovalRequest>,
) -> Intent {
    let record = &cx.tool.record;
    let mut recorded = payload.clone();
    cx.scrubber.value(&mut recorded);
    let canonical = canonical_json(&recorded);
    Intent {
        call_id: cx.ids.call_id.clone(),
        idempotency_key: cx.ids.idempotency_key.clone(),
        run_id: cx.opts.run_id.clone(),
        step: cx.opts.step.clone(),
        compensates: cx.opts.compensates.clone(),
        tool_id: record.tool_id().to_string(),
        tool_version: record.version().to_string(),
        class: record.side_effect_class(),
        principal: cx.principal.to_string(),
        attestation: cx.opts.attestation.clone(),
        payload: recorded,
        payload_hash: sha256_hex(canonical.as_bytes()),
        decision: crate::decision::recorded(decision),
        policy_ids: decision.policy_ids().to_vec(),
        reasons: decision
            .reasons()
            .iter()
            .map(|r| cx.scrubber.text(r))
            .collect(),
        overlay: cx.tool.overlay.clone(),
        egress_origins: cx.egress.origins.iter().map(ToString::to_string).collect(),
        deadline_ms: Some(retry::deadline(record).as_millis() as u64),
        credential_exemptions: record
            .credential_exemptions()
            .into_iter()
            .map(|e| CredentialExemption {
                pointer: e.pointer,
                reason: e.reason,
            })
            .collect(),
        files: cx
            .opts
            .files
            .iter()
            .map(|(name, file)| WorkspaceFileDigest {
                name: name.to_owned(),
                bytes: file.len(),
                sha256: sha256_hex(file.bytes()),
            })
            .collect(),
        shadow,
        approval,
        flow: Some(cx.flow.clone()),
        flow_state: Some(cx.flow_state.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::stages::context::CallOptions;
    use crate::stages::testing::{alice, builder, context, loaded, Fixed};
    use escepine_ledger::memory::MemoryLedger;

    #[tokio::test]
    async fn the_intent_is_committed_scrubbed_with_the_decision_and_deadline() {
        let schema = json!({
            "type": "object",
            "properties": { "q": { "type": "string" } },
            "required": ["q"],
            "additionalProperties": false
        });
        let rec = builder("t", schema.clone(), schema)
            .secrets(["KEY"])
            .timeout_ms(100)
            .registered();
        let tool = loaded(rec);
        let who = alice();
        let opts = CallOptions {
            run_id: Some("r".into()),
            step: Some("s".into()),
            ..CallOptions::default()
        };
        let cx = context(&tool, &who, &opts, &Fixed(vec![("KEY", "s3cr3t")]));
        let ledger = MemoryLedger::new();
        let decision = Decision::default();
        let shadow = ShadowDecision {
            decision: escepine_ledger::record::Decision::Allow,
            policy_ids: vec!["candidate".into()],
        };
        let entry = record(
            &cx,
            &ledger,
            &json!({"q": "a s3cr3t b"}),
            &decision,
            Some(shadow.clone()),
            None,
        )
        .await
        .expect("committed");
        assert_eq!(entry.seq, 1);
        let entries = ledger.entries().expect("readable");
        let Record::Intent(i) = &entries[0].record else {
            panic!("an intent");
        };
        assert_eq!((i.call_id.as_str(), i.idempotency_key.as_str()), ("c", "k"));
        assert_eq!(
            (i.run_id.as_deref(), i.step.as_deref()),
            (Some("r"), Some("s"))
        );
        assert_eq!(i.decision, escepine_ledger::record::Decision::Deny);
        assert!(!i.payload.to_string().contains("s3cr3t"), "{}", i.payload);
        assert_eq!(
            i.payload_hash,
            sha256_hex(canonical_json(&i.payload).as_bytes())
        );
        assert_eq!(i.deadline_ms, Some(100));
        assert_eq!(i.principal, "Agent::\"alice\"");
        assert_eq!(i.shadow, Some(shadow));
    }
}
