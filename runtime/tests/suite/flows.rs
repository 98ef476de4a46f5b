//! Flows on the governed path: the state Cedar sees as `context.flow` is the ledger's, folded
//! incrementally; it survives a restart and is shared by runtimes on one PostgreSQL; a call that
//! names no flow is in its principal's default flow; a label leaves a flow only by an approver's
//! recorded declassification; replay decides on the recorded state.
//!
//! The tools (`tests/fixtures/flows`) run in-process: `fetch_page` (a URL; output
//! `untrusted-content`), `notes_read` (reads `private`) and `count` (no label). The policies
//! hold a page read at a new origin for approval once the flow holds both labels.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use escepine_contract::{FlowId, FlowState, Principal};
use escepine_ledger::entry::Entry;
use escepine_ledger::flows::{recompute, FlowIndex};
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::record::Record;
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_policy::authorize::Authorizer;
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::flows::{Declassify, DeclassifyError};
use escepine_runtime::{CallOptions, CallOutcome, Runtime};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::support::fixtures;

fn entities() -> Value {
    let text = std::fs::read_to_string(fixtures::dir("flows").join("entities.json"))
        .expect("entities.json");
    serde_json::from_str(&text).expect("entities JSON")
}

fn runtime(ledger: Arc<dyn Ledger>) -> Runtime {
    let exec = InProcessExecutor::new()
        .with_tool("fetch_page", |p: &Value| {
            Ok(json!({"text": format!("page {}", p["url"])}))
        })
        .with_tool("notes_read", |_: &Value| Ok(json!({"text": "the notes"})))
        .with_tool("count", |p: &Value| Ok(json!({"text": p["n"].to_string()})));
    Runtime::builder(fixtures::registry("flows"))
        .ledger(ledger)
        .executor(Arc::new(exec))
        .entities(entities())
        .build()
        .expect("runtime")
}

fn sqlite(dir: &Path) -> Arc<dyn Ledger> {
    Arc::new(SqliteLedger::open(dir.join("ledger.db"), Durability::Normal).expect("sqlite"))
}

fn agent(id: &str) -> Principal {
    Principal::agent(id)
}

fn in_flow(flow: Option<&str>) -> CallOptions {
    CallOptions {
        flow: flow.map(|f| FlowId::named(f).expect("a flow id")),
        ..CallOptions::default()
    }
}

async fn call(
    rt: &Runtime,
    who: &str,
    flow: Option<&str>,
    tool: &str,
    input: Value,
) -> CallOutcome {
    rt.call(&agent(who), tool, input, in_flow(flow))
        .await
        .expect("past the intent")
        .outcome()
        .clone()
}

fn page(url: &str) -> Value {
    json!({"url": url})
}

fn notes() -> Value {
    json!({"topic": "plans"})
}

/// Whether `outcome` waits for approval under the trifecta policy.
fn held(outcome: &CallOutcome) -> bool {
    matches!(outcome, CallOutcome::AwaitingApproval { policy_ids, .. }
        if policy_ids.iter().any(|p| p == "trifecta-new-origin"))
}

/// Read a page (untrusted content, origin A), then the notes (private): the flow holds both.
async fn lethal(rt: &Runtime, who: &str, flow: Option<&str>) {
    let read = call(rt, who, flow, "fetch_page", page("http://127.0.0.1:8001/a")).await;
    assert!(matches!(read, CallOutcome::Ok(_)), "{read:?}");
    let private = call(rt, who, flow, "notes_read", notes()).await;
    assert!(matches!(private, CallOutcome::Ok(_)), "{private:?}");
}

#[tokio::test]
async fn a_flow_holding_both_labels_waits_at_a_new_origin_and_reads_on_at_a_known_one() {
    let rt = runtime(Arc::new(MemoryLedger::new()));
    // In a fresh flow, any origin.
    let fresh = call(
        &rt,
        "alice",
        Some("task-1"),
        "fetch_page",
        page("http://127.0.0.1:9/x"),
    )
    .await;
    assert!(matches!(fresh, CallOutcome::Ok(_)), "{fresh:?}");
    lethal(&rt, "alice", Some("task-2")).await;
    let state = rt
        .flow_state(&FlowId::named("task-2").expect("id"))
        .expect("state");
    assert_eq!(
        state.labels,
        BTreeSet::from(["private".to_string(), "untrusted-content".to_string()])
    );
    assert_eq!(
        state.origins,
        BTreeSet::from(["http://127.0.0.1:8001".to_string()])
    );
    assert_eq!(state.calls, 2);
    // A new origin (another port is another origin) waits, naming the policy; nothing ran.
    let exfil = call(
        &rt,
        "alice",
        Some("task-2"),
        "fetch_page",
        page("http://127.0.0.1:8002/c?d=notes"),
    )
    .await;
    assert!(held(&exfil), "{exfil:?}");
    // The origin already reached reads on; another flow is untouched.
    let known = call(
        &rt,
        "alice",
        Some("task-2"),
        "fetch_page",
        page("http://127.0.0.1:8001/b"),
    )
    .await;
    assert!(matches!(known, CallOutcome::Ok(_)), "{known:?}");
    let other = call(
        &rt,
        "alice",
        Some("task-3"),
        "fetch_page",
        page("http://127.0.0.1:8002/c"),
    )
    .await;
    assert!(matches!(other, CallOutcome::Ok(_)), "{other:?}");
    // The held call did not run: it brought nothing into the flow.
    let after = rt
        .flow_state(&FlowId::named("task-2").expect("id"))
        .expect("state");
    assert_eq!(after.calls, 3, "{after:?}");
    assert!(
        !after.origins.contains("http://127.0.0.1:8002"),
        "{after:?}"
    );
}

#[tokio::test]
async fn omitting_the_flow_id_never_escapes_the_rule() {
    let rt = runtime(Arc::new(MemoryLedger::new()));
    lethal(&rt, "alice", None).await;
    let exfil = call(
        &rt,
        "alice",
        None,
        "fetch_page",
        page("http://127.0.0.1:8002/c"),
    )
    .await;
    assert!(held(&exfil), "{exfil:?}");
    let default = FlowId::default_of(&agent("alice"));
    assert_eq!(default.as_str(), "principal:Agent::\"alice\"");
    assert_eq!(rt.flow_state(&default).expect("state").calls, 2);
    // Another principal's default flow is its own.
    let bob = call(
        &rt,
        "bob",
        None,
        "fetch_page",
        page("http://127.0.0.1:8002/c"),
    )
    .await;
    assert!(matches!(bob, CallOutcome::Ok(_)), "{bob:?}");
    // No caller can name a default flow.
    assert!(FlowId::named(default.as_str()).is_err());
}

#[tokio::test]
async fn the_state_survives_a_restart_from_the_sqlite_ledger() {
    let dir = tempfile::tempdir().expect("tmp");
    {
        let rt = runtime(sqlite(dir.path()));
        lethal(&rt, "alice", Some("restarted")).await;
    }
    let rt = runtime(sqlite(dir.path()));
    let exfil = call(
        &rt,
        "alice",
        Some("restarted"),
        "fetch_page",
        page("http://127.0.0.1:8002/c"),
    )
    .await;
    assert!(held(&exfil), "after a restart: {exfil:?}");
    let known = call(
        &rt,
        "alice",
        Some("restarted"),
        "fetch_page",
        page("http://127.0.0.1:8001/z"),
    )
    .await;
    assert!(matches!(known, CallOutcome::Ok(_)), "{known:?}");
}

#[cfg(feature = "postgres")]
#[test]
fn two_runtimes_on_one_postgresql_share_the_flow() {
    use escepine_ledger::postgres::PostgresLedger;
    use escepine_testkit::postgres::TestDatabase;
    let db = TestDatabase::create();
    let open = || -> Arc<dyn Ledger> {
        Arc::new(PostgresLedger::open(&db.url(), Durability::Full).expect("postgres"))
    };
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    tokio.block_on(async {
        let a = runtime(open());
        let b = runtime(open());
        // B has read the flow (empty) before A brings the labels in: its index is refreshed.
        let first = call(&b, "alice", Some("shared"), "count", json!({"n": 1})).await;
        assert!(matches!(first, CallOutcome::Ok(_)), "{first:?}");
        lethal(&a, "alice", Some("shared")).await;
        let exfil = call(
            &b,
            "alice",
            Some("shared"),
            "fetch_page",
            page("http://127.0.0.1:8002/c"),
        )
        .await;
        assert!(held(&exfil), "the second runtime: {exfil:?}");
        let state = b
            .flow_state(&FlowId::named("shared").expect("id"))
            .expect("state");
        assert_eq!(state.calls, 3, "{state:?}");
        assert_eq!(state.tools.get("count"), Some(&1));
    });
}

#[tokio::test]
async fn only_an_approver_whose_calls_did_not_bring_it_declassifies_a_label() {
    let ledger: Arc<dyn Ledger> = Arc::new(MemoryLedger::new());
    let rt = runtime(Arc::clone(&ledger));
    let flow = FlowId::named("review").expect("id");
    // Alice reads the page; rita (a reviewer) reads the notes.
    let read = call(
        &rt,
        "alice",
        Some("review"),
        "fetch_page",
        page("http://127.0.0.1:8001/a"),
    )
    .await;
    assert!(matches!(read, CallOutcome::Ok(_)), "{read:?}");
    let notes_call = rt
        .call(
            &agent("rita"),
            "notes_read",
            notes(),
            in_flow(Some("review")),
        )
        .await
        .expect("recorded");
    let ask = |who: &'static str, label: &'static str| {
        let rt = &rt;
        let flow = &flow;
        async move {
            let principal = agent(who);
            rt.declassify(Declassify {
                flow,
                label,
                principal: &principal,
                parents: &[],
                reason: "reviewed: the notes are public now",
            })
            .await
        }
    };
    // Rita brought `private`: she may not remove it.
    match ask("rita", "private").await {
        Err(DeclassifyError::OwnLabel { call_id, .. }) => {
            assert_eq!(call_id, notes_call.call_id());
        }
        other => panic!("rita: {other:?}"),
    }
    // Alice is no reviewer: Cedar refuses.
    assert!(
        matches!(
            ask("alice", "private").await,
            Err(DeclassifyError::Denied { .. })
        ),
        "alice"
    );
    // A label the flow does not hold.
    assert!(matches!(
        ask("victor", "secret").await,
        Err(DeclassifyError::NotHeld { .. })
    ));
    let before = ledger.entries().expect("entries").len();
    let done = ask("victor", "private").await.expect("victor declassifies");
    assert_eq!(done.policy_ids, ["reviewers-declassify"]);
    assert_eq!(
        ledger.entries().expect("entries").len(),
        before + 1,
        "one entry"
    );
    let Some(Record::Declassification(d)) = ledger
        .entry(done.entry.seq)
        .expect("read")
        .map(|e| e.record)
    else {
        panic!("the entry is a declassification");
    };
    assert_eq!(
        (d.label.as_str(), d.principal.as_str(), d.flow.as_str()),
        ("private", "Agent::\"victor\"", "review")
    );
    // The flow no longer holds it: the new origin is read without approval.
    let state = rt.flow_state(&flow).expect("state");
    assert!(!state.labels.contains("private"), "{state:?}");
    let next = call(
        &rt,
        "alice",
        Some("review"),
        "fetch_page",
        page("http://127.0.0.1:8002/b"),
    )
    .await;
    assert!(matches!(next, CallOutcome::Ok(_)), "{next:?}");
    // Brought in again, it counts again.
    let again = call(&rt, "alice", Some("review"), "notes_read", notes()).await;
    assert!(matches!(again, CallOutcome::Ok(_)), "{again:?}");
    let held_again = call(
        &rt,
        "alice",
        Some("review"),
        "fetch_page",
        page("http://127.0.0.1:8003/b"),
    )
    .await;
    assert!(held(&held_again), "{held_again:?}");
}

#[tokio::test]
async fn replay_decides_on_the_recorded_flow_state() {
    let ledger: Arc<dyn Ledger> = Arc::new(MemoryLedger::new());
    let rt = runtime(Arc::clone(&ledger));
    // Before the flow holds both labels, a new origin is read; after, one is held.
    let early = call(
        &rt,
        "alice",
        Some("r"),
        "fetch_page",
        page("http://127.0.0.1:8001/a"),
    )
    .await;
    assert!(matches!(early, CallOutcome::Ok(_)), "{early:?}");
    let private = call(&rt, "alice", Some("r"), "notes_read", notes()).await;
    assert!(matches!(private, CallOutcome::Ok(_)), "{private:?}");
    let late = rt
        .call(
            &agent("alice"),
            "fetch_page",
            page("http://127.0.0.1:8002/b"),
            in_flow(Some("r")),
        )
        .await
        .expect("recorded");
    assert!(held(late.outcome()), "{:?}", late.outcome());
    // The candidate forbids what the enforced set held for approval.
    let dir = tempfile::tempdir().expect("tmp");
    let policies = fixtures::dir("flows").join("policies");
    for f in ["flows.cedar", "schema.cedarschema"] {
        std::fs::copy(policies.join(f), dir.path().join(f)).expect("copy");
    }
    std::fs::write(
        dir.path().join("forbid.cedar"),
        "@id(\"no-new-origin-with-both\")\nforbid (principal, action in Action::\"page-read\", resource)\n\
         when { context has url && context.flow.labels.containsAll([\"untrusted-content\", \"private\"]) \
         && !context.flow.origins.contains(context.url.origin) };\n",
    )
    .expect("write");
    let registry = fixtures::registry("flows");
    let binding = escepine_policy::cedar::bind(registry.records(), Some(dir.path()))
        .unwrap_or_else(|d| panic!("{}", d.render()));
    let candidate =
        Authorizer::new(&binding, registry.records(), Some(&entities())).expect("authorizer");
    let entries = ledger.entries().expect("entries");
    let report = escepine_runtime::replay::replay(&entries, &candidate);
    // Exactly the held call flips (to a deny): the early read, whose recorded flow held no
    // label, does not, although the flow holds both labels now.
    let flipped: Vec<&str> = report.flips.iter().map(|f| f.call_id.as_str()).collect();
    assert_eq!(flipped, [late.call_id()], "{:?}", report.flips);
}

/// Check every intent of `entries` against the fold of the entries before it, and return the
/// fold of them all.
fn check_recorded_states(entries: &[Entry]) -> FlowIndex {
    let mut index = FlowIndex::new();
    for e in entries {
        if let Record::Intent(i) = &e.record {
            let flow = i.flow.as_ref().expect("every intent names its flow");
            assert_eq!(
                i.flow_state.as_ref().expect("and the state Cedar saw"),
                &index.state(flow),
                "entry {}: the recorded state is the fold of the chain before it",
                e.seq
            );
        }
        index.fold(e).expect("the chain links");
    }
    index
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Step {
    /// A page read in flow `flow` at origin port `port`.
    Page { who: usize, flow: usize, port: u16 },
    /// A notes read.
    Notes { who: usize, flow: usize },
    /// A count.
    Count { who: usize, flow: usize },
    /// Victor declassifies `private` in the flow (when it holds it).
    Declassify { flow: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..3usize, 0..10usize, 8000..8006u16).prop_map(|(who, flow, port)| Step::Page { who, flow, port }),
        2 => (0..3usize, 0..10usize).prop_map(|(who, flow)| Step::Notes { who, flow }),
        3 => (0..3usize, 0..10usize).prop_map(|(who, flow)| Step::Count { who, flow }),
        1 => (0..10usize).prop_map(|flow| Step::Declassify { flow }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]

    /// 1,000 calls in 10 flows: every intent recorded the fold of the chain before it, the
    /// runtime's state of each flow equals the recomputation from the whole ledger, and a
    /// second runtime reading the ledger from scratch gets the same states.
    #[test]
    fn a_flows_state_equals_its_recomputation(steps in proptest::collection::vec(step(), 1000)) {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
        tokio.block_on(async {
            let ledger: Arc<dyn Ledger> = Arc::new(MemoryLedger::new());
            let rt = runtime(Arc::clone(&ledger));
            let who = ["alice", "bob", "rita"];
            let flow = |n: usize| FlowId::named(&format!("flow-{n}")).expect("id");
            for s in &steps {
                match s {
                    Step::Page { who: w, flow: f, port } => {
                        let url = format!("http://127.0.0.1:{port}/p");
                        let _ = rt.call(&agent(who[*w]), "fetch_page", page(&url), in_flow(Some(flow(*f).as_str()))).await.expect("recorded");
                    }
                    Step::Notes { who: w, flow: f } => {
                        let _ = rt.call(&agent(who[*w]), "notes_read", notes(), in_flow(Some(flow(*f).as_str()))).await.expect("recorded");
                    }
                    Step::Count { who: w, flow: f } => {
                        let _ = rt.call(&agent(who[*w]), "count", json!({"n": 1}), in_flow(Some(flow(*f).as_str()))).await.expect("recorded");
                    }
                    Step::Declassify { flow: f } => {
                        let id = flow(*f);
                        let victor = agent("victor");
                        let _ = rt.declassify(Declassify { flow: &id, label: "private", principal: &victor, parents: &[], reason: "property test" }).await;
                    }
                }
            }
            let entries = ledger.entries().expect("entries");
            let index = check_recorded_states(&entries);
            let whole = recompute(&entries).expect("recomputed");
            let fresh = runtime(Arc::clone(&ledger));
            let mut calls = 0;
            for n in 0..10 {
                let id = flow(n);
                let expected = whole.get(&id).map(|f| f.state.clone()).unwrap_or_default();
                prop_assert_eq!(&rt.flow_state(&id).expect("state"), &expected);
                prop_assert_eq!(&fresh.flow_state(&id).expect("state"), &expected);
                prop_assert_eq!(&index.state(&id), &expected);
                calls += expected.calls;
            }
            // Every call that ran is counted in exactly one flow.
            let ran = entries.iter().filter(|e| matches!(&e.record, Record::Outcome(o) if !o.attempts.is_empty())).count() as u64;
            prop_assert_eq!(calls, ran);
            prop_assert!(FlowState::default().is_empty());
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn a_label_scrubbed_from_the_ledger_file_refuses_calls_instead_of_lowering_the_flow() {
    let dir = tempfile::tempdir().expect("tmp");
    {
        let rt = runtime(sqlite(dir.path()));
        lethal(&rt, "alice", Some("tampered")).await;
    }
    // An attacker with the file removes the `private` label from the notes call's outcome.
    let db = dir.path().join("ledger.db");
    let out = std::process::Command::new("sqlite3")
        .arg(&db)
        .arg("UPDATE entries SET body = replace(body, '\"labels\":[\"private\"],', '') WHERE body LIKE '%\"entered\"%private%';")
        .output()
        .expect("the sqlite3 command-line tool is needed (apt-get install sqlite3)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rt = runtime(sqlite(dir.path()));
    let refused = rt
        .call(
            &agent("alice"),
            "fetch_page",
            page("http://127.0.0.1:8002/c"),
            in_flow(Some("tampered")),
        )
        .await
        .expect_err("the flow cannot be read: refused before the intent");
    assert_eq!(
        refused.kind(),
        escepine_runtime::CallKind::LedgerUnavailable,
        "{refused}"
    );
    assert!(
        refused.to_string().contains("does not recompute"),
        "{refused}"
    );
}
