//! Drawing an SOP: Mermaid `stateDiagram-v2` or Graphviz DOT.
//!
//! Both show every state and every declared transition: `[*]` (or a point) into the start
//! state, success edges (`next`, labelled `ok`), decision branches labelled with their pointer
//! (DOT adds the schema), `otherwise` edges, and one failure edge per execution step into the
//! node of its `on_failure` outcome (`halted`, `escalated`, `compensated`). Given the records,
//! each execution step also names its tool's side-effect class, and the steps a rollback acts on
//! are marked: compensatable steps (undone by their declared inverse) and supersede steps
//! (marked superseded), each with its own style.

use std::fmt::Write as _;
use std::str::FromStr;

use escepine_contract::{FailureOutcome, SideEffectClass};

use super::model::{Sop, State};
use crate::record::ToolRecord;

/// The output format of [`render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Mermaid `stateDiagram-v2` (renders in GitHub Markdown).
    #[default]
    Mermaid,
    /// Graphviz DOT (`dot -Tsvg`).
    Dot,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "mermaid" => Ok(Self::Mermaid),
            "dot" => Ok(Self::Dot),
            other => Err(format!(
                "`{other}` is not a graph format; use mermaid or dot"
            )),
        }
    }
}

/// Draw `sop` in `format`; `records` (may be empty) give the steps' side-effect classes.
pub fn render(sop: &Sop, records: &[ToolRecord], format: Format) -> String {
    match format {
        Format::Mermaid => mermaid(sop, records),
        Format::Dot => dot(sop, records),
    }
}

/// What the drawing says about an execution step's tool.
struct Facts<'r> {
    class: Option<SideEffectClass>,
    inverse: Option<&'r str>,
}

fn facts<'r>(records: &'r [ToolRecord], tool: &str) -> Facts<'r> {
    let r = records.iter().find(|r| r.tool_id == tool);
    Facts {
        class: r.map(|r| r.side_effect_class),
        inverse: r
            .and_then(|r| r.compensation.as_ref())
            .map(|c| c.tool.as_str()),
    }
}

/// The failure node ids, distinct from every state name: (outcome, id, label).
fn outcome_nodes(sop: &Sop) -> Vec<(FailureOutcome, String, &'static str)> {
    let used: Vec<FailureOutcome> = FailureOutcome::ALL
        .into_iter()
        .filter(|o| sop.execution_states().any(|(_, e)| e.on_failure == *o))
        .collect();
    used.into_iter()
        .map(|o| {
            let label = match o {
                FailureOutcome::Halt => "halted",
                FailureOutcome::HaltAndEscalate => "escalated",
                FailureOutcome::Compensate => "compensated",
            };
            let mut id = label.to_string();
            while sop.states.contains_key(&id) {
                id.push('_');
            }
            (o, id, label)
        })
        .collect()
}

fn outcome_id<'n>(
    nodes: &'n [(FailureOutcome, String, &'static str)],
    o: FailureOutcome,
) -> &'n str {
    nodes
        .iter()
        .find(|(x, _, _)| *x == o)
        .map_or("failed", |(_, id, _)| id.as_str())
}

/// Mermaid `stateDiagram-v2`.
pub fn mermaid(sop: &Sop, records: &[ToolRecord]) -> String {
    let mut out = String::new();
    let oneline = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let _ = writeln!(out, "---\ntitle: SOP {} {}\n---", sop.sop_id, sop.version);
    out.push_str("stateDiagram-v2\n");
    let _ = writeln!(out, "    %% {}", oneline(&sop.description));
    out.push_str("    classDef compensatable fill:#fff3cd,stroke:#b8860b,stroke-width:2px\n");
    out.push_str("    classDef supersede fill:#e2e3f5,stroke:#4b4ba8,stroke-width:2px\n");
    out.push_str("    classDef failure fill:#f8d7da,stroke:#a71d2a\n");
    let nodes = outcome_nodes(sop);

    for (name, state) in &sop.states {
        match state {
            State::Execution(e) => {
                let f = facts(records, &e.tool);
                let mut desc = e.tool.clone();
                if let Some(c) = f.class {
                    let _ = write!(desc, " ({})", c.as_str());
                }
                if e.require_per_url_authorization {
                    desc.push_str(", each URL authorized");
                }
                if !e.constraints.is_empty() {
                    let _ = write!(desc, ", {} constraint(s)", e.constraints.len());
                }
                let _ = writeln!(out, "    {name} : {}", mermaid_text(&desc));
            }
            State::Decision(_) => {
                let _ = writeln!(out, "    state {name} <<choice>>");
            }
            State::Terminal => {
                let _ = writeln!(out, "    {name} : {name} (terminal)");
            }
        }
    }
    for (_, id, label) in &nodes {
        let _ = writeln!(out, "    {id} : {label} (failure)");
    }

    let _ = writeln!(out, "    [*] --> {}", sop.start);
    for (name, state) in &sop.states {
        match state {
            State::Execution(e) => {
                let _ = writeln!(out, "    {name} --> {} : ok", e.next);
                let _ = writeln!(
                    out,
                    "    {name} --> {} : failure / {}",
                    outcome_id(&nodes, e.on_failure),
                    e.on_failure.as_str()
                );
            }
            State::Decision(d) => {
                for b in &d.branches {
                    let _ = writeln!(
                        out,
                        "    {name} --> {} : when {}",
                        b.next,
                        mermaid_text(&b.pointer)
                    );
                }
                let _ = writeln!(out, "    {name} --> {} : otherwise", d.otherwise);
            }
            State::Terminal => {
                let _ = writeln!(out, "    {name} --> [*]");
            }
        }
    }
    for (_, id, _) in &nodes {
        let _ = writeln!(out, "    {id} --> [*]");
    }

    for (name, e) in sop.execution_states() {
        let f = facts(records, &e.tool);
        match f.class {
            Some(SideEffectClass::Compensatable) => {
                let _ = writeln!(out, "    class {name} compensatable");
                let inverse = f.inverse.unwrap_or("its inverse");
                let _ = writeln!(
                    out,
                    "    note right of {name} : compensatable, undone by {inverse} on rollback"
                );
            }
            Some(SideEffectClass::Supersede) => {
                let _ = writeln!(out, "    class {name} supersede");
                let _ = writeln!(
                    out,
                    "    note right of {name} : supersede, marked superseded on rollback"
                );
            }
            _ => {}
        }
    }
    for (_, id, _) in &nodes {
        let _ = writeln!(out, "    class {id} failure");
    }
    out
}

/// Text safe in a Mermaid description or label: no `:`, `;`, `#` or line breaks.
fn mermaid_text(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ':' | ';' | '#' => ' ',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

/// A DOT double-quoted string.
fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Graphviz DOT.
pub fn dot(sop: &Sop, records: &[ToolRecord]) -> String {
    let mut out = String::new();
    let nodes = outcome_nodes(sop);
    let _ = writeln!(out, "digraph {} {{", q(&sop.sop_id));
    let _ = writeln!(
        out,
        "  label={}; labelloc=t; rankdir=LR;",
        q(&format!("SOP {} {}", sop.sop_id, sop.version))
    );
    out.push_str("  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=10];\n");
    let mut start = "__start".to_string();
    while sop.states.contains_key(&start) {
        start.push('_');
    }
    let _ = writeln!(out, "  {} [shape=point, label=\"\"];", q(&start));

    for (name, state) in &sop.states {
        let attrs = match state {
            State::Execution(e) => {
                let f = facts(records, &e.tool);
                let mut label = format!("{name}\n{}", e.tool);
                if let Some(c) = f.class {
                    let _ = write!(label, " · {}", c.as_str());
                }
                if e.require_per_url_authorization {
                    label.push_str("\neach URL authorized");
                }
                for (p, s) in &e.constraints {
                    let _ = write!(label, "\n{p} ⊨ {s}");
                }
                match f.class {
                    Some(SideEffectClass::Compensatable) => {
                        let _ = write!(
                            label,
                            "\nundone by {} on rollback",
                            f.inverse.unwrap_or("its inverse")
                        );
                        format!(
                            "label={}, style=\"rounded,filled\", fillcolor=\"#fff3cd\", \
                             color=\"#b8860b\", penwidth=2, class=\"compensatable\"",
                            q(&label)
                        )
                    }
                    Some(SideEffectClass::Supersede) => {
                        label.push_str("\nmarked superseded on rollback");
                        format!(
                            "label={}, style=\"rounded,filled\", fillcolor=\"#e2e3f5\", \
                             color=\"#4b4ba8\", penwidth=2, class=\"supersede\"",
                            q(&label)
                        )
                    }
                    _ => format!("label={}", q(&label)),
                }
            }
            State::Decision(_) => format!("shape=diamond, style=\"\", label={}", q(name)),
            State::Terminal => format!("shape=doublecircle, style=\"\", label={}", q(name)),
        };
        let _ = writeln!(out, "  {} [{attrs}];", q(name));
    }
    for (_, id, label) in &nodes {
        let _ = writeln!(
            out,
            "  {} [shape=octagon, style=filled, fillcolor=\"#f8d7da\", color=\"#a71d2a\", label={}, class=\"failure\"];",
            q(id),
            q(label)
        );
    }

    let _ = writeln!(out, "  {} -> {};", q(&start), q(&sop.start));
    for (name, state) in &sop.states {
        match state {
            State::Execution(e) => {
                let _ = writeln!(out, "  {} -> {} [label=\"ok\"];", q(name), q(&e.next));
                let _ = writeln!(
                    out,
                    "  {} -> {} [label={}, style=dashed, color=\"#a71d2a\"];",
                    q(name),
                    q(outcome_id(&nodes, e.on_failure)),
                    q(&format!("failure: {}", e.on_failure.as_str()))
                );
            }
            State::Decision(d) => {
                for b in &d.branches {
                    let schema = serde_json::to_string(&b.schema).unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "  {} -> {} [label={}];",
                        q(name),
                        q(&b.next),
                        q(&format!("{}\n{schema}", b.pointer))
                    );
                }
                let _ = writeln!(
                    out,
                    "  {} -> {} [label=\"otherwise\", style=dotted];",
                    q(name),
                    q(&d.otherwise)
                );
            }
            State::Terminal => {}
        }
    }
    out.push_str("}\n");
    out
}
