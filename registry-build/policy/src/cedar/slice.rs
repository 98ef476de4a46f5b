//! Slicing the policy set per action, once at start-up.
//!
//! Cedar checks a policy's scope before its condition, so a policy whose action scope can
//! never match an action contributes nothing to that action's decisions (no satisfaction, no
//! error). A request for a tool's action can match exactly the policies whose action scope is
//! `action` (any), `action == A` with `A` the action itself, or `action in [..]` naming the
//! action or one of the groups it is in (transitively). The slice keeps those and drops the
//! rest; `runtime/tests/authorize_slicing.rs` proves that the sliced and unsliced sets decide alike.

use std::collections::HashSet;

use cedar_policy::{ActionConstraint, EntityUid, Policy, PolicySet};

/// Whether a policy's action scope can match a request for `action`, whose groups
/// (transitively) together with the action itself are `matching`.
pub fn applies(policy: &Policy, action: &EntityUid, matching: &HashSet<EntityUid>) -> bool {
    match policy.action_constraint() {
        ActionConstraint::Any => true,
        ActionConstraint::Eq(a) => a == *action,
        ActionConstraint::In(list) => list.iter().any(|a| matching.contains(a)),
    }
}

/// The policies of `all` whose action scope can match a request for `action`; `matching` is
/// the action and every group it is in.
///
/// Template-linked policies are linked again from their template; unlinked templates never
/// decide anything and are left out.
///
/// # Errors
/// A message when a policy cannot join the slice (it could in the whole set, so this is not
/// expected).
pub fn slice(
    all: &PolicySet,
    action: &EntityUid,
    matching: &HashSet<EntityUid>,
) -> Result<PolicySet, String> {
    let mut out = PolicySet::new();
    for policy in all.policies().filter(|p| applies(p, action, matching)) {
        if policy.is_static() {
            out.add(policy.clone())
                .map_err(|e| format!("policy `{}`: {e}", policy.id()))?;
            continue;
        }
        let (Some(template_id), Some(links)) = (policy.template_id(), policy.template_links())
        else {
            return Err(format!(
                "policy `{}` is neither static nor linked",
                policy.id()
            ));
        };
        if out.template(template_id).is_none() {
            let template = all
                .template(template_id)
                .ok_or_else(|| format!("the template of policy `{}` is missing", policy.id()))?;
            out.add_template(template.clone())
                .map_err(|e| format!("template `{template_id}`: {e}"))?;
        }
        out.link(template_id.clone(), policy.id().clone(), links)
            .map_err(|e| format!("policy `{}`: {e}", policy.id()))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn uid(s: &str) -> EntityUid {
        EntityUid::from_str(s).expect("uid")
    }

    #[test]
    fn keeps_the_scopes_that_can_match() {
        let text = r#"
            @id("any") permit(principal, action, resource);
            @id("eq") permit(principal, action == Action::"a", resource);
            @id("eq-other") permit(principal, action == Action::"b", resource);
            @id("in-group") forbid(principal, action in Action::"g", resource);
            @id("in-list") forbid(principal, action in [Action::"x", Action::"a"], resource);
            @id("in-other") forbid(principal, action in [Action::"h"], resource);
            @id("eq-group") forbid(principal, action == Action::"g", resource);
            @id("tpl") permit(principal == ?principal, action == Action::"a", resource);
        "#;
        let parsed = PolicySet::from_str(text).expect("parses");
        // Name them by their @id, as the binding does.
        let mut all = PolicySet::new();
        for p in parsed.policies() {
            let id = p.annotation("id").expect("id").to_string();
            all.add(p.new_id(cedar_policy::PolicyId::new(id)))
                .expect("adds");
        }
        for t in parsed.templates() {
            all.add_template(t.new_id(cedar_policy::PolicyId::new("tpl")))
                .expect("adds");
        }
        all.link(
            cedar_policy::PolicyId::new("tpl"),
            cedar_policy::PolicyId::new("tpl-alice"),
            [(cedar_policy::SlotId::principal(), uid(r#"Agent::"alice""#))].into(),
        )
        .expect("links");
        let matching: HashSet<EntityUid> = [uid(r#"Action::"a""#), uid(r#"Action::"g""#)].into();
        let sliced = slice(&all, &uid(r#"Action::"a""#), &matching).expect("slices");
        let mut ids: Vec<String> = sliced.policies().map(|p| p.id().to_string()).collect();
        ids.sort();
        assert_eq!(ids, ["any", "eq", "in-group", "in-list", "tpl-alice"]);
    }
}
