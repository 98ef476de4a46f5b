//! A Cedar decision as the ledger records it.

use escepine_ledger::record;
use escepine_policy::authorize::Decision;

/// `decision` as an intent records it: allowed, allowed with an approver's approval, or denied.
pub fn recorded(decision: &Decision) -> record::Decision {
    match (decision.allowed(), decision.needs_approval()) {
        (true, false) => record::Decision::Allow,
        (true, true) => record::Decision::AwaitingApproval,
        (false, _) => record::Decision::Deny,
    }
}
