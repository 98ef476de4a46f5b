//! `escepine run` and `escepine resume`: an SOP run through the governed path, each recorded
//! event printed as it is committed, then the final status.
//!
//! Exit statuses (both commands):
//!
//! | status | meaning |
//! |---|---|
//! | 0 | the run completed (reached a terminal state) |
//! | 1 | the registry, the SOP, the entities, the overlay or the proposals file is invalid |
//! | 2 | usage (a malformed principal, say) |
//! | 8 | the run waits: a step's call needs a person's approval (its call id is printed alone on a line before the run's status; `escepine approve CALL_ID` or `reject`, then `escepine resume RUN`) |
//! | 10 | the run halted (a step failed with `halt`) |
//! | 11 | the run escalated (`halt_and_escalate`, or a compensation that could not finish) |
//! | 12 | the run was compensated (a step failed with `compensate`; every completed step undone) |
//! | 13 | the run was cancelled (Ctrl-C) and compensated |
//! | 14 | the run could not be driven: ledger unavailable, unknown run, inconsistent journal, an SOP that changed since the run started. A run stopped so can be resumed. |

use std::path::{Path, PathBuf};
use std::sync::Arc;

use escepine_contract::Principal;
use serde_json::{json, Value};

use escepine_ledger::entry::Committed;
use escepine_ledger::record::Transition;
use escepine_registry::sop::Sop;
use escepine_runtime::sop::CancelToken;
use escepine_runtime::sop::Engine;
use escepine_runtime::sop::Journal;
use escepine_runtime::sop::RunObserver;
use escepine_runtime::sop::RunOptions;
use escepine_runtime::sop::RunOutcome;
use escepine_runtime::sop::ScriptedPlanner;
use escepine_runtime::sop::SopRunError;
use escepine_runtime::telemetry::TraceContext;
use escepine_runtime::Runtime;

use crate::args::{RegistryArgs, RuntimeArgs};
use crate::error::{CliError, CliResult};
use crate::exit::{self, NOT_DRIVEN};
use crate::io::Io;
use crate::telemetry::Wants;

/// Arguments of `escepine run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The SOP file.
    #[arg(value_name = "SOP")]
    sop: PathBuf,
    #[command(flatten)]
    runtime: RunRuntimeArgs,
    /// The principal every call of the run is made for, e.g. 'Agent::"researcher"'.
    #[arg(long)]
    principal: String,
    /// Scripted proposals: a JSON object mapping each execution state to its payload (or to a
    /// list of payloads, one per visit). Recorded with the run, so `resume` finds it.
    #[arg(long, value_name = "FILE")]
    proposals: Option<PathBuf>,
    /// The run id (default: a fresh random one).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

/// Arguments of `escepine resume`.
#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// The run id (printed by `escepine run`; `escepine ledger show` lists runs).
    #[arg(value_name = "RUN")]
    run: String,
    #[command(flatten)]
    runtime: RunRuntimeArgs,
    /// The SOP file (default: the file recorded when the run started).
    #[arg(long, value_name = "FILE")]
    sop: Option<PathBuf>,
    /// Scripted proposals (default: the file recorded when the run started).
    #[arg(long, value_name = "FILE")]
    proposals: Option<PathBuf>,
}

/// What both commands need to build the runtime: the registry and the shared runtime flags,
/// the ledger being the run's journal.
#[derive(Debug, clap::Args)]
#[command(mut_arg("ledger", |a| a.help("The SQLite evidence ledger (the run's journal)")))]
struct RunRuntimeArgs {
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    runtime: RuntimeArgs,
}

/// Start a run and drive it to its end.
pub(crate) fn exec(args: &RunArgs, io: &mut Io<'_>) -> CliResult {
    let principal: Principal = args
        .principal
        .parse()
        .map_err(|e| CliError::new(exit::USAGE, e))?;
    // Started before the runtime is built; flushed when the command ends.
    let _watch = args.runtime.runtime.telemetry.start(Wants::default())?;
    let prepared = (|| {
        let runtime = build_runtime(&args.runtime)?;
        // Recorded with the run, so `resume` finds it from any directory.
        let sop_path = std::fs::canonicalize(&args.sop).unwrap_or_else(|_| args.sop.clone());
        let sop = load_sop(&sop_path, &runtime)?;
        let (planner, meta) = match &args.proposals {
            Some(path) => {
                let planner = ScriptedPlanner::load(path).map_err(invalid)?;
                let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                (planner, json!({ "proposals": abs.display().to_string() }))
            }
            None => (ScriptedPlanner::new(), Value::Null),
        };
        Ok((runtime, sop, planner, meta))
    })();
    let (runtime, sop, planner, meta) = prepared?;
    let options = RunOptions {
        run_id: args.run_id.clone(),
        meta,
        cancel: CancelToken::new(),
        // The caller's trace, which the run's span continues.
        trace: TraceContext::from_env(),
    };
    drive(io, runtime, sop, planner, |engine, cancel| {
        let options = RunOptions { cancel, ..options };
        Box::pin(async move { engine.run_with(&principal, options).await })
    })
}

/// Resume an interrupted run and drive it to its end.
pub(crate) fn resume(args: &ResumeArgs, io: &mut Io<'_>) -> CliResult {
    let _watch = args.runtime.runtime.telemetry.start(Wants::default())?;
    let prepared = (|| {
        let runtime = build_runtime(&args.runtime)?;
        let journal = Journal::load(&**runtime.ledger(), &args.run).map_err(not_driven)?;
        let recorded = |key: &str| {
            journal
                .started
                .meta
                .get(key)
                .and_then(Value::as_str)
                .map(PathBuf::from)
        };
        let sop_path = args
            .sop
            .clone()
            .or_else(|| journal.started.sop_source.as_ref().map(PathBuf::from))
            .ok_or_else(|| {
                invalid("the run recorded no SOP file; name it with --sop FILE".to_string())
            })?;
        let sop = load_sop(&sop_path, &runtime)?;
        let planner = match args.proposals.clone().or_else(|| recorded("proposals")) {
            Some(path) => ScriptedPlanner::load(&path).map_err(invalid)?,
            None => ScriptedPlanner::new(),
        };
        Ok((runtime, sop, planner))
    })();
    let (runtime, sop, planner) = prepared?;
    let run_id = args.run.clone();
    drive(io, runtime, sop, planner, move |engine, cancel| {
        Box::pin(async move { engine.resume_with(&run_id, cancel).await })
    })
}

type RunFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<RunOutcome, SopRunError>>>>;

/// Build the engine, start the run, print each event as it is committed, cancel on Ctrl-C.
fn drive(
    io: &mut Io<'_>,
    runtime: Runtime,
    sop: Sop,
    planner: ScriptedPlanner,
    start: impl FnOnce(Engine, CancelToken) -> RunFuture,
) -> CliResult {
    let rt = crate::args::async_runtime(NOT_DRIVEN)?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let calls_on = runtime.clone();
    let engine = match Engine::builder(runtime, sop, Arc::new(planner))
        .observer(Arc::new(Printer(tx)))
        .build()
    {
        Ok(e) => e,
        Err(e) => return Err(CliError::new(exit::INVALID, e)),
    };
    let cancel = CancelToken::new();
    let result = rt.block_on(async {
        let run = start(engine, cancel.clone());
        tokio::pin!(run);
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        let mut interrupted = false;
        let outcome = loop {
            tokio::select! {
                Some(line) = rx.recv() => {
                    let _ = writeln!(io.out, "{line}");
                    let _ = io.out.flush();
                }
                r = &mut ctrl_c, if !interrupted => {
                    interrupted = true;
                    if r.is_ok() {
                        let _ = writeln!(io.err, "interrupted: cancelling the run (its completed steps are compensated)");
                        cancel.cancel();
                    }
                }
                r = &mut run => {
                    while let Ok(line) = rx.try_recv() {
                        let _ = writeln!(io.out, "{line}");
                    }
                    break r;
                }
            }
        };
        crate::args::settle(&calls_on).await;
        outcome
    });
    match result {
        Ok(outcome) => {
            // A waiting call's id alone on a line, as `escepine call` prints it.
            for call_id in &outcome.waiting {
                let _ = writeln!(io.out, "{call_id}");
                let _ = writeln!(
                    io.err,
                    "step {} waits for approval: escepine approve {call_id} (or reject), then \
                     escepine resume {}",
                    outcome.state.as_deref().unwrap_or("?"),
                    outcome.run_id
                );
            }
            let _ = writeln!(io.out, "run {} {}", outcome.run_id, outcome.status);
            if let Some(f) = &outcome.failure {
                let kind = serde_json::to_value(f.kind).unwrap_or(Value::Null);
                let _ = writeln!(
                    io.err,
                    "step {} failed ({}): {}",
                    outcome.state.as_deref().unwrap_or("?"),
                    kind.as_str().unwrap_or("?"),
                    f.message
                );
            }
            if let Some(e) = &outcome.escalation {
                let text = serde_json::to_string(e).unwrap_or_default();
                let _ = writeln!(io.err, "escalation: {text}");
            }
            // The run's end is printed: its status is all that is left.
            match outcome.status.exit_code() {
                exit::OK => Ok(()),
                code => Err(CliError::code(code)),
            }
        }
        Err(e) => Err(CliError::new(NOT_DRIVEN, e)),
    }
}

/// Sends each committed event to the printing loop, one line each.
struct Printer(tokio::sync::mpsc::UnboundedSender<String>);

impl RunObserver for Printer {
    fn on_transition(&self, t: &Transition, entry: &Committed) {
        let mut line = format!("{:>5}  {}", entry.seq, t.event);
        if t.event == escepine_runtime::sop::events::RUN_STARTED
            || t.event == escepine_runtime::sop::events::RUN_RESUMED
        {
            line = format!("run {}\n{line}", t.run_id);
        }
        if let Some(s) = &t.state {
            line.push_str("  ");
            line.push_str(s);
        }
        if !t.data.is_null() {
            line.push_str("  ");
            line.push_str(&t.data.to_string());
        }
        // The printing loop outlives the run; a closed channel only loses output.
        let _ = self.0.send(line);
    }
}

fn build_runtime(args: &RunRuntimeArgs) -> Result<Runtime, CliError> {
    let registry = escepine_policy::load(&args.registry.sources())
        .map_err(|d| CliError::new(exit::INVALID, d.render().trim_end()))?;
    // Images are fetched before the run starts (never inside a call).
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| not_driven(format!("cannot start the async runtime: {e}")))?
        .block_on(args.runtime.build(registry, NOT_DRIVEN))
}

fn load_sop(path: &Path, runtime: &Runtime) -> Result<Sop, CliError> {
    escepine_registry::sop::load(path, runtime.registry())
        .map_err(|d| CliError::new(exit::INVALID, d.render().trim_end()))
}

fn invalid(e: impl std::fmt::Display) -> CliError {
    CliError::new(exit::INVALID, e)
}

fn not_driven(e: impl std::fmt::Display) -> CliError {
    CliError::new(NOT_DRIVEN, e)
}
