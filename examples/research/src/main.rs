//! `research`: the research agent, offline, end to end.
//!
//! ```sh
//! cargo run --release -p escepine-example-research            # outputs under target/research/
//! cargo run --release -p escepine-example-research -- --out DIR --query "…"
//! ```
//!
//! The program is linked against the typed client that `build.rs` generates from the catalog
//! (`tools/records`, `tools/policies`, `tools/envelope.json`, `tools/sops`) and runs the catalog's
//! `research` SOP — search → read → decide → publish a note → assemble the deliverable — with a
//! planner written in Rust ([`planner`]). Everything it needs runs on this machine:
//!
//! 1. it serves, on one loopback listener, a bundled corpus of pages ([`corpus`]), a search
//!    endpoint of SearXNG's JSON shape indexed with BM25, and the note service ([`services`]);
//! 2. it loads the catalog compiled into it (`catalog::REGISTRY`: no records directory is read
//!    at run time) into a [`Runtime`] whose deployment envelope is the catalog's (with its
//!    `public`) plus `127.0.0.1`, through an explicit [`Overlay`] (checked against that envelope
//!    and recorded in every intent of the tools it widens): the listener's one port for the
//!    services' tools (search, notes), whose base URLs reach them as their declared secrets; and,
//!    for the page reads, `public_addresses: ["127.0.0.1"]`, so that `firecrawl_scrape`'s
//!    `authorized-urls` admits, per call, exactly the origin of the page URL Cedar authorized —
//!    the egress proxy's refusal of every other loopback origin stays as it is;
//! 3. it runs the SOP in the sandbox when the sandbox works here, else with the process
//!    executor ([`executor::choose`], printed), every call through the governed path into a
//!    SQLite ledger;
//! 4. one search result claims a page on `www.linkedin.com`; its read is denied by the policy
//!    `page-read-no-linkedin` before any request, so it appears only as a denial;
//! 5. it writes the deliverable the SOP assembled (`deliverable.md`, and the tool's whole output
//!    as `deliverable.json`), verifies the ledger's hash chain, and prints a summary (also
//!    `summary.json`). The Cedar entities it ran with are written as `entities.json`, so that
//!    `escepine policy replay --entities` can re-authorize the ledger's requests as they were
//!    made.
//!
//! Exit status: 0 when the run completed, the deliverable was written and the ledger verifies;
//! 1 otherwise, with the reason.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use escepine_contract::{Principal, SopDefinition, SopStep};
use escepine_ledger::record::Decision;
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::Durability;
use escepine_ledger::verify;
use escepine_registry::egress::EgressEntry;
use escepine_runtime::overlay::Overlay;
use escepine_runtime::secrets::MapSecrets;
use escepine_runtime::sop::{Engine, RunOptions, RunStatus};
use escepine_runtime::Runtime;
use escepine_telemetry::{Telemetry, TelemetryConfig};
use serde_json::{json, Value};

mod corpus;
mod executor;
mod injection;
mod planner;
mod progress;
mod report;
mod services;
mod timing;

/// The code `registry-build` generated from the catalog: one module per tool (typed `Input` and
/// `Output`), the Cedar action markers, the typed `Client`, and the typed SOP steps.
#[allow(dead_code, missing_docs, clippy::all)]
mod catalog;

use catalog::deliverable_assemble;
use catalog::sops::research;

/// The question asked by default.
const DEFAULT_QUERY: &str = "railway interlocking and fail-safe signalling design";

/// The principal: an agent of the editors team (`tools/policies/publishing.cedar` grants the
/// writing tools to that team).
const AGENT: &str = "researcher";

/// Run the research SOP offline against the bundled corpus and write the deliverable.
#[derive(Debug, Parser)]
#[command(name = "research", version)]
struct Args {
    /// Where the deliverable, the ledger and the summary are written (relative paths are taken
    /// from the current directory). The ledger there is replaced.
    #[arg(long, default_value = "target/research")]
    out: PathBuf,
    /// The research question.
    #[arg(long, default_value = DEFAULT_QUERY)]
    query: String,
    /// How many further search results the agent reads after the SOP's own read.
    #[arg(long, default_value_t = 5)]
    further: usize,
    /// Which executor runs the tools.
    #[arg(long, value_enum, default_value_t = executor::Choice::Auto)]
    executor: executor::Choice,
    /// Export the run's spans and metrics over OTLP to this collector (else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`; nothing is exported without either).
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// `grpc` or `http/protobuf` (else `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`).
    #[arg(long, value_name = "PROTOCOL")]
    otlp_protocol: Option<String>,
}

fn main() -> ExitCode {
    // First, before any thread or the async runtime: started as its sandboxes' init, this
    // program runs the init and never returns; started as `escepine-catalog` (the catalog
    // records' command, pointed at this program), it serves that one tool call.
    escepine_sandbox::init::dispatch();
    if executor::started_as_catalog() {
        return escepine_catalog::serve::main();
    }
    let started = Instant::now();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("research: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(started))
}

async fn run(started: Instant) -> ExitCode {
    let args = Args::parse();
    // Started before the runtime is built (its metrics come from the global meter provider).
    let telemetry = match telemetry(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("research: {e}");
            return ExitCode::FAILURE;
        }
    };
    let clock = timing::install(telemetry.as_deref());
    let ended = research(&args, started, &clock).await;
    if let Some(t) = telemetry {
        // Flushed before the program exits (bounded; what a collector that is down does not
        // take is dropped).
        let flushed = tokio::task::spawn_blocking(move || t.shutdown()).await;
        if let Ok(Err(e)) = flushed {
            eprintln!("research: {e}");
        }
    }
    match ended {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("research: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The OTLP pipeline `--otlp-endpoint` or the `OTEL_*` variables ask for, if any.
fn telemetry(args: &Args) -> Result<Option<Arc<Telemetry>>, String> {
    let config =
        TelemetryConfig::from_env(args.otlp_endpoint.as_deref(), args.otlp_protocol.as_deref())
            .map_err(|e| e.to_string())?;
    if config.otlp.is_none() {
        return Ok(None);
    }
    Telemetry::start(config)
        .map(|t| Some(Arc::new(t)))
        .map_err(|e| e.to_string())
}

/// The whole job.
async fn research(
    args: &Args,
    started: Instant,
    clock: &Arc<timing::CallClock>,
) -> Result<(), String> {
    let progress = progress::Progress::new();
    let out = &args.out;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let ledger_path = out.join("ledger.db");
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let p = PathBuf::from(format!("{}{suffix}", ledger_path.display()));
        if p.exists() {
            std::fs::remove_file(&p).map_err(|e| format!("cannot replace {}: {e}", p.display()))?;
        }
    }

    // The catalog's tools: served by this program.
    let bin_dir = executor::serve_catalog_from_self(&out.join("bin"))?;
    progress.line(format_args!(
        "tools: {} served by this program ({})",
        executor::CATALOG_BIN,
        bin_dir.join(executor::CATALOG_BIN).display()
    ));

    // The loopback services.
    let services = services::start()
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    progress.line(format_args!(
        "services on {}: corpus /corpus/, search /searx/search (BM25), notes /notes/",
        services.origin
    ));

    // The catalog compiled into this program (no records directory is read), under this
    // deployment's envelope.
    let envelope = deployment_envelope(out)?;
    let registry = escepine_policy::load(
        &escepine_policy::embedded::sources(&catalog::REGISTRY)
            .envelope_text(&envelope.0, envelope.1),
    )
    .map_err(|d| format!("the compiled catalog does not load:\n{}", d.render()))?;
    let sop = registry
        .sop(research::Sop::ID)
        .filter(|s| s.version.to_string() == research::Sop::VERSION)
        .cloned()
        .ok_or_else(|| {
            format!(
                "the compiled catalog holds no SOP {}@{} (the one its types were generated for)",
                research::Sop::ID,
                research::Sop::VERSION
            )
        })?;

    // The overlay: this listener's one port for the services' tools; for the page readers,
    // loopback treated as public, so that each read reaches the origin Cedar authorized in it.
    let authority: EgressEntry = services
        .authority()
        .parse()
        .map_err(|e| format!("{}: {e}", services.authority()))?;
    let admitted = ["web_search", "note_publish", "note_retract"];
    let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
    let overlay = admitted
        .iter()
        .fold(Overlay::default(), |o, t| o.admit(t, authority.clone()))
        .public_address(loopback);
    progress.line(format_args!(
        "overlay: {} admitted for {}; public_addresses [{loopback}] for the page reads' \
         authorized-urls (envelope: tools/envelope.json + 127.0.0.1)",
        services.authority(),
        admitted.join(", ")
    ));
    let secrets = MapSecrets(
        [
            ("SEARXNG_BASE_URL", services.searx_base()),
            ("NOTES_BASE_URL", services.notes_base()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
    );

    let choose_started = Instant::now();
    let chosen = executor::choose(args.executor, &bin_dir).await?;
    let executor_choice_ms = ms(choose_started.elapsed());
    progress.line(format_args!("executor: {} — {}", chosen.name, chosen.why));

    let entities = entities();
    write(&out.join("entities.json"), &entities.to_string())?;
    let ledger = SqliteLedger::open(&ledger_path, Durability::Full)
        .map_err(|e| format!("cannot open the ledger {}: {e}", ledger_path.display()))?;
    let runtime = Runtime::builder(registry)
        .ledger(Arc::new(ledger))
        .executor(chosen.executor)
        .secrets(Arc::new(secrets))
        .entities(entities)
        .overlay(overlay)
        .build()
        .map_err(|e| format!("the runtime does not build: {e}"))?;

    // The run.
    let principal = Principal::agent(AGENT);
    let steps = progress::Steps::default();
    let planner = Arc::new(planner::ResearchPlanner::new(
        runtime.clone(),
        principal.clone(),
        args.query.clone(),
        args.further,
        progress.clone(),
        Arc::clone(&steps),
    ));
    let notebook = planner.notebook();
    let engine = Engine::builder(runtime.clone(), sop, planner)
        .observer(Arc::new(progress::Observer::new(progress.clone(), steps)))
        .build()
        .map_err(|e| format!("the SOP does not bind: {e}"))?;
    let startup_ms = ms(started.elapsed());
    let run_started = Instant::now();
    let outcome = engine
        .run_with(
            &principal,
            RunOptions {
                meta: json!({"program": "examples/research", "query": args.query}),
                ..RunOptions::default()
            },
        )
        .await
        .map_err(|e| format!("the run could not be driven: {e}"))?;
    let run_ms = ms(run_started.elapsed());
    // The last calls' sandboxes are destroyed behind their results: nothing of them outlives
    // the program.
    runtime.settled().await;
    let traffic = services.traffic();
    let live_notes = services.live_notes();
    let services_collector = services.collector().to_string();
    services.stop().await;

    // The outputs.
    let entries = runtime
        .ledger()
        .entries()
        .map_err(|e| format!("cannot read the ledger back: {e}"))?;
    let rows = report::calls(&entries);
    let verified = verify::verify_path(&ledger_path, None);
    let notebook = notebook.lock().await.clone();
    let deliverable: Option<deliverable_assemble::Output> = outcome
        .data
        .get(research::Assemble::STATE)
        .and_then(|s| s.get("output"))
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| format!("the deliverable does not parse: {e}"))?;
    let deliverable_path = out.join("deliverable.md");
    let deliverable_json = out.join("deliverable.json");
    if let Some(d) = &deliverable {
        write(&deliverable_path, &d.content)?;
        let whole = serde_json::to_string_pretty(d).map_err(|e| e.to_string())?;
        write(&deliverable_json, &whole)?;
    }

    let tool_us: u64 = rows.iter().map(|r| r.attempt_us).sum();
    let call_ms = clock.total_us() as f64 / 1000.0;
    let tool_ms = tool_us as f64 / 1000.0;
    let timing = report::Timing {
        wall_ms: ms(started.elapsed()),
        startup_ms,
        executor_choice_ms,
        run_ms,
        calls: clock.calls(),
        call_ms,
        tool_ms,
        governed_ms: call_ms - tool_ms,
        engine_ms: run_ms - call_ms,
        peak_rss_kib: timing::peak_rss_kib(),
    };

    // The summary.
    println!();
    println!(
        "run {} of SOP {}@{}: {}",
        outcome.run_id,
        research::Sop::ID,
        research::Sop::VERSION,
        outcome.status.as_str()
    );
    println!("calls ({}), as the ledger recorded them:", rows.len());
    report::print_calls(&rows);
    let denied: Vec<&report::CallRow> = rows
        .iter()
        .filter(|r| r.decision == Decision::Deny)
        .collect();
    for d in &denied {
        println!(
            "denied page: {} — {} by [{}], intent entry {}; nothing was sent",
            d.url.as_deref().unwrap_or("-"),
            d.tool,
            d.policy_ids.join(", "),
            d.intent
        );
    }
    for i in &notebook.injections {
        println!(
            "injected instruction on {}: the notes to {} — {} by [{}]; the collector received {} request(s)",
            i.page,
            services_collector,
            i.outcome,
            i.policy_ids.join(", "),
            traffic.collected.len()
        );
    }
    println!(
        "services: {} page(s) served, {} search(es), notes published {:?}, live {:?}",
        traffic.pages.len(),
        traffic.searches.len(),
        traffic.published,
        live_notes
    );
    if let Some(d) = &deliverable {
        println!(
            "deliverable: {} ({} sources, evidence index in {})",
            deliverable_path.display(),
            d.evidence_index.len(),
            deliverable_json.display()
        );
    }
    println!(
        "ledger: {} ({} entries)",
        ledger_path.display(),
        entries.len()
    );
    let verify_line = match &verified {
        Ok(r) => format!("intact: {} entries, head {}", r.entries, r.head),
        Err(e) => format!("FAILED: {e}"),
    };
    println!("ledger verify: {verify_line}");
    println!(
        "time: {:.0} ms wall ({:.0} ms start-up incl. {:.0} ms executor choice, {:.0} ms run); \
         {} governed calls took {:.1} ms: tools {:.1} ms, governed stages {:.1} ms; engine and \
         planner {:.1} ms; peak RSS {} KiB",
        timing.wall_ms,
        timing.startup_ms,
        timing.executor_choice_ms,
        timing.run_ms,
        timing.calls,
        timing.call_ms,
        timing.tool_ms,
        timing.governed_ms,
        timing.engine_ms,
        timing
            .peak_rss_kib
            .map_or_else(|| "?".to_string(), |k| k.to_string())
    );

    let summary = json!({
        "run_id": outcome.run_id,
        "status": outcome.status.as_str(),
        "query": args.query,
        "executor": {"name": chosen.name, "why": chosen.why},
        "deliverable": deliverable.as_ref().map(|_| deliverable_path.display().to_string()),
        "deliverable_json": deliverable.as_ref().map(|_| deliverable_json.display().to_string()),
        "ledger": ledger_path.display().to_string(),
        "verify": match &verified {
            Ok(r) => json!({"ok": true, "entries": r.entries, "head": r.head}),
            Err(e) => json!({"ok": false, "error": e.to_string()}),
        },
        "calls": rows,
        "reads": notebook.reads.iter().map(|r| json!({
            "url": r.url, "call_id": r.call_id, "outcome": r.outcome, "via": r.via})).collect::<Vec<_>>(),
        "denied": notebook.denied.iter().map(|d| json!({
            "url": d.url, "call_id": d.call_id, "policy_ids": d.policy_ids})).collect::<Vec<_>>(),
        "failed_reads": notebook.failed,
        "injections": notebook.injections.iter().map(|i| json!({
            "page": i.page, "url": i.url, "call_id": i.call_id, "outcome": i.outcome,
            "policy_ids": i.policy_ids})).collect::<Vec<_>>(),
        "services": {"pages_served": traffic.pages, "searches": traffic.searches,
                     "published": traffic.published, "retracted": traffic.retracted,
                     "not_found": traffic.not_found, "collector": services_collector,
                     "collected": traffic.collected},
        "timing": timing,
    });
    let summary_path = out.join("summary.json");
    write(
        &summary_path,
        &serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?,
    )?;
    println!("summary: {}", summary_path.display());

    if outcome.status != RunStatus::Completed {
        let why = outcome
            .failure
            .map(|f| format!("{:?}: {}", f.kind, f.message))
            .unwrap_or_default();
        return Err(format!(
            "the run ended {} at {} {why}",
            outcome.status.as_str(),
            outcome.state.unwrap_or_default()
        ));
    }
    if deliverable.is_none() {
        return Err("the run completed without a deliverable".into());
    }
    verified.map_err(|e| format!("the ledger does not verify: {e}"))?;
    Ok(())
}

/// The deployment envelope: the catalog's (`tools/envelope.json`, compiled in) plus
/// `127.0.0.1`, written beside the outputs; its path and text. The overlay then admits one port
/// of it for the services' tools, and treats `127.0.0.1` as public (which the catalog's
/// `public` entry allows) for the page reads.
fn deployment_envelope(out: &Path) -> Result<(PathBuf, String), String> {
    let catalog = catalog::REGISTRY
        .envelope
        .ok_or("the catalog was compiled without an envelope")?;
    let mut envelope: Value =
        serde_json::from_str(catalog.text).map_err(|e| format!("{}: {e}", catalog.path))?;
    let egress = envelope
        .get_mut("egress")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| format!("{} has no `egress` list", catalog.path))?;
    if !egress.iter().any(|e| e == "127.0.0.1") {
        egress.push(json!("127.0.0.1"));
    }
    let path = out.join("deployment-envelope.json");
    let text = envelope.to_string();
    write(&path, &text)?;
    Ok((path, text))
}

/// Cedar entities: the researcher is a member of `Team::"editors"`.
fn entities() -> Value {
    json!([
        {"uid": {"type": "Team", "id": "editors"}, "attrs": {}, "parents": []},
        {"uid": {"type": "Agent", "id": AGENT}, "attrs": {},
         "parents": [{"type": "Team", "id": "editors"}]}
    ])
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
