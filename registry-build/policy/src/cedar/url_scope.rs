//! Which tools a policy constrains through `context.url`.
//!
//! The per-URL shape rule ([`Rule::PerUrlShape`](escepine_registry::rule::Rule::PerUrlShape)) applies to a tool when some policy
//! whose action scope can match the tool's action (its own action, a group it joins, or any
//! action: [`super::slice::applies`]) reads `context.url` anywhere in its conditions. For such
//! a tool every URL of a payload must reach Cedar as `context.url`, one at a time, or the
//! policy would never see it.

use std::collections::HashSet;

use cedar_policy::{Entities, EntityUid, Policy, PolicySet};
use serde_json::Value;

use super::slice;

/// Whether the policy's conditions read `context.url` (`context.url…`, `context has url`,
/// `context["url"]`).
pub fn reads_context_url(policy: &Policy) -> bool {
    match policy.to_json() {
        Ok(est) => est.get("conditions").is_some_and(|c| mentions_url(c, 0)),
        // A policy Cedar cannot render is treated as reading everything.
        Err(_) => true,
    }
}

fn mentions_url(v: &Value, depth: usize) -> bool {
    if depth > 256 {
        return true;
    }
    match v {
        Value::Object(m) => {
            for op in [".", "has"] {
                if let Some(Value::Object(access)) = m.get(op) {
                    let on_context =
                        access.get("left") == Some(&serde_json::json!({"Var": "context"}));
                    if on_context && access.get("attr").and_then(Value::as_str) == Some("url") {
                        return true;
                    }
                }
            }
            m.values().any(|x| mentions_url(x, depth + 1))
        }
        Value::Array(a) => a.iter().any(|x| mentions_url(x, depth + 1)),
        _ => false,
    }
}

/// Whether some policy of `policies` that can apply to `action` reads `context.url`.
pub fn url_constrained(
    policies: &PolicySet,
    action: &EntityUid,
    matching: &HashSet<EntityUid>,
) -> bool {
    policies
        .policies()
        .any(|p| slice::applies(p, action, matching) && reads_context_url(p))
}

/// The action and every group it is in (transitively), from the schema's action entities
/// (`Schema::action_entities`).
pub fn matching_actions(action_entities: &Entities, action: &EntityUid) -> HashSet<EntityUid> {
    let mut matching: HashSet<EntityUid> = action_entities
        .ancestors(action)
        .map(|a| a.cloned().collect())
        .unwrap_or_default();
    matching.insert(action.clone());
    matching
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn finds_every_spelling_of_context_url() {
        let reads = |text: &str| {
            let set = PolicySet::from_str(text).expect("parses");
            let all = set.policies().all(reads_context_url);
            all
        };
        assert!(reads(
            r#"forbid(principal, action, resource) when { context has url };"#
        ));
        assert!(reads(
            r#"forbid(principal, action, resource) when { context.url.host == "a" };"#
        ));
        assert!(reads(
            r#"forbid(principal, action, resource) unless { context["url"]["scheme"] == "https" };"#
        ));
        assert!(!reads(
            r#"forbid(principal, action, resource) when { context.input.url == "x" };"#
        ));
        assert!(!reads(r#"permit(principal, action, resource);"#));
    }
}
