//! What exporting the governed path's spans costs: the same calls (an in-process no-op tool,
//! the memory ledger, the catalog's 10 policies) with the OTLP pipeline's `tracing` layer
//! switched off and on, at concurrency 1 and 64, in one run.
//!
//! - without export: the spans are made (`tracing`) and go nowhere;
//! - with OTLP/HTTP export: every span becomes an OpenTelemetry span, batched (queue 65,536,
//!   every 200 ms) and sent as protobuf to a sink on loopback that reads each body and answers
//!   200.
//!
//! Metrics are recorded (into the same meter provider) in both rows. After the run the bench
//! prints how many spans were exported and dropped.
//!
//! Run: `cargo bench -p escepine-telemetry --bench export`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use escepine_contract::Principal;
use escepine_ledger::memory::MemoryLedger;
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::Runtime;
use escepine_telemetry::{Telemetry, TelemetryConfig};
use escepine_testkit::bench::catalog::catalog;
use escepine_testkit::bench::concurrent;
use serde_json::{json, Value};
use tracing_subscriber::filter::dynamic_filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer, Registry};

const TOOL: &str = "tool_042";

/// A loopback OTLP/HTTP sink: reads every body, counts its bytes, answers 200 (an empty
/// `Export*ServiceResponse`).
async fn sink(bytes: Arc<AtomicU64>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let take = move |body: axum::body::Bytes| {
        let bytes = Arc::clone(&bytes);
        async move {
            bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
            (
                [("content-type", "application/x-protobuf")],
                Vec::<u8>::new(),
            )
        }
    };
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(take.clone()))
        .route("/v1/metrics", axum::routing::post(take));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn runtime() -> (tempfile::TempDir, Runtime) {
    let (dir, registry) = catalog(10);
    let mut exec = InProcessExecutor::new();
    for r in registry.records() {
        exec = exec.with_tool(r.tool_id().to_string(), |_: &Value| Ok(json!({})));
    }
    let runtime = Runtime::builder(registry)
        .ledger(Arc::new(MemoryLedger::new()))
        .executor(Arc::new(exec))
        .build()
        .expect("runtime");
    (dir, runtime)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let received = Arc::new(AtomicU64::new(0));
    let endpoint = rt.block_on(sink(Arc::clone(&received)));
    // Read by the SDK's batch processor when the pipeline starts.
    std::env::set_var("OTEL_BSP_MAX_QUEUE_SIZE", "65536");
    std::env::set_var("OTEL_BSP_SCHEDULE_DELAY", "200");
    let config =
        TelemetryConfig::resolve(Some(&endpoint), Some("http/protobuf"), |_| None).expect("config");
    let telemetry = Telemetry::start(config).expect("telemetry");
    // The pipeline's layer behind a switch read for every span (the row without export pays
    // that one load, nothing else of the layer).
    let exporting = Arc::new(AtomicBool::new(false));
    let switch = Arc::clone(&exporting);
    let layer = telemetry
        .layer::<Registry>()
        .expect("a collector is configured")
        .with_filter(dynamic_filter_fn(move |_, _| {
            switch.load(Ordering::Relaxed)
        }));
    tracing_subscriber::registry().with(layer).init();
    let on = |on: bool| exporting.store(on, Ordering::Relaxed);

    let (_dir, governed) = runtime();
    let principal = Principal::agent("alice");
    let payload = json!({"url": "https://docs.example.org/guide/intro?lang=en", "max_depth": 2, "render": true});
    rt.block_on(governed.dispatch(&principal, TOOL, payload.clone()))
        .expect("allowed");

    let mut group = c.benchmark_group("governed path, spans exported or not");
    group.throughput(Throughput::Elements(1));
    for concurrency in [1usize, 64] {
        for (name, export) in [("without export", false), ("with OTLP/HTTP export", true)] {
            group.bench_function(format!("{name}, concurrency {concurrency}"), |b| {
                on(export);
                b.iter_custom(|iters| {
                    concurrent::time_calls(
                        &rt,
                        &governed,
                        &principal,
                        TOOL,
                        &payload,
                        concurrency,
                        iters,
                    )
                });
                on(false);
            });
        }
    }
    group.finish();
    telemetry.shutdown().expect("flush");
    let counts = telemetry.span_counts();
    println!(
        "spans exported {}, dropped {}; the sink read {} bytes",
        counts.exported(),
        counts.dropped(),
        received.load(Ordering::Relaxed)
    );
    assert!(counts.exported() > 0, "the exporting rows exported nothing");
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
