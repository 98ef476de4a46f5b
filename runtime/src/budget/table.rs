//! [`BudgetTable`]: the budgets compiled per tool at start-up; per call, the limits that apply.

use std::collections::HashMap;
use std::str::FromStr;

use cedar_policy::{Entities, EntityId, EntityTypeName, EntityUid};
use escepine_contract::Principal;
use escepine_registry::record::ToolRecord;

use super::file::{Budget, Budgets, Subject, Target};
use escepine_ledger::budget::BudgetLimit;

/// A budget whose target matches the tool, with its limit as the store checks it.
#[derive(Debug, Clone)]
struct Compiled {
    subject: Subject,
    limit: BudgetLimit,
}

/// Per tool id, the budgets whose target (tool, class, action group) matches it, in the
/// file's order.
#[derive(Debug, Default)]
pub(crate) struct BudgetTable {
    per_tool: HashMap<String, Vec<Compiled>>,
}

fn action_uid(action: &str) -> Option<EntityUid> {
    let ty = EntityTypeName::from_str("Action").ok()?;
    Some(EntityUid::from_type_name_and_id(ty, EntityId::new(action)))
}

fn targets(budget: &Budget, record: &ToolRecord, entities: &Entities) -> bool {
    match &budget.target {
        Target::Every => true,
        Target::Tool(id) => record.tool_id() == id,
        Target::Class(class) => record.side_effect_class() == *class,
        Target::ActionGroup(group) => action_uid(record.cedar_action())
            .is_some_and(|action| entities.is_ancestor_of(group, &action)),
    }
}

impl BudgetTable {
    /// Compile `budgets` for `records`; `entities` is the authorizer's store (the principals'
    /// groups and the schema's action hierarchy).
    pub(crate) fn new(budgets: &Budgets, records: &[ToolRecord], entities: &Entities) -> Self {
        let mut per_tool = HashMap::new();
        for record in records {
            let matching: Vec<Compiled> = budgets
                .budgets
                .iter()
                .filter(|b| targets(b, record, entities))
                .map(|b| Compiled {
                    subject: b.subject.clone(),
                    limit: BudgetLimit {
                        budget: b.id.clone(),
                        calls: b.calls,
                        window_ms: b.per_s.map(|s| s.saturating_mul(1000)),
                        concurrent: b.concurrent,
                    },
                })
                .collect();
            if !matching.is_empty() {
                per_tool.insert(record.tool_id().to_string(), matching);
            }
        }
        Self { per_tool }
    }

    /// The limits that apply to a call of `tool_id` by `principal` (empty: none); a group is
    /// looked up in `entities`, the authorizer's store.
    pub(crate) fn applicable(
        &self,
        entities: &Entities,
        principal: &Principal,
        tool_id: &str,
    ) -> Vec<BudgetLimit> {
        let Some(compiled) = self.per_tool.get(tool_id) else {
            return Vec::new();
        };
        let uid = EntityTypeName::from_str(&principal.entity_type)
            .ok()
            .map(|ty| EntityUid::from_type_name_and_id(ty, EntityId::new(&principal.id)));
        compiled
            .iter()
            .filter(|c| match &c.subject {
                Subject::Everyone => true,
                Subject::Principal(p) => p == principal,
                Subject::Group(group) => uid
                    .as_ref()
                    .is_some_and(|uid| group != uid && entities.is_ancestor_of(group, uid)),
            })
            .map(|c| c.limit.clone())
            .collect()
    }
}
