//! What the evidence a runtime reads back and records costs, side by side in one run:
//!
//! - `approve`: one waiting call approved and run (an in-process no-op tool), on a durable
//!   SQLite ledger already holding 1,000 or 10,000 entries — the intent read back is checked
//!   against the chain before it runs (`escepine_ledger::trust`), and with a trusted checkpoint the
//!   whole chain is verified and matched too;
//! - a failed sandboxed attempt: `escepine-hostile http` in a fresh sandbox makes two admitted
//!   requests and one refused through its proxy, then exits 1; the call is recorded `failed`
//!   with its requests and refusals (memory ledger).
//!
//! `cargo bench -p escepine-runtime --features in-process --bench evidence` (as root: real
//! namespaces). `ESCEPINE_BENCH_ITERS` sets the timed runs per row (default 200 for approve,
//! 50 for the sandboxed rows). Without `--bench` (as `cargo test --benches` runs it) each row
//! runs once, on ledgers a tenth of their size. Prints p50 and p99 per row.

use escepine_testkit::bench::sandboxed as support;
use escepine_testkit::bench::scaled;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use escepine_contract::Principal;
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_policy::BoundRegistry;
use escepine_registry::registry::Sources;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_runtime::Runtime;
use escepine_sandbox::LinuxBackend;
use serde_json::{json, Value};
use support::{summarise, testkit_bin};

const POLICIES: &str = r#"
@id("alice-reads")
permit (principal == Agent::"alice", action == Action::"note_read", resource);
@id("alice-sends-with-approval")
@approval("a reviewer confirms every message")
permit (principal == Agent::"alice", action == Action::"note_send", resource);
@id("bob-approves")
permit (principal == Agent::"bob", action == Action::"approve", resource);
@id("alice-fetches")
permit (principal == Agent::"alice", action == Action::"failing_fetch", resource);
"#;

fn text_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["text"],
           "properties": {"text": {"type": "string"}}})
}

/// The registry of the bench's tools, `hostile` as the failing fetcher's binary.
fn registry(dir: &Path, hostile: &Path) -> BoundRegistry {
    let records = dir.join("records");
    std::fs::create_dir_all(&records).expect("mkdir");
    let builders = [
        RecordBuilder::new("note_read")
            .input_schema(text_schema())
            .output_schema(json!({"type": "object", "additionalProperties": false}))
            .binary(Path::new("/bin/cat")),
        RecordBuilder::new("note_send")
            .class(escepine_contract::SideEffectClass::Supersede)
            .input_schema(text_schema())
            .output_schema(json!({"type": "object", "additionalProperties": false}))
            .binary(Path::new("/bin/cat")),
        RecordBuilder::new("failing_fetch")
            .input_schema(json!({"type": "object", "additionalProperties": false,
                "required": ["requests"], "properties": {
                "then_exit": {"type": "integer", "minimum": 0, "maximum": 255},
                "requests": {"type": "array", "items": {"type": "object",
                    "additionalProperties": false, "required": ["method", "target", "path"],
                    "properties": {"method": {"type": "string"}, "target": {"type": "string"},
                                   "path": {"type": "string"}}}}}}))
            .output_schema(json!({"type": "object", "additionalProperties": false,
                "properties": {"results": {"type": "array", "items": {"type": "string"}}}}))
            .binary(hostile)
            .args(["http"])
            .egress(["127.0.0.1"]),
    ];
    for b in builders {
        let v = b.to_json();
        let id = v["tool_id"].as_str().expect("an id").to_string();
        std::fs::write(records.join(format!("{id}.json")), v.to_string()).expect("write");
    }
    std::fs::write(dir.join("envelope.json"), r#"{"egress": ["127.0.0.1"]}"#).expect("write");
    escepine_policy::load(
        &Sources::new()
            .records(&records)
            .policy_text(dir.join("p.cedar"), POLICIES)
            .envelope(dir.join("envelope.json")),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}

fn in_process(
    registry: BoundRegistry,
    ledger: Arc<dyn Ledger>,
) -> escepine_runtime::RuntimeBuilder {
    let exec = InProcessExecutor::new()
        .with_tool("note_read".to_string(), |_: &Value| Ok(json!({})))
        .with_tool("note_send".to_string(), |_: &Value| Ok(json!({})));
    Runtime::builder(registry)
        .ledger(ledger)
        .executor(Arc::new(exec))
}

/// `iters` approvals of fresh waiting calls on a ledger of `entries` entries; only the
/// approvals are timed.
fn approvals(
    rt: &tokio::runtime::Runtime,
    name: &str,
    registry: &BoundRegistry,
    entries: usize,
    checkpointed: bool,
    iters: usize,
) {
    let dir = tempfile::tempdir().expect("tmp");
    let ledger: Arc<dyn Ledger> =
        Arc::new(SqliteLedger::open(dir.path().join("ledger.db"), Durability::Full).expect("db"));
    let alice = Principal::agent("alice");
    let bob = Principal::agent("bob");
    let asking = in_process(registry.clone(), Arc::clone(&ledger))
        .build()
        .expect("runtime");
    rt.block_on(async {
        for _ in 0..entries / 2 {
            asking
                .dispatch(&alice, "note_read", json!({"text": "x"}))
                .await
                .expect("a read");
        }
    });
    let approving = trusting(registry, &ledger, checkpointed);
    let mut samples = Vec::with_capacity(iters);
    rt.block_on(async {
        for _ in 0..iters {
            let waiting = asking
                .call(
                    &alice,
                    "note_send",
                    json!({"text": "hi"}),
                    Default::default(),
                )
                .await
                .expect("a waiting call");
            let start = Instant::now();
            let report = approving
                .approve(&bob, waiting.call_id())
                .await
                .expect("approved");
            samples.push(start.elapsed());
            assert!(report.output().is_some(), "{report}");
        }
    });
    summarise(name, samples);
}

/// The approving runtime: with a signed checkpoint of the ledger as it is now, when
/// `checkpointed`.
fn trusting(registry: &BoundRegistry, ledger: &Arc<dyn Ledger>, checkpointed: bool) -> Runtime {
    let builder = in_process(registry.clone(), Arc::clone(ledger));
    let builder = if checkpointed {
        use escepine_ledger::checkpoint::{self, SignerKey};
        use escepine_ledger::proof::LedgerTree;
        let key = SignerKey::generate("example.com/bench").expect("a key");
        let tree = LedgerTree::of_entries(&ledger.entries().expect("entries")).expect("a tree");
        let note = tree
            .checkpoint(key.verifier().name())
            .sign(&key)
            .expect("signed");
        builder.trusted_checkpoints(vec![checkpoint::open(&note, key.verifier()).expect("open")])
    } else {
        builder
    };
    builder.build().expect("runtime")
}

/// A loopback HTTP server answering `200 OK` to every request, on its own thread.
fn page_server() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    port
}

fn main() {
    // The sandboxes' init is this program, as in every program that starts sandboxes.
    escepine_sandbox::init::dispatch();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let hostile = testkit_bin("escepine-hostile", "ESCEPINE_HOSTILE");
    let dir = tempfile::tempdir().expect("tmp");
    let registry = registry(dir.path(), &hostile);

    let iters = support::iters(200);
    println!("approve: {iters} timed approvals per row (SQLite, synchronous=FULL)");
    // Ledgers a tenth of their size in a smoke run.
    let (small, large) = (scaled(1_000), scaled(10_000));
    for entries in [small, large] {
        approvals(
            &rt,
            &format!("approve, {entries} entries"),
            &registry,
            entries,
            false,
            iters,
        );
    }
    approvals(
        &rt,
        &format!("approve, {large} entries, trusted checkpoint"),
        &registry,
        large,
        true,
        iters,
    );

    let iters = support::iters(50);
    let warm = support::warm_up(5);
    println!("\nfailed sandboxed attempt: {iters} timed calls (memory ledger, no warm pool)");
    let port = page_server();
    let run_dir = support::run_dir();
    let backend = LinuxBackend::new()
        .expect("this bench dispatches the sandbox init")
        .with_run_dir(run_dir.path());
    let runtime = Runtime::builder(registry)
        .ledger(Arc::new(MemoryLedger::new()))
        .executor(Arc::new(SandboxExecutor::with_backend(Arc::new(backend))))
        .build()
        .expect("runtime");
    let payload = json!({"then_exit": 1, "requests": [
        {"method": "GET", "target": format!("127.0.0.1:{port}"), "path": "/a"},
        {"method": "GET", "target": format!("127.0.0.1:{port}"), "path": "/b"},
        {"method": "GET", "target": "registry.npmjs.org:443", "path": "/"},
    ]});
    let alice = Principal::agent("alice");
    let mut samples = Vec::with_capacity(iters);
    rt.block_on(async {
        for i in 0..iters + warm {
            let start = Instant::now();
            let report = runtime
                .call(&alice, "failing_fetch", payload.clone(), Default::default())
                .await
                .expect("a recorded call");
            let took = start.elapsed();
            assert_eq!(
                report.kind(),
                escepine_runtime::CallKind::Failed,
                "{report}"
            );
            if i >= warm {
                samples.push(took);
            }
        }
    });
    summarise("failed attempt, 2 admitted + 1 refused", samples);
}
