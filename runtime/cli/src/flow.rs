//! `escepine flow show LEDGER FLOW` and `escepine flow declassify LEDGER FLOW LABEL`: a flow's
//! state as the ledger gives it, and a label removed from it by an approver.

use std::fmt::Write as _;

use escepine_contract::{FlowId, Principal};
use escepine_ledger::flows::{recompute, Flow, FlowIndex};
use escepine_ledger::location::LedgerLocation;
use escepine_ledger::store::Durability;
use escepine_policy::authorize::Authorizer;
use escepine_runtime::flows::{declassify, Declassify};
use serde_json::{json, Value};

use crate::args::{async_runtime, RegistryArgs};
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

/// Arguments of `escepine flow`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Print a flow's state (labels, origins, tools, calls), the calls that brought each label
    /// and the declassifications recorded. Exit 0; 1 when the ledger cannot be read.
    Show {
        /// The ledger: a SQLite file or a PostgreSQL database.
        #[arg(value_name = "PATH|URL")]
        ledger: LedgerLocation,
        /// The flow: an id a call named, an SOP run id, or `principal:Agent::"id"` (a
        /// principal's default flow).
        flow: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove a label from a flow, as an approver Cedar permits `Action::"declassify"` on
    /// `Flow::"<flow>"` (never a principal whose calls brought the label); recorded in the
    /// ledger. Exit 0 recorded, 3 refused, 1 invalid registry, 2 usage.
    Declassify {
        /// The ledger: a SQLite file or a PostgreSQL database.
        #[arg(value_name = "PATH|URL")]
        ledger: LedgerLocation,
        /// The flow.
        flow: String,
        /// The label to remove.
        label: String,
        /// Why (recorded).
        #[arg(long)]
        reason: String,
        /// The approver, e.g. 'Agent::"reviewer"'.
        #[arg(long)]
        principal: String,
        #[command(flatten)]
        registry: RegistryArgs,
        /// Cedar entities JSON (principals, their attributes and parents).
        #[arg(long, value_name = "FILE")]
        entities: Option<std::path::PathBuf>,
    },
}

/// Run `escepine flow …`.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    match &args.command {
        Sub::Show { ledger, flow, json } => show(ledger, flow, *json, io),
        Sub::Declassify {
            ledger,
            flow,
            label,
            reason,
            principal,
            registry,
            entities,
        } => {
            let principal: Principal = principal
                .parse()
                .map_err(|e| CliError::new(exit::USAGE, e))?;
            let registry = registry.load()?;
            let entities = entities
                .as_deref()
                .map(|p| crate::args::read_json(p, exit::INVALID))
                .transpose()?;
            let authorizer =
                Authorizer::new(registry.cedar(), registry.records(), entities.as_ref())
                    .map_err(|e| CliError::new(exit::INVALID, e))?;
            let ledger = ledger
                .open(Durability::Full)
                .map_err(|e| CliError::new(exit::INVALID, e))?;
            let flow = FlowId::recorded(flow.as_str());
            let mut index = FlowIndex::new();
            index
                .refresh(&*ledger)
                .map_err(|e| CliError::new(exit::INVALID, e))?;
            let rt = async_runtime(exit::INVALID)?;
            let done = rt.block_on(declassify(
                &*ledger,
                &authorizer,
                index.flow(&flow),
                Declassify {
                    flow: &flow,
                    label,
                    principal: &principal,
                    parents: &[],
                    reason,
                },
            ));
            match done {
                Ok(d) => {
                    let _ = writeln!(
                        io.out,
                        "declassified `{label}` in flow `{flow}`: entry {} ({}), permitted by {}",
                        d.entry.seq,
                        d.entry.hash,
                        d.policy_ids.join(", ")
                    );
                    Ok(())
                }
                Err(e) if e.refused() => Err(CliError::new(exit::APPROVAL_REFUSED, e)),
                Err(e) => Err(CliError::new(exit::INVALID, e)),
            }
        }
    }
}

fn show(ledger: &LedgerLocation, flow: &str, json: bool, io: &mut Io<'_>) -> CliResult {
    let entries = ledger
        .read_entries()
        .map_err(|e| CliError::new(exit::INVALID, e))?;
    let flows = recompute(&entries).map_err(|e| CliError::new(exit::INVALID, e))?;
    let id = FlowId::recorded(flow);
    let found = flows.get(&id).cloned().unwrap_or_default();
    if json {
        let _ = writeln!(io.out, "{:#}", as_json(&id, &found));
    } else {
        let _ = write!(io.out, "{}", as_text(&id, &found));
    }
    Ok(())
}

fn as_json(id: &FlowId, flow: &Flow) -> Value {
    let sources: serde_json::Map<String, Value> = flow
        .sources
        .iter()
        .map(|(label, s)| {
            let calls: Vec<Value> = s
                .iter()
                .map(|s| {
                    json!({"call_id": s.call_id, "tool": s.tool_id,
                           "principal": s.principal, "entry": s.seq})
                })
                .collect();
            (label.clone(), Value::Array(calls))
        })
        .collect();
    let declassified: Vec<Value> = flow
        .declassified
        .iter()
        .map(|(seq, d)| {
            json!({"entry": seq, "label": d.label, "principal": d.principal,
                   "reason": d.reason, "policy_ids": d.policy_ids})
        })
        .collect();
    json!({
        "flow": id.as_str(),
        "state": {
            "labels": flow.state.labels,
            "origins": flow.state.origins,
            "tools": flow.state.tools,
            "calls": flow.state.calls,
        },
        "sources": sources,
        "declassified": declassified,
    })
}

fn as_text(id: &FlowId, flow: &Flow) -> String {
    let mut out = String::new();
    let s = &flow.state;
    let list = |items: &mut dyn Iterator<Item = &String>| {
        let v: Vec<&str> = items.map(String::as_str).collect();
        if v.is_empty() {
            "(none)".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(out, "flow {id}: {} call(s)", s.calls);
    let _ = writeln!(out, "  labels:  {}", list(&mut s.labels.iter()));
    let _ = writeln!(out, "  origins: {}", list(&mut s.origins.iter()));
    let tools: Vec<String> = s.tools.iter().map(|(t, n)| format!("{t} ×{n}")).collect();
    let _ = writeln!(
        out,
        "  tools:   {}",
        if tools.is_empty() {
            "(none)".into()
        } else {
            tools.join(", ")
        }
    );
    for (label, sources) in &flow.sources {
        let _ = writeln!(out, "  `{label}` brought by:");
        for src in sources {
            let _ = writeln!(
                out,
                "    call {} ({}, {}) at entry {}",
                src.call_id, src.tool_id, src.principal, src.seq
            );
        }
    }
    for (seq, d) in &flow.declassified {
        let _ = writeln!(
            out,
            "  `{}` declassified at entry {seq} by {} ({}): {}",
            d.label,
            d.principal,
            d.policy_ids.join(", "),
            d.reason
        );
    }
    out
}
