//! What-if replay: every recorded request re-authorized against another policy set.
//!
//! [`replay`] takes the intents of a ledger (read through
//! [`LedgerLocation::verified_entries`](escepine_ledger::location::LedgerLocation::verified_entries),
//! which checks the hash chain first) and an [`Authorizer`] built for the candidate policies, and asks it
//! again about each recorded request — the intent's principal, tool and canonical payload,
//! through the very authorization a live call takes (input types, URL facts, per-element
//! requests). It reports the requests whose decision flips ([`Flip`]), and the intents it
//! could not replay ([`Skipped`]: a tool the records no longer hold, a principal that does not
//! parse).
//!
//! The payload replayed is the one recorded: secret values in it were scrubbed before it was
//! written, so a policy that reads a field holding a secret sees the redaction marker.

use std::str::FromStr;

use escepine_contract::Principal;

use escepine_ledger::entry::{canonical_json, Entry};
use escepine_ledger::record::{Intent, Record};
use escepine_policy::authorize::Authorizer;
use escepine_policy::authorize::Decision;

/// One recorded request whose decision differs under the candidate policies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flip {
    /// The intent's entry.
    pub seq: u64,
    /// The call.
    pub call_id: String,
    /// The principal, as recorded (`Agent::"id"`).
    pub principal: String,
    /// The tool.
    pub tool_id: String,
    /// The recorded payload, as canonical JSON.
    pub payload: String,
    /// The recorded (enforced) decision: `allow`, `deny` or `awaiting-approval`.
    pub old_decision: String,
    /// The recorded determining policies.
    pub old_policy_ids: Vec<String>,
    /// The candidate set's decision: `allow`, `deny` or `awaiting-approval`.
    pub new_decision: String,
    /// The candidate set's determining policies.
    pub new_policy_ids: Vec<String>,
}

impl Flip {
    /// Whether the candidate set allows more than was allowed: what was denied now runs (with
    /// or without approval), or what waited for approval now runs without it.
    pub fn widens(&self) -> bool {
        let rank = |d: &str| match d {
            "allow" => 2,
            escepine_policy::authorize::AWAITING_APPROVAL => 1,
            _ => 0,
        };
        rank(&self.new_decision) > rank(&self.old_decision)
    }
}

/// Why an intent was not replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkipReason {
    /// The records hold no tool of that id.
    #[error("tool `{0}` is not in the records")]
    UnknownTool(String),
    /// The recorded principal is not an entity uid.
    #[error("principal `{principal}` does not parse: {message}")]
    Principal {
        /// The recorded principal.
        principal: String,
        /// The parser's message.
        message: String,
    },
}

/// An intent that was not replayed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The intent's entry.
    pub seq: u64,
    /// The call.
    pub call_id: String,
    /// Why.
    pub reason: SkipReason,
}

/// The result of a replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// How many recorded requests were re-authorized.
    pub replayed: usize,
    /// The requests whose decision flipped, in chain order.
    pub flips: Vec<Flip>,
    /// The intents that could not be replayed, in chain order.
    pub skipped: Vec<Skipped>,
}

impl ReplayReport {
    /// How many flips widen (a deny became an allow).
    pub fn widened(&self) -> usize {
        self.flips.iter().filter(|f| f.widens()).count()
    }
}

/// Re-authorize every intent of `entries` with `candidate`, reporting the flips.
pub fn replay<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
    candidate: &Authorizer,
) -> ReplayReport {
    let mut report = ReplayReport::default();
    for entry in entries {
        let Record::Intent(intent) = &entry.record else {
            continue;
        };
        match reauthorize(intent, candidate) {
            Err(reason) => report.skipped.push(Skipped {
                seq: entry.seq,
                call_id: intent.call_id.clone(),
                reason,
            }),
            Ok(decision) => {
                report.replayed += 1;
                if crate::decision::recorded(&decision) != intent.decision {
                    report.flips.push(Flip {
                        seq: entry.seq,
                        call_id: intent.call_id.clone(),
                        principal: intent.principal.clone(),
                        tool_id: intent.tool_id.clone(),
                        payload: canonical_json(&intent.payload),
                        old_decision: intent.decision.as_str().to_string(),
                        old_policy_ids: intent.policy_ids.clone(),
                        new_decision: decision.as_str().to_string(),
                        new_policy_ids: decision.policy_ids().to_vec(),
                    });
                }
            }
        }
    }
    report
}

/// The candidate's decision on one recorded request.
fn reauthorize(intent: &Intent, candidate: &Authorizer) -> Result<Decision, SkipReason> {
    if candidate.policy_count(&intent.tool_id).is_none() {
        return Err(SkipReason::UnknownTool(intent.tool_id.clone()));
    }
    let principal = Principal::from_str(&intent.principal).map_err(|e| SkipReason::Principal {
        principal: intent.principal.clone(),
        message: e.to_string(),
    })?;
    // The request as it was made: the principal in the parents its token named, and the state
    // of its flow the intent recorded (an intent written before flows had none: an empty flow).
    let parents = intent
        .attestation
        .as_ref()
        .map_or(&[][..], |a| a.parents.as_slice());
    let flow = intent.flow_state.clone().unwrap_or_default();
    Ok(candidate.authorize_in(&principal, parents, &intent.tool_id, &intent.payload, &flow))
}

#[cfg(test)]
mod tests {
    use escepine_contract::SideEffectClass;
    use serde_json::json;

    use super::*;
    use escepine_ledger::entry::GENESIS_PREV;
    use escepine_ledger::record::{Decision, Transition};

    fn authorizer(policies: &str) -> Authorizer {
        let dir = tempfile::tempdir().expect("temp dir");
        let records = dir.path().join("records");
        let pdir = dir.path().join("policies");
        std::fs::create_dir_all(&records).expect("mkdir");
        std::fs::create_dir_all(&pdir).expect("mkdir");
        std::fs::write(
            records.join("fetch.json"),
            json!({
                "tool_id": "fetch", "version": "1.0.0", "description": "Fetches a page.",
                "input_schema": {"type": "object", "additionalProperties": false, "required": ["url"],
                    "properties": {"url": {"type": "string", "format": "uri"}}},
                "output_schema": {"type": "object", "additionalProperties": false, "properties": {}},
                "side_effect_class": "read-only", "accepts_credentials": false, "timeout_ms": 1000,
                "retry": {"max_attempts": 1, "backoff_ms": 0}, "on_failure": ["halt"],
                "endpoint": {"transport": "stdio-json", "command": "/bin/cat"},
                "auth": {"secrets": []},
                "sandbox_profile": {"egress": [], "filesystem": "workspace"}
            })
            .to_string(),
        )
        .expect("record written");
        std::fs::write(pdir.join("p.cedar"), policies).expect("policies written");
        let reg = escepine_policy::load(
            &escepine_registry::registry::Sources::new()
                .records(&records)
                .policies(&pdir),
        )
        .unwrap_or_else(|d| panic!("{d}"));
        Authorizer::new(reg.cedar(), reg.records(), None).expect("authorizer")
    }

    fn intent(n: u64, tool: &str, url: &str, decision: Decision, ids: &[&str]) -> Entry {
        let record = Record::Intent(Intent {
            call_id: format!("call-{n}"),
            idempotency_key: format!("key-{n}"),
            run_id: None,
            step: None,
            compensates: None,
            tool_id: tool.into(),
            tool_version: "1.0.0".into(),
            class: SideEffectClass::ReadOnly,
            principal: r#"Agent::"alice""#.into(),
            payload: json!({"url": url}),
            payload_hash: String::new(),
            decision,
            policy_ids: ids.iter().map(|s| s.to_string()).collect(),
            reasons: vec![],
            overlay: vec![],
            egress_origins: vec![],
            deadline_ms: None,
            credential_exemptions: vec![],
            files: Vec::new(),
            attestation: None,
            shadow: None,
            approval: None,
            flow: None,
            flow_state: None,
        });
        Entry::seal(n, GENESIS_PREV.into(), 0, record).expect("sealed")
    }

    #[test]
    fn only_flipped_requests_are_reported_and_widenings_counted() {
        let entries = [
            intent(1, "fetch", "https://a.example/", Decision::Allow, &["all"]),
            intent(2, "fetch", "https://b.example/x", Decision::Allow, &["all"]),
            intent(
                3,
                "fetch",
                "https://www.linkedin.com/in/x",
                Decision::Deny,
                &["no-linkedin"],
            ),
            intent(4, "gone", "https://a.example/", Decision::Allow, &["all"]),
            Entry::seal(
                5,
                GENESIS_PREV.into(),
                0,
                Record::Transition(Transition {
                    run_id: "r".into(),
                    event: "run_started".into(),
                    state: None,
                    data: serde_json::Value::Null,
                }),
            )
            .expect("sealed"),
        ];
        // The candidate forbids b.example and no longer forbids LinkedIn.
        let candidate = authorizer(
            "@id(\"all\") permit(principal, action, resource);\n\
             @id(\"no-b\") forbid(principal, action, resource) when { context.url.host == \"b.example\" };",
        );
        let report = replay(&entries, &candidate);
        assert_eq!(report.replayed, 3);
        assert_eq!(
            report.skipped,
            [Skipped {
                seq: 4,
                call_id: "call-4".into(),
                reason: SkipReason::UnknownTool("gone".into())
            }]
        );
        let flips: Vec<(&str, &str, &str, &[String])> = report
            .flips
            .iter()
            .map(|f| {
                (
                    f.call_id.as_str(),
                    f.old_decision.as_str(),
                    f.new_decision.as_str(),
                    &f.new_policy_ids[..],
                )
            })
            .collect();
        assert_eq!(
            flips,
            [
                ("call-2", "allow", "deny", &["no-b".to_string()][..]),
                ("call-3", "deny", "allow", &["all".to_string()][..]),
            ]
        );
        assert_eq!(report.flips[0].payload, r#"{"url":"https://b.example/x"}"#);
        assert_eq!(report.flips[1].old_policy_ids, ["no-linkedin"]);
        assert_eq!(report.widened(), 1);
        assert!(!report.flips[0].widens() && report.flips[1].widens());
    }
}
