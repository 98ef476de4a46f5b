//! What flows add to the Cedar model: `context.flow` on every tool's action (the state of the
//! call's flow: `labels`, `origins`, `tools` as sets of strings, `calls` as a `Long`), and the
//! generated `Action::"declassify"` on `Flow::"<id>"`, declared only when the policies name it.

use std::str::FromStr;

use cedar_policy::RestrictedExpression;
use escepine_contract::FlowState;
use escepine_registry::diagnostic::SourceFile;

use crate::cedar::types::{Attribute, CedarType};

/// The context attribute holding the flow's state.
pub const FLOW_ATTRIBUTE: &str = "flow";

/// The generated action a principal must be permitted to remove a label from a flow.
pub const DECLASSIFY_ACTION: &str = "declassify";

/// The entity type of flows (the resource of `Action::"declassify"`).
pub const FLOW_TYPE: &str = "Flow";

/// The Cedar type of `context.flow`.
pub fn flow_type() -> CedarType {
    let strings = || CedarType::Set(Box::new(CedarType::String));
    CedarType::Record(vec![
        Attribute {
            name: "calls".into(),
            required: true,
            ty: CedarType::Long,
        },
        Attribute {
            name: "labels".into(),
            required: true,
            ty: strings(),
        },
        Attribute {
            name: "origins".into(),
            required: true,
            ty: strings(),
        },
        Attribute {
            name: "tools".into(),
            required: true,
            ty: strings(),
        },
    ])
}

/// A flow's state as the value of `context.flow`.
pub fn to_expression(state: &FlowState) -> RestrictedExpression {
    let strings = |items: &mut dyn Iterator<Item = &String>| {
        RestrictedExpression::new_set(items.map(|s| RestrictedExpression::new_string(s.clone())))
    };
    let calls = i64::try_from(state.calls).unwrap_or(i64::MAX);
    // The keys are distinct, so the record always builds; the fallback keeps this total.
    RestrictedExpression::new_record([
        ("calls".to_string(), RestrictedExpression::new_long(calls)),
        ("labels".to_string(), strings(&mut state.labels.iter())),
        ("origins".to_string(), strings(&mut state.origins.iter())),
        ("tools".to_string(), strings(&mut state.tools.keys())),
    ])
    .unwrap_or_else(|_| RestrictedExpression::new_bool(false))
}

/// Whether a policy names `Action::"declassify"` in its action scope. Files that do not parse
/// are left to the policy loader, which reports them.
pub(crate) fn uses_declassify(files: &[SourceFile]) -> bool {
    use cedar_policy::ActionConstraint;
    let names = |uid: &cedar_policy::EntityUid| {
        uid.id().unescaped() == DECLASSIFY_ACTION && uid.type_name().to_string() == "Action"
    };
    files.iter().any(|f| {
        let Ok(set) = cedar_policy::PolicySet::from_str(f.text.as_str()) else {
            return false;
        };
        let uses = set.policies().any(|p| match p.action_constraint() {
            ActionConstraint::Any => false,
            ActionConstraint::Eq(uid) => names(&uid),
            ActionConstraint::In(uids) => uids.iter().any(names),
        });
        uses
    })
}
