//! Saga compensation: undo a run's completed steps in reverse order, each by its side-effect
//! class.
//!
//! - compensatable: the declared inverse runs through the same governed path (authorized,
//!   recorded, `CallOptions::compensates` naming the original call), its payload built from the
//!   record's compensation map over the step's `{"input": …, "output": …}`;
//! - supersede: the earlier result is recorded as superseded (its outcome entry named); nothing
//!   is removed;
//! - read-only: nothing to undo.

use escepine_contract::SideEffectClass;
use escepine_policy::BoundRegistry;
use escepine_registry::record::CompensationSpec;
use serde_json::{json, Map, Value};

use super::events::{PlanItem, Undo};
use super::journal::DoneStep;

/// The compensation plan: the completed steps, most recent first, each with how it is undone.
pub(crate) fn plan(completed: &[DoneStep], registry: &BoundRegistry) -> Vec<PlanItem> {
    completed
        .iter()
        .rev()
        .map(|step| {
            let undo = match step.class {
                SideEffectClass::ReadOnly => Undo::Nothing,
                SideEffectClass::Supersede => Undo::Supersede,
                SideEffectClass::Compensatable => {
                    // The inverse the registry declares now; an engine that cannot find one
                    // records the failure when it gets to this item.
                    let tool = registry
                        .get(&step.tool)
                        .and_then(|r| r.compensation())
                        .map(|c| c.tool.clone())
                        .unwrap_or_default();
                    Undo::Inverse { inverse: tool }
                }
            };
            PlanItem {
                state: step.state.clone(),
                call_id: step.call_id.clone(),
                tool: step.tool.clone(),
                class: step.class,
                undo,
            }
        })
        .collect()
}

/// The inverse's payload: each mapped field taken at its pointer into
/// `{"input": <step input>, "output": <step output>}`.
///
/// # Errors
/// A pointer that does not resolve (the message names it).
pub(crate) fn inverse_payload(spec: &CompensationSpec, step: &DoneStep) -> Result<Value, String> {
    let source = json!({ "input": step.input, "output": step.output });
    let mut payload = Map::new();
    for (field, pointer) in &spec.map {
        let value = source.pointer(pointer).ok_or_else(|| {
            format!(
                "compensation map: `{field}` ← `{pointer}` does not resolve in the step's input and output"
            )
        })?;
        payload.insert(field.clone(), value.clone());
    }
    Ok(Value::Object(payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_built_from_pointers_into_input_and_output() {
        let spec = CompensationSpec {
            tool: "undo".into(),
            map: vec![
                ("key".into(), "/input/key".into()),
                ("id".into(), "/output/id".into()),
            ],
        };
        let step = DoneStep {
            state: "w".into(),
            call_id: "c".into(),
            tool: "t".into(),
            class: SideEffectClass::Compensatable,
            input: json!({"key": "k", "other": 1}),
            output: json!({"id": 7}),
            outcome_hash: "h".into(),
        };
        assert_eq!(
            inverse_payload(&spec, &step).unwrap(),
            json!({"key": "k", "id": 7})
        );
        let bad = CompensationSpec {
            tool: "undo".into(),
            map: vec![("id".into(), "/output/missing".into())],
        };
        assert!(inverse_payload(&bad, &step)
            .unwrap_err()
            .contains("/output/missing"));
    }
}
