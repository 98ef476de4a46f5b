//! Decision states: their branches, what each branch reads and which state it leads to.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::fields::closest;
use crate::rule::Rule;
use crate::schema::subset::escape;
use crate::schema::walk::{self};
use crate::sop::model::{split_branch_pointer, Branch, DecisionState, State};

use super::pointers::field_pointers;
use super::{File, Parsed, Raw, BRANCH, DECISION, WHEN};

impl<'a> File<'a, '_> {
    pub(super) fn decision(
        &mut self,
        name: &str,
        at: &str,
        obj: &Map<String, Value>,
        raw: &BTreeMap<&str, Raw<'_>>,
    ) -> Parsed {
        let before = self.diags.len();
        let who = format!("state `{name}`: ");
        self.closed(
            obj,
            at,
            DECISION,
            &format!("state `{name}` (a decision state)"),
        );
        let mut targets = Vec::new();
        let branches = match obj.get("branches") {
            None => {
                self.push(
                    Rule::SopShape,
                    at,
                    format!("{who}missing required field `branches`"),
                );
                None
            }
            Some(Value::Array(b)) if b.is_empty() => {
                self.push(
                    Rule::SopShape,
                    &format!("{at}/branches"),
                    format!("{who}a decision needs at least one branch"),
                );
                None
            }
            Some(Value::Array(b)) => Some(b),
            Some(v) => {
                self.push(
                    Rule::SopShape,
                    &format!("{at}/branches"),
                    format!("{who}`branches` must be a list, not {v}"),
                );
                None
            }
        };
        let mut parsed_branches = Vec::new();
        for (i, b) in branches.into_iter().flatten().enumerate() {
            let bat = format!("{at}/branches/{i}");
            let Some(bobj) = b.as_object() else {
                self.push(
                    Rule::SopShape,
                    &bat,
                    format!("{who}a branch is an object with `when` and `next`"),
                );
                continue;
            };
            self.closed(bobj, &bat, BRANCH, &format!("a branch of state `{name}`"));
            let next = self.string(bobj, &bat, "next", &who);
            if let Some(n) = next {
                targets.push((format!("{bat}/next"), n.to_string()));
            }
            let when = match bobj.get("when") {
                None => {
                    self.push(
                        Rule::SopShape,
                        &bat,
                        format!("{who}missing required field `when`"),
                    );
                    None
                }
                Some(Value::Object(w)) => Some(w),
                Some(v) => {
                    self.push(
                        Rule::SopShape,
                        &format!("{bat}/when"),
                        format!(
                            "{who}`when` must be an object with `pointer` and `schema`, not {v}"
                        ),
                    );
                    None
                }
            };
            let Some(when) = when else { continue };
            let wat = format!("{bat}/when");
            self.closed(
                when,
                &wat,
                WHEN,
                &format!("`when` of a branch of state `{name}`"),
            );
            let pointer = self.string(when, &wat, "pointer", &who);
            let schema = when.get("schema");
            if schema.is_none() {
                self.push(
                    Rule::SopShape,
                    &wat,
                    format!("{who}missing required field `schema`"),
                );
            }
            let well_formed = schema.is_some_and(|s| {
                self.fragment(
                    &format!("{wat}/schema"),
                    s,
                    &format!("{who}the schema of branch {i}"),
                )
            });
            if let Some(p) = pointer {
                self.branch_pointer(name, &wat, p, schema.filter(|_| well_formed), raw);
            }
            if let (Some(pointer), Some(schema), Some(next)) = (pointer, schema, next) {
                parsed_branches.push(Branch {
                    pointer: pointer.to_string(),
                    schema: schema.clone(),
                    next: next.to_string(),
                });
            }
        }
        let otherwise = self.string(obj, at, "otherwise", &who);
        if let Some(o) = otherwise {
            targets.push((format!("{at}/otherwise"), o.to_string()));
        }
        let state = match (branches, otherwise) {
            (Some(_), Some(otherwise)) if self.diags.len() == before => {
                Some(State::Decision(DecisionState {
                    branches: parsed_branches,
                    otherwise: otherwise.to_string(),
                }))
            }
            _ => None,
        };
        Parsed { targets, state }
    }

    /// The parts of a branch pointer that need no graph: its form, the state it reads (an
    /// execution state), its resolution in that tool's schema, and the schema's agreement with
    /// the field.
    pub(super) fn branch_pointer(
        &mut self,
        name: &str,
        wat: &str,
        pointer: &str,
        schema: Option<&Value>,
        raw: &BTreeMap<&str, Raw<'_>>,
    ) {
        let at = format!("{wat}/pointer");
        let who = format!("state `{name}`: ");
        let Some((state, doc, rest)) = split_branch_pointer(pointer) else {
            self.push_help(
                Rule::SopBranchPointer,
                &at,
                format!("{who}the branch pointer `{pointer}` does not read an earlier step"),
                "a branch pointer is `/<state>/input/…` or `/<state>/output/…` of an execution state",
            );
            return;
        };
        let Some(r) = raw.get(state.as_str()) else {
            let message = format!(
                "{who}the branch pointer `{pointer}` reads the state `{state}`, which is not a state of this SOP"
            );
            match closest(&state, raw.keys().copied()) {
                Some(best) => self.push_help(
                    Rule::SopBranchPointer,
                    &at,
                    message,
                    format!("did you mean `{best}`?"),
                ),
                None => self.push(Rule::SopBranchPointer, &at, message),
            }
            return;
        };
        if r.kind != Some("execution") {
            if r.kind.is_some() {
                self.push(
                    Rule::SopBranchPointer,
                    &at,
                    format!(
                        "{who}the branch pointer `{pointer}` reads the state `{state}`, a {} state; \
                         only execution steps have an input and an output",
                        r.kind.unwrap_or("malformed")
                    ),
                );
            }
            return;
        }
        let Some((tools, tool)) = self.tools.zip(r.tool) else {
            return;
        };
        // An unknown tool is reported at its state.
        let Some(record) = tools.get(tool) else {
            return;
        };
        let root = if doc == "input" {
            &record.input_schema
        } else {
            &record.output_schema
        };
        match walk::pointer_schema(root, root, rest) {
            None => {
                let fields = field_pointers(root);
                let message = format!(
                    "{who}the branch pointer `{pointer}` does not resolve: the {doc} of `{tool}` \
                     (state `{state}`) has no field `{rest}`"
                );
                match closest(rest, fields.iter().map(String::as_str)) {
                    Some(best) => self.push_help(
                        Rule::SopBranchPointer,
                        &at,
                        message,
                        format!("did you mean `/{}/{doc}{best}`?", escape(&state)),
                    ),
                    None => self.push(Rule::SopBranchPointer, &at, message),
                }
            }
            Some(target) => {
                if let Some(schema) = schema {
                    let what = format!("{who}the schema of the branch on `{pointer}`");
                    let field = format!("the {doc} field `{rest}` of `{tool}`");
                    self.agree(
                        &format!("{wat}/schema"),
                        schema,
                        root,
                        target.schema,
                        &what,
                        &field,
                        0,
                    );
                }
            }
        }
    }
}
