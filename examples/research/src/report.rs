//! The summary: every call as the ledger recorded it, the denial, where the outputs are, the
//! ledger's verification and the timings; printed, and written as `summary.json`.

use escepine_ledger::calls;
use escepine_ledger::entry::Entry;
use escepine_ledger::record::Decision;
use serde::Serialize;
use serde_json::Value;

/// One governed call, from its intent and outcome entries.
#[derive(Debug, Clone, Serialize)]
pub struct CallRow {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The SOP state, for a step of the run.
    pub step: Option<String>,
    /// The URL the call read, for a page read.
    pub url: Option<String>,
    /// What Cedar decided.
    pub decision: Decision,
    /// The determining policies.
    pub policy_ids: Vec<String>,
    /// How the call ended (`ok`, `denied`, …), if its outcome is recorded.
    pub result: Option<String>,
    /// Attempts made.
    pub attempts: usize,
    /// Their total duration, microseconds (the tool's time, sandbox included).
    pub attempt_us: u64,
    /// The intent entry's hash.
    pub intent: String,
    /// The outcome entry's hash.
    pub outcome: Option<String>,
}

/// Every call in the ledger with an intent, in the order each first appears (the ledger's call
/// view folds the entries).
pub fn calls(entries: &[Entry]) -> Vec<CallRow> {
    calls::fold(entries.iter().cloned())
        .into_iter()
        .filter_map(|call| {
            let intent = call.intent?;
            let i = intent.record;
            let outcome = call.outcome;
            Some(CallRow {
                url: i
                    .payload
                    .get("url")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                call_id: i.call_id,
                tool: i.tool_id,
                step: i.step,
                decision: i.decision,
                policy_ids: i.policy_ids,
                result: outcome
                    .as_ref()
                    .map(|o| o.record.result.as_str().to_string()),
                attempts: outcome.as_ref().map_or(0, |o| o.record.attempts.len()),
                attempt_us: outcome
                    .as_ref()
                    .map_or(0, |o| o.record.attempts.iter().map(|a| a.duration_us).sum()),
                intent: intent.hash,
                outcome: outcome.map(|o| o.hash),
            })
        })
        .collect()
}

/// Wall-clock figures of the job, in milliseconds unless named otherwise.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timing {
    /// From the program's start to the summary.
    pub wall_ms: f64,
    /// Before the run: tool binaries checked, services started, registry loaded, Cedar bound,
    /// executor chosen.
    pub startup_ms: f64,
    /// Of which: choosing the executor (the sandbox probe).
    pub executor_choice_ms: f64,
    /// The SOP run, from `run_started` to `run_ended`.
    pub run_ms: f64,
    /// Governed calls timed (`execute_tool` spans).
    pub calls: u64,
    /// Their total duration (each from resolution to the committed outcome).
    pub call_ms: f64,
    /// Of which: the tools' attempts (executor, sandbox or process, included), from the ledger.
    pub tool_ms: f64,
    /// Of which: the governed path's own stages (`call_ms - tool_ms`).
    pub governed_ms: f64,
    /// The rest of the run: SOP events committed, the planner, the decision.
    pub engine_ms: f64,
    /// Peak resident set of this process (`VmHWM`), KiB; tools run in their own processes.
    pub peak_rss_kib: Option<u64>,
}

/// Print a table of the calls.
pub fn print_calls(rows: &[CallRow]) {
    println!(
        "  {:<3} {:<21} {:<9} {:<7} {:<24} {:>4} {:>9}  target",
        "#", "tool", "step", "result", "policies", "att", "tool ms"
    );
    for (n, r) in rows.iter().enumerate() {
        let target = r.url.clone().unwrap_or_default();
        println!(
            "  {:<3} {:<21} {:<9} {:<7} {:<24} {:>4} {:>9.1}  {}",
            n + 1,
            r.tool,
            r.step.as_deref().unwrap_or("(planner)"),
            r.result.as_deref().unwrap_or(match r.decision {
                Decision::AwaitingApproval => "held",
                _ => "?",
            }),
            r.policy_ids.join(","),
            r.attempts,
            r.attempt_us as f64 / 1000.0,
            target
        );
    }
}
