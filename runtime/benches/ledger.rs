//! Ledger appends per second: in memory, and SQLite with `synchronous=FULL` and `NORMAL`, at
//! concurrency 1 and 64. A governed call is two appends (intent, outcome), so calls/s is half the
//! appends/s that criterion reports as `elem/s`.
//!
//! `cargo bench -p escepine-runtime --bench ledger`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::record::Record;
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_testkit::ledger as ledger_support;
use tokio::runtime::Runtime;

/// Time `total` appends made by `concurrency` tasks, each alternating intent and outcome.
fn appends(
    rt: &Runtime,
    ledger: &Arc<dyn Ledger>,
    concurrency: u64,
    total: u64,
    records: &Arc<[Record; 2]>,
) -> Duration {
    rt.block_on(async {
        let started = Instant::now();
        let tasks: Vec<_> = (0..concurrency)
            .map(|t| {
                let ledger = ledger.clone();
                let records = records.clone();
                let share = total / concurrency + u64::from(t < total % concurrency);
                tokio::spawn(async move {
                    for i in 0..share {
                        ledger
                            .append(records[(i % 2) as usize].clone())
                            .await
                            .expect("append");
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task");
        }
        started.elapsed()
    })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let records: Arc<[Record; 2]> = Arc::new([
        ledger_support::intent(1, Some("run-1")),
        ledger_support::outcome(1),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");

    let mut group = c.benchmark_group("ledger_append");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));

    let stores: Vec<(&str, Arc<dyn Ledger>)> = vec![
        ("memory", Arc::new(MemoryLedger::new())),
        (
            "sqlite_full",
            Arc::new(
                SqliteLedger::open(dir.path().join("full.db"), Durability::Full).expect("open"),
            ),
        ),
        (
            "sqlite_normal",
            Arc::new(
                SqliteLedger::open(dir.path().join("normal.db"), Durability::Normal).expect("open"),
            ),
        ),
    ];
    for (name, ledger) in &stores {
        for concurrency in [1u64, 64] {
            group.bench_with_input(
                BenchmarkId::new(*name, concurrency),
                &concurrency,
                |b, &concurrency| {
                    b.iter_custom(|iters| appends(&rt, ledger, concurrency, iters, &records))
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
