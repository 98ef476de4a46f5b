//! Stage 3: Cedar authorization, and the admission after the intent that lets an allowed call
//! on and ends a denied one.

use escepine_contract::EgressGrant;
use serde_json::Value;

use super::context::CallContext;
use super::ended::Ended;
use crate::report::CallOutcome;
use escepine_ledger::record::ShadowDecision;
use escepine_policy::authorize::Authorizer;
use escepine_policy::authorize::Decision;

/// The decision on the gated payload (any evaluation error is a DENY). It is traced
/// ([`trace`]) and, by the next stage, recorded in the intent.
pub(crate) fn authorize(
    cx: &CallContext<'_>,
    authorizer: &Authorizer,
    payload: &Value,
) -> Decision {
    let decision = authorizer.authorize_in(
        cx.principal,
        cx.parents(),
        cx.tool.record.tool_id(),
        payload,
        &cx.flow_state,
    );
    decision
}

/// `decision` and its determining policies, in `span` (the call's and its `authorize` stage's).
pub(crate) fn trace(span: &tracing::Span, decision: &Decision) {
    span.record("escepine.decision", decision.as_str());
    span.record(
        "escepine.policy_ids",
        decision.policy_ids().join(",").as_str(),
    );
}

/// The shadow set's decision on the very same request (principal, tool, gated payload,
/// entities), kept only where it disagrees with the enforced `decision`. It is never
/// enforced: nothing downstream reads it but the intent. A candidate that fails to evaluate
/// decides deny (as any Cedar evaluation error does), so the failure is recorded as a
/// disagreement with an allowed call, naming the failing policies.
pub(crate) fn shadow(
    cx: &CallContext<'_>,
    shadow: Option<&Authorizer>,
    payload: &Value,
    decision: &Decision,
) -> Option<ShadowDecision> {
    let candidate = shadow?.authorize_in(
        cx.principal,
        cx.parents(),
        cx.tool.record.tool_id(),
        payload,
        &cx.flow_state,
    );
    disagreement(decision, &candidate)
}

/// The candidate's decision when it differs from the enforced one (allow against deny).
fn disagreement(enforced: &Decision, candidate: &Decision) -> Option<ShadowDecision> {
    (enforced.allowed() != candidate.allowed()).then(|| ShadowDecision {
        decision: crate::decision::recorded(candidate),
        policy_ids: candidate.policy_ids().to_vec(),
    })
}

/// What the call's sandbox may reach, fixed here, before the intent and any execution: the
/// tool's grant (profile and overlay entries, public addresses) and, for a profile with
/// `authorized-urls`, the origins of the URLs the decision authorized — from the very URL facts
/// Cedar saw. A denied call's grant has no origins (it never executes).
pub(crate) fn egress(cx: &CallContext<'_>, decision: &Decision) -> EgressGrant {
    let grant = cx.tool.egress.clone();
    if cx.tool.record.sandbox_profile().authorized_urls && decision.allowed() {
        grant.with_origins(decision.origins().iter().cloned())
    } else {
        grant
    }
}

/// After the intent: an allowed call goes on; a denied one ends, with its policies and its
/// reasons (scrubbed), never retried.
pub(crate) fn admit(cx: &CallContext<'_>, decision: &Decision) -> Result<(), Ended> {
    if decision.allowed() {
        return Ok(());
    }
    Err(Ended {
        outcome: CallOutcome::Denied {
            policy_ids: decision.policy_ids().to_vec(),
            reasons: decision
                .reasons()
                .iter()
                .map(|r| cx.scrubber.text(r))
                .collect(),
        },
        output_hash: None,
        error: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::stages::context::CallOptions;
    use crate::stages::testing::{alice, builder, context, loaded, n_schema, Fixed};
    use escepine_contract::Principal;

    fn authorizer(records: &[escepine_registry::record::ToolRecord], policies: &str) -> Authorizer {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("p.cedar"), policies).expect("policies written");
        let binding = escepine_policy::cedar::bind(records, Some(dir.path()))
            .unwrap_or_else(|d| panic!("policies bind: {d}"));
        Authorizer::new(&binding, records, None).expect("authorizer")
    }

    #[test]
    fn an_allowed_call_is_admitted_and_a_denied_one_ends_scrubbed() {
        let rec = builder("t", n_schema(), n_schema())
            .secrets(["KEY"])
            .registered();
        let a = authorizer(
            std::slice::from_ref(&rec),
            "@id(\"alice-only\") permit(principal == Agent::\"alice\", action, resource);\n\
             @id(\"no-big\") forbid(principal, action, resource) when { context.input.n > 5 };",
        );
        let tool = loaded(rec);
        let opts = CallOptions::default();
        let who = alice();
        let secrets = Fixed(vec![("KEY", "s3cr3t")]);
        let cx = context(&tool, &who, &opts, &secrets);

        let d = authorize(&cx, &a, &json!({"n": 1}));
        assert!(d.allowed(), "{d:?}");
        assert_eq!(d.policy_ids(), ["alice-only"]);
        assert_eq!(admit(&cx, &d), Ok(()));

        let d = authorize(&cx, &a, &json!({"n": 6}));
        assert_eq!(
            (d.allowed(), d.policy_ids()),
            (false, &["no-big".to_string()][..])
        );
        let ended = admit(&cx, &d).expect_err("denied");
        assert!(
            matches!(&ended.outcome, CallOutcome::Denied { policy_ids, .. } if policy_ids == &["no-big"])
        );

        let bob = Principal::agent("bob");
        let cx = context(&tool, &bob, &opts, &secrets);
        let d = authorize(&cx, &a, &json!({"n": 1}));
        assert!(
            !d.allowed() && d.policy_ids().is_empty(),
            "a default deny: {d:?}"
        );
        assert!(admit(&cx, &d).is_err());
    }

    #[test]
    fn the_shadow_set_is_kept_only_where_it_disagrees() {
        let rec = builder("t", n_schema(), n_schema()).registered();
        let records = std::slice::from_ref(&rec);
        let enforced = authorizer(records, "@id(\"all\") permit(principal, action, resource);");
        let candidate = authorizer(
            records,
            "@id(\"all\") permit(principal, action, resource);\n\
             @id(\"no-big\") forbid(principal, action, resource) when { context.input.n > 5 };",
        );
        let tool = loaded(rec.clone());
        let (who, opts) = (alice(), CallOptions::default());
        let cx = context(&tool, &who, &opts, &Fixed(Vec::new()));

        let small = json!({"n": 1});
        let d = authorize(&cx, &enforced, &small);
        assert_eq!(shadow(&cx, Some(&candidate), &small, &d), None);
        assert_eq!(shadow(&cx, None, &small, &d), None);

        let big = json!({"n": 6});
        let d = authorize(&cx, &enforced, &big);
        assert!(d.allowed(), "the enforced set still allows: {d:?}");
        assert_eq!(
            shadow(&cx, Some(&candidate), &big, &d),
            Some(ShadowDecision {
                decision: escepine_ledger::record::Decision::Deny,
                policy_ids: vec!["no-big".into()]
            })
        );
        // A candidate policy that fails to evaluate (a Long overflow) is recorded, not enforced.
        let failing = authorizer(
            records,
            "@id(\"all\") permit(principal, action, resource);\n\
             @id(\"overflows\") forbid(principal, action, resource) when { context.input.n * 9223372036854775807 > 0 };",
        );
        assert_eq!(
            shadow(
                &cx,
                Some(&failing),
                &small,
                &authorize(&cx, &enforced, &small)
            ),
            Some(ShadowDecision {
                decision: escepine_ledger::record::Decision::Deny,
                policy_ids: vec!["overflows".into()]
            })
        );
        // The other way round: the candidate allows what the enforced set denies.
        let d = authorize(&cx, &candidate, &big);
        assert_eq!(
            shadow(&cx, Some(&enforced), &big, &d),
            Some(ShadowDecision {
                decision: escepine_ledger::record::Decision::Allow,
                policy_ids: vec!["all".into()]
            })
        );
    }

    #[test]
    fn denial_reasons_are_scrubbed_of_the_calls_secrets() {
        let rec = builder("t", n_schema(), n_schema())
            .secrets(["KEY"])
            .registered();
        let tool = loaded(rec);
        let (who, opts) = (alice(), CallOptions::default());
        let cx = context(&tool, &who, &opts, &Fixed(vec![("KEY", "s3cr3t")]));
        // A decision whose reason quotes the secret: the call of a tool named by it.
        let a = authorizer(&[], "permit(principal, action, resource);");
        let d = a.authorize(&who, "s3cr3t", &json!({}));
        let ended = admit(&cx, &d).expect_err("unknown tool denied");
        let CallOutcome::Denied { reasons, .. } = ended.outcome else {
            panic!("denied");
        };
        assert!(
            !reasons.is_empty() && reasons.iter().all(|r| !r.contains("s3cr3t")),
            "{reasons:?}"
        );
    }
}
