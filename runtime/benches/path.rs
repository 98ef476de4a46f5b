//! The whole governed path against the naive floor, in one run.
//!
//! - naive floor: what a straightforward integration pays per call before doing anything —
//!   `jsonschema` validation (a validator compiled once) plus raw Cedar (`Context::from_json_value`
//!   with the schema, `Request::new` with the schema, `is_authorized` on the full policy set);
//! - the governed path (`Runtime::dispatch`): resolve, input gate, sliced Cedar, intent and
//!   outcome entries hash-chained into an in-memory ledger, a no-op tool in process (feature
//!   `in-process`), output gate;
//! - the same with the durable SQLite ledger (`synchronous=FULL`, group commit) at concurrency 1
//!   and 64, reported as calls per second.
//!
//! Run: `cargo bench -p escepine-runtime --features in-process --bench path`.

use escepine_testkit::bench::catalog;
use escepine_testkit::bench::concurrent;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use catalog::{catalog, Naive};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use escepine_contract::Principal;
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_policy::authorize::Authorizer;
use escepine_policy::BoundRegistry;
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::Runtime;
use serde_json::{json, Value};

const TOOL: &str = "tool_042";

fn runtime(registry: BoundRegistry, ledger: Arc<dyn Ledger>) -> Runtime {
    let mut exec = InProcessExecutor::new();
    for r in registry.records() {
        exec = exec.with_tool(r.tool_id().to_string(), |_: &Value| Ok(json!({})));
    }
    Runtime::builder(registry)
        .ledger(ledger)
        .executor(Arc::new(exec))
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

    // The larger catalog is a tenth of its size in a smoke run.
    for count in [10usize, escepine_testkit::bench::scaled(1000)] {
        let (_dir, registry) = catalog(count);
        let input_schema = registry.get(TOOL).expect("tool").input_schema().clone();
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&input_schema)
            .expect("validator");
        let authorizer =
            Authorizer::new(registry.cedar(), registry.records(), None).expect("authorizer");
        let naive = Naive {
            registry: &registry,
            entities: authorizer.entities(),
            cedar: cedar_policy::Authorizer::new(),
        };
        let governed = runtime(registry.clone(), Arc::new(MemoryLedger::new()));
        assert!(validator.is_valid(&payload) && naive.authorize(&principal, TOOL, &payload));
        rt.block_on(governed.dispatch(&principal, TOOL, payload.clone()))
            .expect("allowed");

        let mut group = c.benchmark_group(format!("one-URL call, {count} policies, 100 tools"));
        group.bench_function("naive floor (jsonschema + raw Cedar, full set)", |b| {
            b.iter(|| {
                let ok = validator.is_valid(black_box(&payload))
                    && naive.authorize(&principal, TOOL, black_box(&payload));
                black_box(ok)
            })
        });
        group.bench_function("governed path (in-process no-op, memory ledger)", |b| {
            b.iter(|| {
                rt.block_on(governed.dispatch(&principal, TOOL, black_box(payload.clone())))
                    .expect("ok")
            })
        });
        group.finish();

        if count == 10 {
            let dir = tempfile::tempdir().expect("tmp");
            let durable = runtime(
                registry.clone(),
                Arc::new(
                    SqliteLedger::open(dir.path().join("ledger.db"), Durability::Full)
                        .expect("sqlite"),
                ),
            );
            let mut group =
                c.benchmark_group("durable ledger (SQLite, synchronous=FULL, group commit)");
            group.throughput(Throughput::Elements(1));
            for concurrency in [1usize, 64] {
                group.bench_function(format!("governed path, concurrency {concurrency}"), |b| {
                    b.iter_custom(|iters| {
                        concurrent::time_calls(
                            &rt,
                            &durable,
                            &principal,
                            TOOL,
                            &payload,
                            concurrency,
                            iters,
                        )
                    })
                });
            }
            group.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
