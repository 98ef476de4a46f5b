//! What-if replay: recorded requests re-authorized per second against a candidate policy set.
//!
//! A SQLite ledger of 10,000 calls (an intent and an outcome each: 20,000 entries) of the
//! synthetic catalog's 100 single-URL tools, recorded under its three group policies (one call
//! in twenty reads a LinkedIn page and is denied; one in seven reads a host one of the per-tool
//! forbids names). Replayed against candidates of 10 and of 1,000 policies:
//!
//! - `replay` alone: the intents already in memory, each re-authorized with [`Authorizer`];
//! - `LedgerLocation::verified_entries + replay`: what `escepine policy replay` does with the file — read the
//!   rows once, verify the hash chain, decode the bodies, then replay.
//!
//! A smoke run (without `--bench`) records a tenth of the calls. criterion's `elem/s` is recorded
//! requests per second. Run: `cargo bench -p escepine-runtime
//! --bench replay`.

use escepine_testkit::bench::catalog;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use catalog::{catalog, TOOLS};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use escepine_contract::{Principal, SideEffectClass};
use escepine_ledger::entry::{canonical_json, sha256_hex};
use escepine_ledger::location::LedgerLocation;
use escepine_ledger::record::{CallResult, Intent, Outcome, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_policy::authorize::Authorizer;
use escepine_runtime::replay::replay;
use serde_json::json;

/// Recorded calls (a tenth in a smoke run).
fn calls() -> usize {
    escepine_testkit::bench::scaled(10_000)
}

/// The URL call `n` reads.
fn url(n: usize) -> String {
    if n.is_multiple_of(20) {
        format!("https://www.linkedin.com/in/person-{n}")
    } else if n.is_multiple_of(7) {
        // `tool-XXX-block-k` forbids `*.blocked-k.example` to tool `k % 100`.
        let k = n % 997;
        format!("https://a.blocked-{k}.example/page/{n}")
    } else {
        format!("https://docs{}.example.org/guide/{n}?lang=en", n % 50)
    }
}

/// The ledger of [`calls`] calls decided by `enforced`, written to `path`.
fn record(path: &std::path::Path, enforced: &Authorizer) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let ledger: Arc<dyn Ledger> =
        Arc::new(SqliteLedger::open(path, Durability::Normal).expect("a ledger"));
    let principal = Principal::agent("alice");
    let records: Vec<(Record, Record)> = (0..calls())
        .map(|n| {
            let tool = format!("tool_{:03}", n % TOOLS);
            let k = n % 997;
            let tool = if n.is_multiple_of(7) && !n.is_multiple_of(20) {
                format!("tool_{:03}", k % TOOLS)
            } else {
                tool
            };
            let payload = json!({"url": url(n), "max_depth": n % 6, "render": n % 2 == 0});
            let d = enforced.authorize(&principal, &tool, &payload);
            let intent = Record::Intent(Intent {
                call_id: format!("call-{n}"),
                idempotency_key: format!("key-{n}"),
                run_id: None,
                step: None,
                compensates: None,
                tool_id: tool,
                tool_version: "1.0.0".into(),
                class: SideEffectClass::ReadOnly,
                principal: principal.to_string(),
                payload_hash: sha256_hex(canonical_json(&payload)),
                payload,
                decision: escepine_runtime::decision::recorded(&d),
                policy_ids: d.policy_ids().to_vec(),
                reasons: Vec::new(),
                overlay: Vec::new(),
                egress_origins: Vec::new(),
                deadline_ms: Some(1000),
                credential_exemptions: Vec::new(),
                files: Vec::new(),
                attestation: None,
                shadow: None,
                approval: None,
                flow: None,
                flow_state: None,
            });
            let outcome = Record::Outcome(Outcome {
                call_id: format!("call-{n}"),
                result: if d.allowed() {
                    CallResult::Ok
                } else {
                    CallResult::Denied
                },
                attempts: Vec::new(),
                output_hash: None,
                output: d.allowed().then(|| json!({"markdown": "# page"})),
                error: None,
                budget: None,
                entered: None,
            });
            (intent, outcome)
        })
        .collect();
    rt.block_on(async {
        for chunk in records.chunks(500) {
            let tasks: Vec<_> = chunk
                .iter()
                .cloned()
                .map(|(i, o)| {
                    let ledger = Arc::clone(&ledger);
                    tokio::spawn(async move {
                        ledger.append(i).await.expect("intent appended");
                        ledger.append(o).await.expect("outcome appended");
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("appended");
            }
        }
    });
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let (_enforced_dir, enforced) = catalog(3);
    let enforced =
        Authorizer::new(enforced.cedar(), enforced.records(), None).expect("an authorizer");
    record(&path, &enforced);
    let location = LedgerLocation::Sqlite(path.clone());
    let entries = location.verified_entries().expect("the ledger verifies");
    let calls = calls();
    assert_eq!(entries.len(), 2 * calls);

    for count in [10usize, 1000] {
        let (_dir, registry) = catalog(count);
        let candidate =
            Authorizer::new(registry.cedar(), registry.records(), None).expect("an authorizer");
        let report = replay(&entries, &candidate);
        assert_eq!(report.replayed, calls);
        eprintln!(
            "{count} policies: {} of {calls} requests flip ({} widened)",
            report.flips.len(),
            report.widened()
        );
        let mut group = c.benchmark_group(format!(
            "replay {calls} recorded requests, {count} policies"
        ));
        group.throughput(Throughput::Elements(calls as u64));
        group.sample_size(10);
        group.bench_function("replay", |b| {
            b.iter(|| black_box(replay(black_box(&entries), &candidate)))
        });
        group.bench_function("verified_entries + replay (SQLite)", |b| {
            b.iter(|| {
                let entries = location.verified_entries().expect("verifies");
                black_box(replay(&entries, &candidate))
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
