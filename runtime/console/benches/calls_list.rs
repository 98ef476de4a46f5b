//! The calls list of a large ledger: `GET /calls` pages served by a real console on loopback
//! over a SQLite ledger of 100,000 entries (50,000 calls, each an intent and an outcome), timed
//! end to end by a plain HTTP client; p50 and p99 of each page kind. Beside them, in the same
//! run, what a console that re-read the ledger per request would pay: the whole chain read and
//! folded. Each list request is also checked to read no stored row (the index is current).
//!
//! `cargo bench -p escepine-console --bench calls_list` measures (`ESCEPINE_BENCH_ITERS`
//! timed requests per row, 200 by default); started without `--bench` (as `cargo test
//! --benches` does), it is a smoke run over 2,000 entries, each row once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_console::{Console, ConsoleConfig};
use escepine_identity::tokens::Tokens;
use escepine_ledger::location::LedgerLocation;
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_mcp::auth::Authenticator;
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::Runtime;
use escepine_testkit::bench::sandboxed::{iters, smoke};
use escepine_testkit::ledger::{intent, outcome};

const TOKEN: &str = "bench-token-0123456789";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let entries: usize = if smoke() { 2_000 } else { 100_000 };
    let n = iters(200);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let ledger = Arc::new(SqliteLedger::open(&path, Durability::Normal).expect("ledger"));
    let start = Instant::now();
    for c in 0..entries / 2 {
        ledger.append(intent(c, None)).await.expect("intent");
        ledger.append(outcome(c)).await.expect("outcome");
    }
    println!(
        "calls_list: {entries} entries written in {:.1} s",
        start.elapsed().as_secs_f64()
    );

    let (_catalog, registry) = escepine_testkit::bench::catalog::catalog(10);
    let runtime = Runtime::builder(registry)
        .ledger(ledger.clone() as Arc<dyn Ledger>)
        .executor(Arc::new(InProcessExecutor::new()))
        .build()
        .expect("runtime");
    let mut tokens = Tokens::default();
    tokens.insert(TOKEN, "Agent::\"alice\"".parse().expect("principal"));
    let location: LedgerLocation = path
        .to_str()
        .expect("utf-8 path")
        .parse()
        .expect("location");
    let console = Console::new(
        runtime,
        Authenticator::Tokens(Arc::new(tokens)),
        ConsoleConfig::new(location),
    );
    let start = Instant::now();
    {
        let c = console.clone();
        tokio::task::spawn_blocking(move || c.start_checks())
            .await
            .expect("start");
    }
    println!(
        "calls_list: verified and indexed at start in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let serving = console.clone();
    tokio::spawn(async move { serving.serve(listener, std::future::pending()).await });
    let http = reqwest::Client::new();

    let mid = entries / 2;
    let rows: [(&str, String); 5] = [
        ("first page", "/calls".into()),
        (
            "first page, filtered (tool, result)",
            "/calls?tool=kb_fetch&result=ok".into(),
        ),
        (
            "a page deep in the list (cursor)",
            format!("/calls?before={mid}"),
        ),
        (
            "a filter nothing matches (every call scanned)",
            "/calls?principal=Agent%3A%3A%22nobody%22".into(),
        ),
        (
            "one call's page, proof included",
            format!("/calls/call-{}", entries / 4),
        ),
    ];
    println!(
        "{:<48} {:>10} {:>10} {:>12}",
        "row", "p50 ms", "p99 ms", "rows read"
    );
    let mut list_p50 = Duration::ZERO;
    for (name, path) in &rows {
        let url = format!("{base}{path}");
        let mut times = Vec::with_capacity(n);
        let read_before = ledger.rows_read();
        for _ in 0..n {
            let t = Instant::now();
            let r = http
                .get(&url)
                .bearer_auth(TOKEN)
                .send()
                .await
                .expect("request");
            assert!(r.status().is_success(), "{path}: {}", r.status());
            let body = r.text().await.expect("body");
            times.push(t.elapsed());
            assert!(body.contains("<main>"), "{path}: a page");
        }
        let read = (ledger.rows_read() - read_before) / n as u64;
        if path.starts_with("/calls?") || path == "/calls" {
            assert_eq!(read, 0, "{name}: a list request reads no stored row");
        }
        times.sort();
        if *name == "first page" {
            list_p50 = percentile(&times, 0.5);
        }
        println!(
            "{:<48} {:>10.2} {:>10.2} {:>12}",
            name,
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            read
        );
    }
    // The same ledger read and folded whole, as a console without an index would per request.
    let naive_n = n.min(10);
    let mut times = Vec::with_capacity(naive_n);
    for _ in 0..naive_n {
        let t = Instant::now();
        let mut index = escepine_console::index::Index::new();
        index.refresh(&*ledger).expect("fold");
        let page = index
            .page(&escepine_console::index::Filter::default(), None, 50)
            .expect("page");
        times.push(t.elapsed());
        assert_eq!(page.rows.len(), 50.min(entries / 2));
    }
    times.sort();
    let naive = percentile(&times, 0.5);
    println!(
        "{:<48} {:>10.2} {:>10.2} {:>12}",
        "whole ledger read and folded (no index)",
        ms(naive),
        ms(percentile(&times, 0.99)),
        entries
    );
    println!(
        "calls_list: the indexed first page is {:.0}x faster than re-reading the ledger",
        naive.as_secs_f64() / list_p50.as_secs_f64()
    );
}
