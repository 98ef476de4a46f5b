//! The SOP model: a state machine whose execution steps bind registered tools.
//!
//! This is the typed form of an SOP file that passed every SOP rule (see [`load`](super::load)).
//! The file format is documented by the JSON Schema `registry-build/sop.schema.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use escepine_contract::FailureOutcome;
use serde_json::Value;

/// A checked SOP.
#[derive(Debug, Clone, PartialEq)]
pub struct Sop {
    /// The file it came from.
    pub source: PathBuf,
    /// `sop_id` (`^[a-z][a-z0-9_]*$`).
    pub sop_id: String,
    /// Semver version.
    pub version: semver::Version,
    /// What the SOP does.
    pub description: String,
    /// The first state.
    pub start: String,
    /// Every state by name (sorted).
    pub states: BTreeMap<String, State>,
}

/// One state of an SOP.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Run one governed call of a registered tool.
    Execution(ExecutionState),
    /// Branch on earlier inputs and outputs.
    Decision(DecisionState),
    /// The run ends successfully here.
    Terminal,
}

/// An execution step.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionState {
    /// The bound tool id.
    pub tool: String,
    /// What a failure of this step does (one of the tool's `on_failure` outcomes).
    pub on_failure: FailureOutcome,
    /// The state after success.
    pub next: String,
    /// Whether the step must authorize each URL individually (single-URL tool, or a list
    /// marked `x-authorize-each`).
    pub require_per_url_authorization: bool,
    /// JSON pointer into the payload → JSON Schema fragment the proposal must also satisfy.
    pub constraints: BTreeMap<String, Value>,
}

/// A decision step.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionState {
    /// Branches tried in order.
    pub branches: Vec<Branch>,
    /// The state when no branch matches.
    pub otherwise: String,
}

/// One branch of a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// Pointer into `{"<state>": {"input": …, "output": …}}` of the run so far.
    pub pointer: String,
    /// The schema the pointed value must satisfy for the branch to be taken.
    pub schema: Value,
    /// The state the branch leads to.
    pub next: String,
}

impl Sop {
    /// The state called `name`.
    pub fn state(&self, name: &str) -> Option<&State> {
        self.states.get(name)
    }

    /// The execution states, by name (sorted).
    pub fn execution_states(&self) -> impl Iterator<Item = (&str, &ExecutionState)> {
        self.states.iter().filter_map(|(n, s)| match s {
            State::Execution(e) => Some((n.as_str(), e)),
            _ => None,
        })
    }

    /// The names of the terminal states (sorted).
    pub fn terminals(&self) -> impl Iterator<Item = &str> {
        self.states
            .iter()
            .filter(|(_, s)| matches!(s, State::Terminal))
            .map(|(n, _)| n.as_str())
    }

    /// Whether a run may move from state `from` to state `to`: `to` is one of `from`'s declared
    /// successors.
    pub fn is_transition(&self, from: &str, to: &str) -> bool {
        self.state(from)
            .is_some_and(|s| s.successors().contains(&to))
    }

    /// The SOP in its file format (canonical: defaults written out, states sorted). Loading this
    /// document again gives an equal SOP (but for [`Sop::source`]).
    pub fn to_json(&self) -> Value {
        let states: serde_json::Map<String, Value> = self
            .states
            .iter()
            .map(|(n, s)| (n.clone(), s.to_json()))
            .collect();
        serde_json::json!({
            "sop_id": self.sop_id,
            "version": self.version.to_string(),
            "description": self.description,
            "start": self.start,
            "states": states,
        })
    }
}

impl State {
    /// The state's `kind` as the file spells it: `execution`, `decision` or `terminal`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Execution(_) => "execution",
            Self::Decision(_) => "decision",
            Self::Terminal => "terminal",
        }
    }

    /// The states a run may move to from this one, in declaration order, without repeats:
    /// `next` of an execution step; the branches' `next`, then `otherwise`, of a decision; none
    /// of a terminal state. (A failure ends the run; it moves to no state.)
    pub fn successors(&self) -> Vec<&str> {
        let all: Vec<&str> = match self {
            Self::Execution(e) => vec![e.next.as_str()],
            Self::Decision(d) => d
                .branches
                .iter()
                .map(|b| b.next.as_str())
                .chain(std::iter::once(d.otherwise.as_str()))
                .collect(),
            Self::Terminal => Vec::new(),
        };
        let mut out: Vec<&str> = Vec::with_capacity(all.len());
        for s in all {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// The state in the SOP file format.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Execution(e) => {
                let mut m = serde_json::Map::new();
                m.insert("kind".into(), Value::from("execution"));
                m.insert("tool".into(), Value::from(e.tool.clone()));
                m.insert("on_failure".into(), Value::from(e.on_failure.as_str()));
                m.insert("next".into(), Value::from(e.next.clone()));
                m.insert(
                    "require_per_url_authorization".into(),
                    Value::from(e.require_per_url_authorization),
                );
                if !e.constraints.is_empty() {
                    let c: serde_json::Map<String, Value> = e
                        .constraints
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    m.insert("constraints".into(), Value::Object(c));
                }
                Value::Object(m)
            }
            Self::Decision(d) => serde_json::json!({
                "kind": "decision",
                "branches": d.branches.iter().map(|b| serde_json::json!({
                    "when": { "pointer": b.pointer, "schema": b.schema },
                    "next": b.next,
                })).collect::<Vec<_>>(),
                "otherwise": d.otherwise,
            }),
            Self::Terminal => serde_json::json!({ "kind": "terminal" }),
        }
    }
}

impl Branch {
    /// The branch pointer split into the state it reads, `input` or `output`, and the pointer
    /// into that document (`/read/output/status_code` → `("read", "output", "/status_code")`).
    /// `None` when the pointer is not of that form.
    pub fn target(&self) -> Option<(String, &str, &str)> {
        split_branch_pointer(&self.pointer)
    }
}

/// Split `/<state>/<input|output><rest>` into its parts (the state name unescaped).
pub(crate) fn split_branch_pointer(pointer: &str) -> Option<(String, &str, &str)> {
    let rest = pointer.strip_prefix('/')?;
    let (state, rest) = rest.split_once('/')?;
    let (doc, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if doc != "input" && doc != "output" {
        return None;
    }
    let state = state.replace("~1", "/").replace("~0", "~");
    Some((state, doc, tail))
}
