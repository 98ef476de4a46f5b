//! The document: the closed top level, the SOP id and version, the state names, and each
//! state dispatched by its `kind`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::fields::{self, closest};
use crate::rule::Rule;
use crate::rules::names::is_identifier;
use crate::schema::subset::escape;
use crate::sop::model::{Sop, State};
use crate::sop::names::{type_name, RESERVED_TYPE_NAMES};

use super::{list, File, Parsed, Raw, KINDS, TERMINAL, TOP};

impl<'a> File<'a, '_> {
    /// Check the whole file: the SOP when it passed every rule, and its id when it has one.
    pub(super) fn check(&mut self) -> (Option<Sop>, Option<String>) {
        let before = self.diags.len();
        let value = match fields::parse(self.src) {
            Ok(v) => v,
            Err(d) => {
                self.diags.push(*d);
                return (None, None);
            }
        };
        let Some(top) = value.as_object() else {
            self.push(
                Rule::SopShape,
                "",
                "an SOP file is a JSON object with `sop_id`, `version`, `description`, `start` and `states`",
            );
            return (None, None);
        };
        self.closed(top, "", TOP, "an SOP");

        let sop_id = self.string(top, "", "sop_id", "").map(str::to_string);
        if let Some(id) = &sop_id {
            if !is_identifier(id) {
                self.push(
                    Rule::SopId,
                    "/sop_id",
                    format!("the SOP id `{id}` does not match ^[a-z][a-z0-9_]*$"),
                );
            } else if ["self", "super", "crate"].contains(&id.as_str()) {
                self.push(
                    Rule::SopId,
                    "/sop_id",
                    format!("the SOP id `{id}` cannot be a Rust module name (`sops::{id}`)"),
                );
            }
        }
        let version =
            self.string(top, "", "version", "")
                .and_then(|v| match semver::Version::parse(v) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        self.push_help(
                            Rule::SopVersion,
                            "/version",
                            format!("`{v}` is not a semver version: {e}"),
                            "write a version such as \"1.0.0\"",
                        );
                        None
                    }
                });
        let description = self.string(top, "", "description", "").and_then(|d| {
            if d.trim().is_empty() {
                self.push(
                    Rule::SopShape,
                    "/description",
                    "`description` is empty; say what the SOP does",
                );
                None
            } else {
                Some(d.to_string())
            }
        });
        if let Some(s) = top.get("$schema").filter(|s| !s.is_string()) {
            self.push(
                Rule::SopShape,
                "/$schema",
                format!("`$schema` must be a string, not {s}"),
            );
        }
        let start = self.string(top, "", "start", "").map(str::to_string);
        let states_value = match top.get("states") {
            None => {
                self.push(Rule::SopShape, "", "missing required field `states`");
                None
            }
            Some(Value::Object(m)) if m.is_empty() => {
                self.push(
                    Rule::SopShape,
                    "/states",
                    "`states` is empty; an SOP needs at least a start state and a terminal state",
                );
                None
            }
            Some(Value::Object(m)) => Some(m),
            Some(v) => {
                self.push(
                    Rule::SopShape,
                    "/states",
                    format!("`states` must be an object of named states, not {v}"),
                );
                None
            }
        };
        let Some(states_value) = states_value else {
            return (None, sop_id);
        };

        // Pre-pass: every state's kind and tool, for branch pointers that read other states.
        let raw: BTreeMap<&str, Raw<'_>> = states_value
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str(),
                    Raw {
                        kind: v.get("kind").and_then(Value::as_str),
                        tool: v.get("tool").and_then(Value::as_str),
                    },
                )
            })
            .collect();

        self.state_names(states_value);
        let mut parsed: BTreeMap<String, Parsed> = BTreeMap::new();
        for (name, v) in states_value {
            let p = self.state(name, v, &raw);
            parsed.insert(name.clone(), p);
        }

        // Every transition names a state.
        let names: Vec<&str> = states_value.keys().map(String::as_str).collect();
        let mut undefined = false;
        if let Some(s) = &start {
            if !states_value.contains_key(s) {
                undefined = true;
                self.undefined("/start", "`start`", s, &names);
            }
        }
        for (name, p) in &parsed {
            for (at, target) in &p.targets {
                if !states_value.contains_key(target) {
                    undefined = true;
                    let what = format!(
                        "state `{name}`: `{}`",
                        at.rsplit('/').next().unwrap_or("next")
                    );
                    self.undefined(at, &what, target, &names);
                }
            }
        }

        let complete = parsed.values().all(|p| p.state.is_some());
        let states: BTreeMap<String, State> = parsed
            .into_iter()
            .filter_map(|(n, p)| p.state.map(|s| (n, s)))
            .collect();
        if complete && !undefined {
            if let Some(start) = &start {
                self.graph(start, &states);
            }
        }

        if self.diags.len() != before || !complete {
            return (None, sop_id);
        }
        let sop = match (sop_id.clone(), version, description, start) {
            (Some(sop_id), Some(version), Some(description), Some(start)) => Some(Sop {
                source: self.src.path.clone(),
                sop_id,
                version,
                description,
                start,
                states,
            }),
            _ => None,
        };
        (sop, sop_id)
    }

    pub(super) fn undefined(&mut self, at: &str, what: &str, target: &str, names: &[&str]) {
        let message = format!("{what} names `{target}`, which is not a state of this SOP");
        match closest(target, names.iter().copied()) {
            Some(best) => self.push_help(
                Rule::SopUndefinedState,
                at,
                message,
                format!("did you mean `{best}`?"),
            ),
            None => self.push_help(
                Rule::SopUndefinedState,
                at,
                message,
                format!("the states are: {}", list(names)),
            ),
        }
    }

    /// State names: the pattern, and distinct Rust type names none of which the generated code
    /// reserves.
    pub(super) fn state_names(&mut self, states: &Map<String, Value>) {
        let mut by_type: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for name in states.keys() {
            let at = format!("/states/{}", escape(name));
            if !is_identifier(name) {
                self.push_help(
                    Rule::SopStateName,
                    &at,
                    format!("the state name `{name}` does not match ^[a-z][a-z0-9_]*$"),
                    "state names become Rust types and branch pointers: use lower-case words joined by `_`",
                );
                continue;
            }
            let ty = type_name(name);
            if RESERVED_TYPE_NAMES.contains(&ty.as_str()) {
                self.push(
                    Rule::SopStateName,
                    &at,
                    format!(
                        "the state name `{name}` becomes the Rust name `{ty}`, which the generated \
                         SOP module reserves; rename the state"
                    ),
                );
            }
            by_type.entry(ty).or_default().push(name);
        }
        for (ty, names) in by_type.into_iter().filter(|(_, n)| n.len() > 1) {
            for name in &names[1..] {
                self.push(
                    Rule::SopStateName,
                    &format!("/states/{}", escape(name)),
                    format!(
                        "the states {} all become the Rust name `{ty}`; rename one",
                        list(&names)
                    ),
                );
            }
        }
    }

    pub(super) fn state(&mut self, name: &str, v: &Value, raw: &BTreeMap<&str, Raw<'_>>) -> Parsed {
        let at = format!("/states/{}", escape(name));
        let who = format!("state `{name}`: ");
        let Some(obj) = v.as_object() else {
            self.push(
                Rule::SopShape,
                &at,
                format!("{who}a state must be an object with a `kind` (execution, decision or terminal)"),
            );
            return Parsed::default();
        };
        let kind = match obj.get("kind") {
            None => {
                self.push(
                    Rule::SopShape,
                    &at,
                    format!("{who}missing required field `kind` (execution, decision or terminal)"),
                );
                None
            }
            Some(Value::String(k)) if KINDS.contains(&k.as_str()) => Some(k.as_str()),
            Some(k) => {
                let help = match k.as_str().and_then(|k| closest(k, KINDS.iter().copied())) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => "the kinds are: execution, decision, terminal".to_string(),
                };
                self.push_help(
                    Rule::SopShape,
                    &format!("{at}/kind"),
                    format!("{who}{k} is not a state kind"),
                    help,
                );
                None
            }
        };
        match kind {
            Some("execution") => self.execution(name, &at, obj),
            Some("decision") => self.decision(name, &at, obj, raw),
            Some(_) => {
                self.closed(
                    obj,
                    &at,
                    TERMINAL,
                    &format!("state `{name}` (a terminal state)"),
                );
                Parsed {
                    targets: Vec::new(),
                    state: Some(State::Terminal),
                }
            }
            None => Parsed::default(),
        }
    }
}
