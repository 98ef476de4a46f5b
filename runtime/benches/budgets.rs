//! What a budget check adds to the governed path: the same calls with and without a budget
//! that never trips (`calls` in a one-minute window and `concurrent`, both far above what the
//! run reaches), on the durable SQLite ledger (`synchronous=FULL`, group commit), at
//! concurrency 1 and 64, reported as calls per second.
//!
//! Run: `cargo bench -p escepine-runtime --features in-process --bench budgets`.

use escepine_testkit::bench::catalog;
use escepine_testkit::bench::concurrent;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use catalog::catalog;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use escepine_contract::Principal;
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::Durability;
use escepine_policy::BoundRegistry;
use escepine_runtime::budget::Budgets;
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::Runtime;
use serde_json::{json, Value};

const TOOL: &str = "tool_042";

fn runtime(registry: BoundRegistry, dir: &Path, budgets: Budgets) -> Runtime {
    let mut exec = InProcessExecutor::new();
    for r in registry.records() {
        exec = exec.with_tool(r.tool_id().to_string(), |_: &Value| Ok(json!({})));
    }
    let ledger = SqliteLedger::open(dir.join("ledger.db"), Durability::Full).expect("sqlite");
    Runtime::builder(registry)
        .ledger(Arc::new(ledger))
        .executor(Arc::new(exec))
        .budgets(budgets)
        .build()
        .expect("runtime")
}

fn bench(c: &mut Criterion) {
    let principal = Principal::agent("alice");
    let payload = json!({"url": "https://docs.example.org/guide/intro?lang=en", "max_depth": 2, "render": true});
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let (_catalog, registry) = catalog(10);
    let never_trips = Budgets::from_value(
        &json!({"budgets": [{
            "id": "never-trips", "principal": "Agent::\"alice\"", "tool": TOOL,
            "calls": 1_000_000_000u64, "per_s": 60, "concurrent": 1_000_000
        }]}),
        Path::new("budgets.json"),
        &registry,
    )
    .expect("budgets");
    let mut group = c.benchmark_group("budget check (SQLite, synchronous=FULL, group commit)");
    group.throughput(Throughput::Elements(1));
    for (name, budgets) in [
        ("no budget", Budgets::default()),
        ("one budget", never_trips),
    ] {
        let dir = tempfile::tempdir().expect("tmp");
        let runtime = runtime(registry.clone(), dir.path(), budgets);
        for concurrency in [1usize, 64] {
            group.bench_function(format!("{name}, concurrency {concurrency}"), |b| {
                b.iter_custom(|iters| {
                    concurrent::time_calls(
                        &rt,
                        &runtime,
                        &principal,
                        TOOL,
                        &payload,
                        concurrency,
                        iters,
                    )
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
