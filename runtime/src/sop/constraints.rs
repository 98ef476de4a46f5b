//! An SOP compiled once for the engine: call constraints and decision branches as schema gates,
//! every state and tool checked against the runtime's registry.

use std::collections::HashMap;

use escepine_contract::SideEffectClass;
use escepine_policy::BoundRegistry;
use serde_json::Value;

use super::error::SopRunError;
use escepine_policy::gate::SchemaGate;
use escepine_registry::sop::DecisionState;
use escepine_registry::sop::Sop;
use escepine_registry::sop::State;

/// A proposal that violates a step's SOP constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConstraintViolation {
    /// The constraint's pointer into the payload.
    pub(crate) pointer: String,
    /// What the value at the pointer violates.
    pub(crate) message: String,
}

impl std::fmt::Display for ConstraintViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "constraint {}: {}", self.pointer, self.message)
    }
}

/// The compiled SOP: per execution state its constraints, per decision state its branches.
pub(crate) struct CompiledSop {
    constraints: HashMap<String, Vec<(String, SchemaGate)>>,
    branches: HashMap<String, Vec<SchemaGate>>,
}

impl CompiledSop {
    /// Check `sop` against `registry` (defence in depth: a loaded SOP passed these rules at
    /// build time, a hand-built one did not) and compile its schemas.
    pub(crate) fn compile(sop: &Sop, registry: &BoundRegistry) -> Result<Self, SopRunError> {
        let invalid = |state: &str, why: String| SopRunError::InvalidSop {
            sop: sop.sop_id.clone(),
            state: state.to_string(),
            why,
        };
        let defined = |state: &str, target: &str, what: &str| {
            if sop.states.contains_key(target) {
                Ok(())
            } else {
                Err(invalid(
                    state,
                    format!("{what} names the undefined state `{target}`"),
                ))
            }
        };
        defined(&sop.start, &sop.start, "`start`")?;
        let mut constraints = HashMap::new();
        let mut branches = HashMap::new();
        for (name, state) in &sop.states {
            match state {
                State::Terminal => {}
                State::Execution(e) => {
                    defined(name, &e.next, "`next`")?;
                    let record = registry.get(&e.tool).ok_or_else(|| {
                        invalid(name, format!("the tool `{}` is not registered", e.tool))
                    })?;
                    if !record.on_failure().contains(&e.on_failure) {
                        return Err(invalid(
                            name,
                            format!(
                                "`on_failure` is `{}`, which the tool `{}` does not allow",
                                e.on_failure.as_str(),
                                e.tool
                            ),
                        ));
                    }
                    if record.side_effect_class() == SideEffectClass::Compensatable
                        && record.compensation().is_none()
                    {
                        return Err(invalid(
                            name,
                            format!("the compensatable tool `{}` declares no inverse", e.tool),
                        ));
                    }
                    let mut gates = Vec::new();
                    for (pointer, schema) in &e.constraints {
                        let gate = SchemaGate::new(schema).map_err(|why| {
                            invalid(
                                name,
                                format!("constraint {pointer} does not compile: {why}"),
                            )
                        })?;
                        gates.push((pointer.clone(), gate));
                    }
                    constraints.insert(name.clone(), gates);
                }
                State::Decision(d) => {
                    defined(name, &d.otherwise, "`otherwise`")?;
                    let mut gates = Vec::new();
                    for (i, b) in d.branches.iter().enumerate() {
                        defined(name, &b.next, "a branch")?;
                        gates.push(SchemaGate::new(&b.schema).map_err(|why| {
                            invalid(name, format!("branch {i} does not compile: {why}"))
                        })?);
                    }
                    branches.insert(name.clone(), gates);
                }
            }
        }
        Ok(Self {
            constraints,
            branches,
        })
    }

    /// Check a proposal against the constraints of `state`.
    ///
    /// A constraint applies to the value at its pointer; a value the proposal omits (an optional
    /// field) is not constrained, as with JSON Schema's `properties`.
    pub(crate) fn check(
        &self,
        state: &str,
        payload: &Value,
    ) -> Result<(), Vec<ConstraintViolation>> {
        let mut violations = Vec::new();
        for (pointer, gate) in self.constraints.get(state).into_iter().flatten() {
            let Some(value) = payload.pointer(pointer) else {
                continue;
            };
            if let Err(v) = gate.check(value) {
                violations.extend(v.into_iter().map(|v| ConstraintViolation {
                    pointer: pointer.clone(),
                    message: v.message,
                }));
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    /// The branch a decision takes over the run's data: the first whose pointer resolves to a
    /// value its schema accepts (`Some(index)`), else `otherwise` (`None`).
    pub(crate) fn decide(
        &self,
        state: &str,
        decision: &DecisionState,
        data: &Value,
    ) -> (Option<usize>, String) {
        let gates = self.branches.get(state);
        for (i, branch) in decision.branches.iter().enumerate() {
            let taken = data.pointer(&branch.pointer).is_some_and(|v| {
                gates
                    .and_then(|g| g.get(i))
                    .is_some_and(|g| g.check(v).is_ok())
            });
            if taken {
                return (Some(i), branch.next.clone());
            }
        }
        (None, decision.otherwise.clone())
    }
}
