//! The console over an in-process runtime on a SQLite ledger (the flow fixtures' tools:
//! `fetch_page` brings `untrusted-content`, `notes_read` brings `private`), served on loopback
//! and asked by a plain HTTP client: a flow's labels, each declassification decided by Cedar
//! (the principal whose calls brought the label refused, a non-reviewer refused, a reviewer
//! recorded), and the calls list kept current without re-reading the ledger.

use std::path::Path;
use std::sync::Arc;

use escepine_console::{Console, ConsoleConfig};
use escepine_contract::{FlowId, Principal};
use escepine_identity::tokens::Tokens;
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_mcp::auth::Authenticator;
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::{CallOptions, Runtime};
use serde_json::{json, Value};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
const RITA: &str = "rita-token-0123456789a";

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/flows")
}

fn runtime(ledger: Arc<dyn Ledger>) -> Runtime {
    let f = fixtures();
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(f.join("records"))
            .policies(f.join("policies")),
    )
    .expect("the flow fixtures load");
    let entities: Value =
        serde_json::from_str(&std::fs::read_to_string(f.join("entities.json")).expect("entities"))
            .expect("entities JSON");
    let exec = InProcessExecutor::new()
        .with_tool("fetch_page", |p: &Value| {
            Ok(json!({"text": format!("page {}", p["url"])}))
        })
        .with_tool("notes_read", |_: &Value| Ok(json!({"text": "the notes"})))
        .with_tool("count", |p: &Value| Ok(json!({"text": p["n"].to_string()})));
    Runtime::builder(registry)
        .ledger(ledger)
        .executor(Arc::new(exec))
        .entities(entities)
        .build()
        .expect("runtime")
}

struct Served {
    base: String,
    runtime: Runtime,
    ledger: Arc<SqliteLedger>,
    _dir: tempfile::TempDir,
}

async fn serve() -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let ledger = Arc::new(SqliteLedger::open(&path, Durability::Normal).expect("ledger"));
    let runtime = runtime(ledger.clone());
    let mut tokens = Tokens::default();
    for (token, who) in [(ALICE, "alice"), (BOB, "bob"), (RITA, "rita")] {
        tokens.insert(token, Principal::agent(who));
    }
    let console = Console::new(
        runtime.clone(),
        Authenticator::Tokens(Arc::new(tokens)),
        ConsoleConfig::new(path.to_str().expect("utf-8").parse().expect("location")),
    );
    let c = console.clone();
    tokio::task::spawn_blocking(move || c.start_checks())
        .await
        .expect("start");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { console.serve(listener, std::future::pending()).await });
    Served {
        base,
        runtime,
        ledger,
        _dir: dir,
    }
}

async fn call(rt: &Runtime, who: &str, flow: &str, tool: &str, input: Value) {
    let report = rt
        .call(
            &Principal::agent(who),
            tool,
            input,
            CallOptions {
                flow: Some(FlowId::named(flow).expect("flow id")),
                ..CallOptions::default()
            },
        )
        .await
        .expect("past the intent");
    assert!(
        matches!(report.outcome(), escepine_runtime::CallOutcome::Ok(_)),
        "{report}"
    );
}

async fn get(base: &str, path: &str, token: &str) -> (u16, String) {
    let r = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .expect("request");
    (r.status().as_u16(), r.text().await.expect("body"))
}

async fn declassify(base: &str, flow: &str, token: &str, label: &str) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(format!("{base}/flows/{flow}/declassify"))
        .bearer_auth(token)
        .form(&[
            ("label", label),
            ("reason", "reviewed: the notes are public now"),
        ])
        .send()
        .await
        .expect("request");
    (r.status().as_u16(), r.text().await.expect("body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_leaves_a_flow_only_by_a_reviewer_who_did_not_bring_it() {
    let s = serve().await;
    call(
        &s.runtime,
        "alice",
        "task-7",
        "fetch_page",
        json!({"url": "http://127.0.0.1:8001/a"}),
    )
    .await;
    call(
        &s.runtime,
        "alice",
        "task-7",
        "notes_read",
        json!({"topic": "plans"}),
    )
    .await;

    let (status, page) = get(&s.base, "/flows/task-7", BOB).await;
    assert_eq!(status, 200, "{page}");
    for label in ["untrusted-content", "private"] {
        assert!(
            page.contains(&format!("data-label=\"{label}\"")),
            "{label}: {page}"
        );
    }

    let (status, page) = declassify(&s.base, "task-7", ALICE, "private").await;
    assert_eq!(status, 403, "{page}");
    assert!(
        page.contains("its own call"),
        "the requester of the label: {page}"
    );
    let (status, page) = declassify(&s.base, "task-7", BOB, "private").await;
    assert_eq!(status, 403, "{page}");
    assert!(
        page.contains("declassification refused"),
        "not a reviewer: {page}"
    );
    let state = s
        .runtime
        .flow_state(&FlowId::named("task-7").expect("id"))
        .expect("state");
    assert!(state.labels.contains("private"), "nothing was recorded");

    let (status, page) = declassify(&s.base, "task-7", RITA, "private").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("reviewers-declassify"), "{page}");
    let state = s
        .runtime
        .flow_state(&FlowId::named("task-7").expect("id"))
        .expect("state");
    assert!(!state.labels.contains("private"));
    assert!(state.labels.contains("untrusted-content"));
    let (_, page) = get(&s.base, "/flows/task-7", BOB).await;
    assert!(!page.contains("data-label=\"private\""), "{page}");
    let (status, _) = declassify(&s.base, "task-7", RITA, "private").await;
    assert_eq!(status, 403, "a label the flow no longer holds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_shows_new_calls_reading_only_the_new_entries() {
    let s = serve().await;
    let (status, page) = get(&s.base, "/calls", BOB).await;
    assert_eq!(status, 200);
    assert!(!page.contains("tr class=\"call\""), "no call yet: {page}");
    for n in 0..3 {
        call(&s.runtime, "alice", "task-8", "count", json!({"n": n})).await;
    }
    let before = s.ledger.rows_read();
    let (_, page) = get(&s.base, "/calls?flow=task-8", BOB).await;
    assert_eq!(page.matches("data-call=").count(), 3, "{page}");
    assert_eq!(
        s.ledger.rows_read() - before,
        6,
        "the three calls' intents and outcomes, and nothing else"
    );
    let before = s.ledger.rows_read();
    let (_, again) = get(&s.base, "/calls?flow=task-8", BOB).await;
    assert_eq!(s.ledger.rows_read(), before, "nothing new, nothing read");
    assert_eq!(again.matches("data-call=").count(), 3);
}
