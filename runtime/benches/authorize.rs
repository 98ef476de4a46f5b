//! Cedar authorization of one single-URL call: the naive floor against [`Authorizer`].
//!
//! The naive floor is what a straightforward integration does per call: build the context
//! JSON (`{"input": payload, "url": facts}`), `Context::from_json_value` with the schema,
//! `Request::new` with the schema, and `is_authorized` on the whole policy set. Ours is
//! [`Authorizer::authorize`]: the context built from restricted expressions along the
//! tool's Cedar type, a request without schema validation (the construction guarantees
//! conformance), and the policy set sliced per action at start-up.
//!
//! Two catalogs of 100 synthetic single-URL tools: with 10 policies, and with 1,000 policies
//! (ten `like` forbids per tool, plus the group policies). Run: `cargo bench -p escepine-runtime
//! --bench authorize`.

use escepine_testkit::bench::catalog;

use std::hint::black_box;
use std::time::Duration;

use catalog::{catalog, Naive, TOOLS};
use criterion::{criterion_group, criterion_main, Criterion};
use escepine_contract::Principal;
use escepine_policy::authorize::Authorizer;
use serde_json::json;

fn bench(c: &mut Criterion) {
    let principal = Principal::agent("alice");
    let payload = json!({"url": "https://docs.example.org/guide/intro?lang=en", "max_depth": 2, "render": true});
    let tool = "tool_042";
    let minimal = json!({"url": "https://docs.example.org/", "max_depth": 1});
    // The larger catalog is a tenth of its size in a smoke run.
    for count in [10usize, escepine_testkit::bench::scaled(1000)] {
        let (_dir, registry) = catalog(count);
        let ours = Authorizer::new(registry.cedar(), registry.records(), None).expect("authorizer");
        let naive = Naive {
            registry: &registry,
            entities: ours.entities(),
            cedar: cedar_policy::Authorizer::new(),
        };
        // Both allow the call, and agree on a denied one.
        assert!(naive.authorize(&principal, tool, &payload));
        assert!(ours.authorize(&principal, tool, &payload).allowed());
        assert_eq!(ours.validates_requests(tool), Some(false));
        let linkedin = json!({"url": "https://www.LinkedIn.com./in/x"});
        assert!(!naive.authorize(&principal, tool, &linkedin));
        assert!(!ours.authorize(&principal, tool, &linkedin).allowed());
        eprintln!(
            "{count} policies: {tool} is evaluated against {} of them after slicing",
            ours.policy_count(tool).unwrap_or(0)
        );

        let mut group = c.benchmark_group(format!(
            "authorize one-URL call, {count} policies, {TOOLS} tools"
        ));
        group.bench_function("naive floor (from_json_value + schema, full set)", |b| {
            b.iter(|| black_box(naive.authorize(&principal, tool, black_box(&payload))))
        });
        group.bench_function("Authorizer::authorize", |b| {
            b.iter(|| black_box(ours.authorize(&principal, tool, black_box(&payload))))
        });
        group.bench_function("Authorizer::authorize (minimal payload)", |b| {
            b.iter(|| black_box(ours.authorize(&principal, tool, black_box(&minimal))))
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(40)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
