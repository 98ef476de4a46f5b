//! What deriving `context.flow` costs a governed call, and that the cost does not grow with the
//! flow's length.
//!
//! For each length N of prior calls in the flow (0, 10, 1,000, 100,000; the prior calls are
//! outcome entries appended to the ledger before the runtime starts, each bringing a label, an
//! origin and a tool into the flow), one runtime over a SQLite ledger (`synchronous=NORMAL`,
//! WAL) with the in-process executor:
//!
//! - **cold fold**: the first read of the flow's state by a runtime that has just started (it
//!   folds the whole chain once);
//! - **call**: then a governed call of the `count` tool of `tests/fixtures/flows` in that flow,
//!   timed one by one (p50, p99), and its ratio to the row N = 0;
//! - **empty flow**: the same call in a new, empty flow on the same ledger (what the call costs
//!   there without a flow's history), and the ratio of the two;
//! - **derive**: the derivation alone, as every call does it: two entries appended since the
//!   last read (a call's intent and outcome), then the flow's state read (folding them).
//!
//! Run: `cargo bench -p escepine-runtime --features in-process --bench flows` (`ESCEPINE_BENCH_ITERS`
//! sets the timed calls per row, 2,000 by default). Without `--bench` (as `cargo test --benches`
//! runs it) the lengths are 0, 10 and 100 and each row runs 5 times.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_contract::{FlowId, Principal};
use escepine_ledger::record::{CallResult, FlowEntry, Outcome, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::{CallOptions, Runtime};
use escepine_testkit::bench::smoke;
use serde_json::{json, Value};

fn registry() -> escepine_policy::BoundRegistry {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/flows");
    escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(fixtures.join("records"))
            .policies(fixtures.join("policies")),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}

fn runtime(ledger: Arc<dyn Ledger>) -> Runtime {
    let exec = InProcessExecutor::new()
        .with_tool("count", |p: &Value| Ok(json!({"text": p["n"].to_string()})));
    Runtime::builder(registry())
        .ledger(ledger)
        .executor(Arc::new(exec))
        .build()
        .expect("runtime")
}

/// An outcome of a call that ran in `flow`, bringing `untrusted-content`, origin `i % 50` and
/// tool `count`.
fn prior(flow: &FlowId, i: usize) -> Record {
    Record::Outcome(Outcome {
        call_id: format!("{i:032x}"),
        result: CallResult::Ok,
        attempts: Vec::new(),
        output_hash: None,
        output: None,
        error: None,
        budget: None,
        entered: Some(FlowEntry {
            flow: flow.clone(),
            tool_id: "count".into(),
            principal: "Agent::\"alice\"".into(),
            labels: vec!["untrusted-content".into()],
            origins: vec![format!("https://site-{}.example.org:443", i % 50)],
        }),
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

struct Row {
    n: usize,
    cold: Duration,
    call_p50: Duration,
    call_p99: Duration,
    empty_p50: Duration,
    derive_p50: Duration,
}

fn row(rt_tokio: &tokio::runtime::Runtime, n: usize, iters: usize) -> Row {
    let dir = tempfile::tempdir().expect("tmp");
    let ledger: Arc<dyn Ledger> = Arc::new(
        SqliteLedger::open(dir.path().join("ledger.db"), Durability::Normal).expect("sqlite"),
    );
    let flow = FlowId::named("bench").expect("id");
    rt_tokio.block_on(async {
        for i in 0..n {
            ledger.append(prior(&flow, i)).await.expect("append");
        }
    });
    let rt = runtime(Arc::clone(&ledger));
    let started = Instant::now();
    let state = rt.flow_state(&flow).expect("state");
    let cold = started.elapsed();
    assert_eq!(state.calls, n as u64);
    let alice = Principal::agent("alice");
    let opts = CallOptions {
        flow: Some(flow.clone()),
        ..CallOptions::default()
    };
    let warm = if smoke() { 1 } else { 50 };
    let mut calls = Vec::with_capacity(iters);
    rt_tokio.block_on(async {
        for i in 0..warm + iters {
            let started = Instant::now();
            let report = rt
                .call(&alice, "count", json!({"n": 1}), opts.clone())
                .await
                .expect("recorded");
            let took = started.elapsed();
            assert!(report.output().is_some(), "{report}");
            if i >= warm {
                calls.push(took);
            }
        }
    });
    // The same call in an empty flow (a new one each time) on the same ledger: what the call
    // costs there without a flow's history.
    let mut empty = Vec::with_capacity(iters);
    rt_tokio.block_on(async {
        for i in 0..iters {
            let opts = CallOptions {
                flow: Some(FlowId::named(&format!("empty-{i}")).expect("id")),
                ..CallOptions::default()
            };
            let started = Instant::now();
            let report = rt
                .call(&alice, "count", json!({"n": 1}), opts)
                .await
                .expect("recorded");
            empty.push(started.elapsed());
            assert!(report.output().is_some(), "{report}");
        }
    });
    // The derivation alone: two new entries, then the read that folds them.
    let mut derive = Vec::with_capacity(iters);
    rt_tokio.block_on(async {
        for i in 0..iters {
            ledger.append(prior(&flow, n + i)).await.expect("append");
            ledger
                .append(prior(&flow, n + i + 1))
                .await
                .expect("append");
            let started = Instant::now();
            let _ = rt.flow_state(&flow).expect("state");
            derive.push(started.elapsed());
        }
    });
    calls.sort();
    empty.sort();
    derive.sort();
    Row {
        n,
        cold,
        call_p50: percentile(&calls, 0.5),
        call_p99: percentile(&calls, 0.99),
        empty_p50: percentile(&empty, 0.5),
        derive_p50: percentile(&derive, 0.5),
    }
}

fn main() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let (sizes, iters): (&[usize], usize) = if smoke() {
        (&[0, 10, 100], 5)
    } else {
        let iters = std::env::var("ESCEPINE_BENCH_ITERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000);
        (&[0, 10, 1_000, 100_000], iters)
    };
    let rows: Vec<Row> = sizes.iter().map(|&n| row(&tokio, n, iters)).collect();
    let base = rows[0].call_p50;
    println!(
        "flows: a governed call of `count` in a flow with N prior calls (SQLite, synchronous=NORMAL, in-process executor, {iters} calls per row)"
    );
    println!(
        "{:>8}  {:>12}  {:>11}  {:>11}  {:>9}  {:>14}  {:>12}  {:>10}  {:>11}",
        "N",
        "cold fold ms",
        "call p50 µs",
        "call p99 µs",
        "/ N=0",
        "empty flow µs",
        "call / empty",
        "derive µs",
        "derive/call"
    );
    for r in &rows {
        println!(
            "{:>8}  {:>12.2}  {:>11.1}  {:>11.1}  {:>9.2}  {:>14.1}  {:>12.2}  {:>10.1}  {:>10.1}%",
            r.n,
            r.cold.as_secs_f64() * 1e3,
            us(r.call_p50),
            us(r.call_p99),
            r.call_p50.as_secs_f64() / base.as_secs_f64(),
            us(r.empty_p50),
            r.call_p50.as_secs_f64() / r.empty_p50.as_secs_f64(),
            us(r.derive_p50),
            100.0 * r.derive_p50.as_secs_f64() / r.call_p50.as_secs_f64()
        );
    }
}
