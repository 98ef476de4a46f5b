//! An SOP run drawn as SVG: the SOP's state machine laid out by `layout-rs`, the path the run
//! took highlighted (states entered, transitions followed, the failure outcome it ended in),
//! and the steps undone by compensation marked.
//!
//! [`RunPath::of`] reads the path from the run's entries alone; [`svg`] draws it over the SOP
//! when the console was given its file, else over the states and transitions the run recorded.
//! Every node is a `<g id="state-…" class="…">` (classes `visited`, `current`, `compensated`,
//! `failure`), so a reader (or a test) can find each state.

use std::collections::{BTreeSet, HashMap};

use escepine_contract::FailureOutcome;
use escepine_ledger::entry::Entry;
use escepine_ledger::record::{CallResult, Decision, Record};
use escepine_registry::record::ToolRecord;
use escepine_registry::sop::model::{Sop, State};
use escepine_runtime::sop::events::Event;
use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::render::get_shape_size;
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;

/// One call of a run, as its step list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The intent's position.
    pub seq: u64,
    /// The SOP state it ran in.
    pub state: Option<String>,
    /// The tool.
    pub tool: String,
    /// The call.
    pub call_id: String,
    /// What Cedar decided.
    pub decision: Decision,
    /// How it ended, if it has.
    pub result: Option<CallResult>,
    /// The call it undoes, for an inverse run by compensation.
    pub compensates: Option<String>,
}

/// The path a run took, read from its entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunPath {
    /// The SOP.
    pub sop_id: Option<String>,
    /// Its version.
    pub sop_version: Option<String>,
    /// For whom it runs.
    pub principal: Option<String>,
    /// The states entered, in order (a state entered twice appears twice).
    pub visited: Vec<String>,
    /// The transitions followed (from, to).
    pub taken: BTreeSet<(String, String)>,
    /// States whose step failed.
    pub failed: BTreeSet<String>,
    /// States whose completed step was undone by compensation (or marked superseded), with
    /// how.
    pub compensated: HashMap<String, String>,
    /// Its calls in chain order.
    pub steps: Vec<Step>,
    /// Its final status (`completed`, `halted`, …), when it has ended.
    pub status: Option<String>,
    /// Events the engine recorded, in order: (seq, event, state).
    pub events: Vec<(u64, String, Option<String>)>,
}

impl RunPath {
    /// The path of the run whose entries are `entries` (as `entries_for_run` returns them).
    pub fn of(entries: &[Entry]) -> Self {
        let mut path = Self::default();
        let mut state_of_call: HashMap<String, String> = HashMap::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for entry in entries {
            match &entry.record {
                Record::Intent(i) => {
                    if let Some(s) = &i.step {
                        state_of_call.insert(i.call_id.clone(), s.clone());
                    }
                    at.insert(i.call_id.clone(), path.steps.len());
                    path.steps.push(Step {
                        seq: entry.seq,
                        state: i.step.clone(),
                        tool: i.tool_id.clone(),
                        call_id: i.call_id.clone(),
                        decision: i.decision,
                        result: None,
                        compensates: i.compensates.clone(),
                    });
                }
                Record::Outcome(o) => {
                    if let Some(&n) = at.get(&o.call_id) {
                        path.steps[n].result.get_or_insert(o.result);
                    }
                }
                Record::Transition(t) => {
                    path.events
                        .push((entry.seq, t.event.clone(), t.state.clone()));
                    let Ok(Some(event)) = Event::parse(t) else {
                        continue;
                    };
                    path.apply(t.state.as_deref(), event, &state_of_call);
                }
                Record::Approval(_) | Record::Declassification(_) => {}
            }
        }
        path
    }

    fn enter(&mut self, state: &str) {
        if self.visited.last().map(String::as_str) != Some(state) {
            self.visited.push(state.to_string());
        }
    }

    fn apply(&mut self, state: Option<&str>, event: Event, calls: &HashMap<String, String>) {
        match event {
            Event::RunStarted(s) => {
                self.sop_id = Some(s.sop_id);
                self.sop_version = Some(s.sop_version);
                self.principal = Some(s.principal);
                if let Some(st) = state {
                    self.enter(st);
                }
            }
            Event::StepStarted(_) | Event::StepSucceeded(_) => {
                if let Some(st) = state {
                    self.enter(st);
                }
            }
            Event::StepFailed(_) => {
                if let Some(st) = state {
                    self.enter(st);
                    self.failed.insert(st.to_string());
                }
            }
            Event::Transition(m) => {
                self.enter(&m.from);
                self.taken.insert((m.from.clone(), m.to.clone()));
                self.enter(&m.to);
            }
            Event::Decision(d) => {
                if let Some(st) = state {
                    self.enter(st);
                    self.taken.insert((st.to_string(), d.next.clone()));
                }
            }
            Event::Compensated(c) => {
                if let Some(st) = calls.get(&c.call_id) {
                    self.compensated
                        .insert(st.clone(), format!("undone by {}", c.inverse));
                }
            }
            Event::Superseded(s) => {
                if let Some(st) = calls.get(&s.call_id) {
                    self.compensated
                        .insert(st.clone(), "marked superseded".to_string());
                }
            }
            Event::CompensationFailed(c) => {
                if let Some(st) = calls.get(&c.call_id) {
                    self.compensated
                        .insert(st.clone(), "compensation failed".to_string());
                }
            }
            Event::RunEnded(r) => self.status = Some(r.status.as_str().to_string()),
            Event::RunResumed(_) | Event::CompensationStarted(_) | Event::Escalated(_) => {}
        }
    }
}

/// The node id of a state: `state-` and its name, restricted to `[A-Za-z0-9_-]`.
pub fn node_id(state: &str) -> String {
    let safe: String = state
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("state-{safe}")
}

const FONT: usize = 14;
const GREY: u32 = 0x9a9a_a0ff;
const PATH: u32 = 0x1b7f_3aff;
const VISITED_FILL: u32 = 0xd8f0_deff;
const COMPENSATED_FILL: u32 = 0xfff0_c2ff;
const COMPENSATED_LINE: u32 = 0xb8860bff;
const FAILURE_FILL: u32 = 0xf8d7_daff;
const FAILURE_LINE: u32 = 0xa71d_2aff;

/// How one node is drawn.
struct Node {
    id: String,
    label: String,
    shape: fn(&str) -> ShapeKind,
    classes: Vec<&'static str>,
}

/// The SVG of `path`, over `sop` when given (its every state and transition), else over the
/// states and transitions the run recorded. `records` give the steps' side-effect classes.
pub fn svg(sop: Option<&Sop>, records: &[ToolRecord], path: &RunPath) -> String {
    let visited: BTreeSet<&str> = path.visited.iter().map(String::as_str).collect();
    let current = path.visited.last().map(String::as_str);
    let mut nodes: Vec<(String, Node)> = Vec::new();
    let mut edges: Vec<(String, String, String)> = Vec::new();
    let class_of = |tool: &str| {
        records
            .iter()
            .find(|r| r.tool_id() == tool)
            .map(|r| r.side_effect_class().as_str())
    };
    let ended_in = path.status.as_deref();
    match sop {
        Some(sop) => {
            for (name, state) in &sop.states {
                let (label, shape): (String, fn(&str) -> ShapeKind) = match state {
                    State::Execution(e) => (
                        match class_of(&e.tool) {
                            Some(c) => format!("{name}\n{} ({c})", e.tool),
                            None => format!("{name}\n{}", e.tool),
                        },
                        ShapeKind::new_box,
                    ),
                    State::Decision(_) => (name.clone(), ShapeKind::new_circle),
                    State::Terminal => (name.clone(), ShapeKind::new_double_circle),
                };
                nodes.push((name.clone(), node(name, label, shape)));
            }
            let mut outcomes: BTreeSet<&'static str> = BTreeSet::new();
            for (name, state) in &sop.states {
                match state {
                    State::Execution(e) => {
                        edges.push((name.clone(), e.next.clone(), "ok".into()));
                        let label = outcome_label(e.on_failure);
                        outcomes.insert(label);
                        edges.push((name.clone(), failure_key(label), "failure".into()));
                    }
                    State::Decision(d) => {
                        for b in &d.branches {
                            edges.push((
                                name.clone(),
                                b.next.clone(),
                                format!("when {}", b.pointer),
                            ));
                        }
                        edges.push((name.clone(), d.otherwise.clone(), "otherwise".into()));
                    }
                    State::Terminal => {}
                }
            }
            for label in outcomes {
                nodes.push((
                    failure_key(label),
                    Node {
                        id: node_id(&failure_key(label)),
                        label: label.to_string(),
                        shape: ShapeKind::new_box,
                        classes: vec!["failure"],
                    },
                ));
            }
            nodes.insert(
                0,
                (
                    START.into(),
                    Node {
                        id: "state-start".into(),
                        label: "start".into(),
                        shape: ShapeKind::new_circle,
                        classes: vec!["visited"],
                    },
                ),
            );
            edges.insert(0, (START.into(), sop.start.clone(), String::new()));
        }
        None => {
            for name in &visited {
                nodes.push((
                    name.to_string(),
                    node(name, name.to_string(), ShapeKind::new_box),
                ));
            }
            for (from, to) in &path.taken {
                edges.push((from.clone(), to.clone(), String::new()));
            }
        }
    }
    // A run that ended in a failure outcome: the failed state's edge to it is on the path.
    let mut taken = path.taken.clone();
    if let Some(first) = path.visited.first() {
        taken.insert((START.into(), first.clone()));
    }
    if let Some(label) = ended_in.filter(|s| ["halted", "escalated", "compensated"].contains(s)) {
        for failed in &path.failed {
            taken.insert((failed.clone(), failure_key(label)));
        }
    }
    for (key, n) in &mut nodes {
        if visited.contains(key.as_str()) {
            n.classes.push("visited");
        }
        if Some(key.as_str()) == current {
            n.classes.push("current");
        }
        if let Some(how) = path.compensated.get(key) {
            n.classes.push("compensated");
            n.label = format!("{}\n↺ {how}", n.label);
        }
        if key.starts_with(FAILURE_PREFIX) && ended_in.is_some_and(|s| failure_key(s) == *key) {
            n.classes.push("visited");
        }
    }
    draw(&nodes, &edges, &taken)
}

const START: &str = "\u{0}start";
const FAILURE_PREFIX: &str = "\u{0}failure:";

fn failure_key(label: &str) -> String {
    format!("{FAILURE_PREFIX}{label}")
}

fn outcome_label(o: FailureOutcome) -> &'static str {
    match o {
        FailureOutcome::Halt => "halted",
        FailureOutcome::HaltAndEscalate => "escalated",
        FailureOutcome::Compensate => "compensated",
    }
}

fn node(name: &str, label: String, shape: fn(&str) -> ShapeKind) -> Node {
    Node {
        id: node_id(name),
        label,
        shape,
        classes: Vec::new(),
    }
}

fn draw(
    nodes: &[(String, Node)],
    edges: &[(String, String, String)],
    taken: &BTreeSet<(String, String)>,
) -> String {
    let mut graph = VisualGraph::new(Orientation::TopToBottom);
    let mut handles = HashMap::new();
    for (key, n) in nodes {
        let has = |c: &str| n.classes.contains(&c);
        let (line, fill, width) = if has("compensated") {
            (COMPENSATED_LINE, Some(COMPENSATED_FILL), 3)
        } else if has("failure") && has("visited") {
            (FAILURE_LINE, Some(FAILURE_FILL), 3)
        } else if has("failure") {
            (FAILURE_LINE, None, 1)
        } else if has("visited") {
            (PATH, Some(VISITED_FILL), if has("current") { 4 } else { 2 })
        } else {
            (GREY, None, 1)
        };
        let shape = (n.shape)(&n.label);
        let look = StyleAttr::new(Color::new(line), width, fill.map(Color::new), 6, FONT);
        let size = get_shape_size(Orientation::TopToBottom, &shape, FONT, false);
        let props = format!("id=\"{}\" class=\"{}\"", n.id, n.classes.join(" "));
        let element =
            Element::create_with_properties(shape, look, Orientation::TopToBottom, size, props);
        handles.insert(key.clone(), graph.add_node(element));
    }
    for (from, to, label) in edges {
        let (Some(&a), Some(&b)) = (handles.get(from), handles.get(to)) else {
            continue;
        };
        let on_path = taken.contains(&(from.clone(), to.clone()));
        let look = if on_path {
            StyleAttr::new(Color::new(PATH), 3, None, 0, FONT)
        } else {
            StyleAttr::new(Color::new(GREY), 1, None, 0, FONT - 2)
        };
        let class = if on_path { "taken" } else { "declared" };
        let arrow = Arrow::with_properties(
            LineEndKind::None,
            LineEndKind::Arrow,
            if on_path {
                LineStyleKind::Normal
            } else {
                LineStyleKind::Dashed
            },
            label,
            &look,
            format!("class=\"edge {class}\""),
            &None,
            &None,
        );
        graph.add_edge(arrow, a, b);
    }
    let mut writer = SVGWriter::new();
    graph.do_it(false, false, false, &mut writer);
    writer.finalize()
}
