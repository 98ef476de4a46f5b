//! What approval adds to the Cedar model: the `@approval` annotation on permits, the decision
//! `awaiting-approval`, and the generated `Action::"approve"`, declared only when the policies
//! use approval.

use std::str::FromStr;

use escepine_registry::diagnostic::SourceFile;

/// The decision of a call allowed only with approval, as intents record it.
pub const AWAITING_APPROVAL: &str = "awaiting-approval";

/// The annotation that makes a permit's calls wait for an approver.
pub const APPROVAL_ANNOTATION: &str = "approval";

/// The generated action an approver must be permitted (`Action::"approve"` on the tool).
pub const APPROVE_ACTION: &str = "approve";

/// Whether the policies use approval: a permit annotated `@approval`, or a policy whose action
/// scope names `Action::"approve"`. Files that do not parse are left to the policy loader,
/// which reports them.
pub(crate) fn uses_approval(files: &[SourceFile]) -> bool {
    use cedar_policy::ActionConstraint;
    let names_approve = |uid: &cedar_policy::EntityUid| {
        uid.id().unescaped() == APPROVE_ACTION && uid.type_name().to_string() == "Action"
    };
    files.iter().any(|f| {
        let Ok(set) = cedar_policy::PolicySet::from_str(f.text.as_str()) else {
            return false;
        };
        let uses = set.policies().any(|p| {
            p.annotation(APPROVAL_ANNOTATION).is_some()
                || match p.action_constraint() {
                    ActionConstraint::Any => false,
                    ActionConstraint::Eq(uid) => names_approve(&uid),
                    ActionConstraint::In(uids) => uids.iter().any(names_approve),
                }
        });
        uses
    })
}
