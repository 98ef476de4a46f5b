//! Execution steps: the bound tool, its allowed outcomes, per-URL authorization and the
//! constraints on its payload.

use std::collections::BTreeMap;

use escepine_contract::FailureOutcome;
use serde_json::{Map, Value};

use crate::fields::closest;
use crate::record::ToolRecord;
use crate::rule::Rule;
use crate::schema::subset::escape;
use crate::schema::walk::{self};
use crate::sop::model::{ExecutionState, State};
use crate::urls;

use super::pointers::{field_pointers, is_pointer};
use super::{list, File, Parsed, EXECUTION};

impl<'a> File<'a, '_> {
    pub(super) fn tool(&mut self, name: &str, at: &str, id: &str) -> Option<&'a ToolRecord> {
        let tools = self.tools?;
        if let Some(r) = tools.get(id) {
            return Some(r);
        }
        if tools.failed.contains(id) {
            return None;
        }
        let message = format!("state `{name}`: `{id}` is not a registered tool");
        match closest(id, tools.records.iter().map(|r| r.tool_id.as_str())) {
            Some(best) => self.push_help(
                Rule::SopUnknownTool,
                &format!("{at}/tool"),
                message,
                format!("did you mean `{best}`?"),
            ),
            None => self.push_help(
                Rule::SopUnknownTool,
                &format!("{at}/tool"),
                message,
                "register the tool's record, or bind a registered tool",
            ),
        }
        None
    }

    pub(super) fn execution(&mut self, name: &str, at: &str, obj: &Map<String, Value>) -> Parsed {
        let before = self.diags.len();
        let who = format!("state `{name}`: ");
        self.closed(
            obj,
            at,
            EXECUTION,
            &format!("state `{name}` (an execution state)"),
        );
        let tool = self.string(obj, at, "tool", &who);
        let on_failure = self.string(obj, at, "on_failure", &who);
        let next = self.string(obj, at, "next", &who);
        let mut targets = Vec::new();
        if let Some(n) = next {
            targets.push((format!("{at}/next"), n.to_string()));
        }
        let per_url = match obj.get("require_per_url_authorization") {
            None => Some(false),
            Some(Value::Bool(b)) => Some(*b),
            Some(v) => {
                self.push(
                    Rule::SopShape,
                    &format!("{at}/require_per_url_authorization"),
                    format!("{who}`require_per_url_authorization` must be true or false, not {v}"),
                );
                None
            }
        };
        let constraints = match obj.get("constraints") {
            None => Some(None),
            Some(Value::Object(m)) => Some(Some(m)),
            Some(v) => {
                self.push(
                    Rule::SopShape,
                    &format!("{at}/constraints"),
                    format!(
                        "{who}`constraints` must be an object of JSON pointer → JSON Schema, not {v}"
                    ),
                );
                None
            }
        };
        let record = tool.and_then(|t| self.tool(name, at, t));

        let outcome = on_failure.and_then(|o| {
            let parsed = FailureOutcome::parse(o);
            let allowed: Vec<&str> = match record {
                Some(r) => r.on_failure.iter().map(|o| o.as_str()).collect(),
                None => FailureOutcome::ALL.iter().map(|o| o.as_str()).collect(),
            };
            match (parsed, record) {
                (None, _) => {
                    let help = match closest(o, allowed.iter().copied()) {
                        Some(best) => format!("did you mean `{best}`?"),
                        None => format!("use one of {}", list(&allowed)),
                    };
                    self.push_help(
                        Rule::SopOutcome,
                        &format!("{at}/on_failure"),
                        format!("{who}`{o}` is not a failure outcome"),
                        help,
                    );
                    None
                }
                (Some(p), Some(r)) if !r.on_failure.contains(&p) => {
                    self.push_help(
                        Rule::SopOutcome,
                        &format!("{at}/on_failure"),
                        format!(
                            "{who}the tool `{}` does not allow `{o}` on failure; it allows {}",
                            r.tool_id,
                            list(&allowed)
                        ),
                        "choose one of the tool's outcomes, or change the tool's record",
                    );
                    None
                }
                (Some(p), _) => Some(p),
            }
        });

        let mut checked = BTreeMap::new();
        if let Some(Some(m)) = constraints {
            for (pointer, fragment) in m {
                let cat = format!("{at}/constraints/{}", escape(pointer));
                let what = format!("{who}the constraint on `{pointer}`");
                checked.insert(pointer.clone(), fragment.clone());
                if !is_pointer(pointer) {
                    self.push_help(
                        Rule::SopConstraintField,
                        &cat,
                        format!("{what}: `{pointer}` is not a JSON pointer"),
                        "a constraint's key is a JSON pointer into the payload, such as `/priority`",
                    );
                    continue;
                }
                let well_formed = self.fragment(&cat, fragment, &what);
                let Some(r) = record else { continue };
                let root = &r.input_schema;
                match walk::pointer_schema(root, root, pointer) {
                    None => {
                        let message = format!(
                            "{what}: the payload of `{}` has no field `{pointer}`",
                            r.tool_id
                        );
                        let fields = field_pointers(root);
                        let help = match closest(pointer, fields.iter().map(String::as_str)) {
                            Some(best) => format!("did you mean `{best}`?"),
                            None if fields.is_empty() => format!("`{}` takes no fields", r.tool_id),
                            None => format!(
                                "the payload's fields are: {}",
                                list(&fields.iter().map(String::as_str).collect::<Vec<_>>())
                            ),
                        };
                        self.push_help(Rule::SopConstraintField, &cat, message, help);
                    }
                    Some(target) if well_formed => {
                        let field = format!("the field `{pointer}` of `{}`", r.tool_id);
                        self.agree(&cat, fragment, root, target.schema, &what, &field, 0);
                    }
                    Some(_) => {}
                }
            }
        }

        if per_url == Some(true) {
            if let Some(r) = record {
                if let Some(problem) = per_url_problem(r) {
                    self.push_help(
                        Rule::SopPerUrl,
                        &format!("{at}/require_per_url_authorization"),
                        format!("{who}per-URL authorization is required, but {problem}"),
                        "mark the URL list `\"x-authorize-each\": true` in the tool's input schema, \
                         bind a single-URL tool, or drop the requirement",
                    );
                }
            }
        }

        let state = match (tool, outcome, next, per_url, constraints) {
            (Some(tool), Some(on_failure), Some(next), Some(per_url), Some(_))
                if self.diags.len() == before =>
            {
                Some(State::Execution(ExecutionState {
                    tool: tool.to_string(),
                    on_failure,
                    next: next.to_string(),
                    require_per_url_authorization: per_url,
                    constraints: checked,
                }))
            }
            _ => None,
        };
        Parsed { targets, state }
    }
}

/// Why a tool's URLs would not each be authorized on their own, if they would not: the
/// per-URL shape rule the registration applies to URL-constrained tools
/// ([`urls::shape_problems`]), and a URL to authorize at all.
pub(super) fn per_url_problem(record: &ToolRecord) -> Option<String> {
    let root = &record.input_schema;
    let id = &record.tool_id;
    if let Some(p) = urls::shape_problems(root).into_iter().next() {
        return Some(format!("`{id}`: {}", p.message));
    }
    if !urls::per_url(root).has_url() {
        return Some(format!(
            "`{id}` takes no URL: its payload has no URL field and no list marked \
             `x-authorize-each`"
        ));
    }
    None
}
