//! Budgets per principal end to end: real processes (the testkit's `escepine-testtool`), a
//! real SQLite ledger holding the uses, a loopback store that counts calls in flight.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{fixtures, host};
use escepine_contract::Principal;
use escepine_ledger::record::{CallResult, Decision, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_runtime::budget::{Budgets, BudgetsError};
use escepine_runtime::executor::process::ProcessExecutor;
use escepine_runtime::{CallKind, CallOptions, CallOutcome, Runtime};
use escepine_testkit::server::{Reply, Server};
use escepine_testkit::testtool;
use serde_json::{json, Value};

fn budgets(doc: Value) -> Budgets {
    Budgets::from_value(
        &doc,
        Path::new("budgets.json"),
        &fixtures::registry("budgets"),
    )
    .unwrap()
}

fn entities() -> Value {
    json!([
        {"uid": {"type": "Team", "id": "ops"}, "attrs": {}, "parents": []},
        {"uid": {"type": "Agent", "id": "alice"}, "attrs": {}, "parents": []},
        {"uid": {"type": "Agent", "id": "bob"}, "attrs": {}, "parents": [{"type": "Team", "id": "ops"}]},
        {"uid": {"type": "Agent", "id": "carol"}, "attrs": {}, "parents": [{"type": "Team", "id": "ops"}]},
        {"uid": {"type": "Agent", "id": "mallory"}, "attrs": {}, "parents": []}
    ])
}

fn runtime(ledger: Arc<dyn Ledger>, budgets: Budgets) -> Runtime {
    let tool = testtool::testtool();
    Runtime::builder(fixtures::registry("budgets"))
        .ledger(ledger)
        .executor(Arc::new(
            ProcessExecutor::new().with_bin_dir(tool.parent().unwrap()),
        ))
        .entities(entities())
        .budgets(budgets)
        .build()
        .unwrap()
}

fn sqlite(dir: &Path) -> Arc<dyn Ledger> {
    Arc::new(SqliteLedger::open(dir.join("ledger.db"), Durability::Full).unwrap())
}

async fn count(rt: &Runtime, who: &str, counter: &Path) -> escepine_runtime::CallReport {
    rt.call(
        &Principal::agent(who),
        "b_count",
        json!({"counter": counter.to_str().unwrap()}),
        CallOptions::default(),
    )
    .await
    .unwrap()
}

fn runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test]
async fn the_call_after_the_limit_is_refused_recorded_and_still_refused_after_a_restart() {
    let _host = host::shared().await;
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter");
    let doc = json!({"budgets": [
        {"id": "alice-counts", "principal": "Agent::\"alice\"", "tool": "b_count", "calls": 2}
    ]});
    let rt = runtime(sqlite(dir.path()), budgets(doc.clone()));
    for _ in 0..2 {
        assert_eq!(count(&rt, "alice", &counter).await.kind(), CallKind::Ok);
    }
    let refused = count(&rt, "alice", &counter).await;
    assert_eq!(refused.kind(), CallKind::BudgetExceeded);
    assert_eq!(
        refused.outcome(),
        &CallOutcome::BudgetExceeded {
            budget: "alice-counts".into()
        }
    );
    assert_eq!(refused.attempts(), 0);
    assert_eq!(runs(&counter), 2, "the refused call ran nothing");
    // Another principal is not counted against alice's budget.
    assert_eq!(count(&rt, "bob", &counter).await.kind(), CallKind::Ok);
    // A denied call uses no budget (mallory has none, but is denied before any is counted).
    assert_eq!(
        count(&rt, "mallory", &counter).await.kind(),
        CallKind::Denied
    );

    let entries = rt.ledger().entries().unwrap();
    let outcome = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Outcome(o) if o.call_id == refused.call_id() => Some(o.clone()),
            _ => None,
        })
        .expect("the refusal is recorded");
    assert_eq!(outcome.result, CallResult::BudgetExceeded);
    assert_eq!(outcome.budget.as_deref(), Some("alice-counts"));
    assert!(outcome.attempts.is_empty());
    let intent_allowed = entries.iter().any(|e| {
        matches!(&e.record, Record::Intent(i) if i.call_id == refused.call_id() && i.decision == Decision::Allow)
    });
    assert!(intent_allowed, "the refused call was allowed by Cedar");
    escepine_ledger::verify::verify_entries(&entries, None).expect("the chain verifies");

    // A restart: the counts are in the ledger's file.
    drop(rt);
    let rt = runtime(sqlite(dir.path()), budgets(doc));
    assert_eq!(
        count(&rt, "alice", &counter).await.kind(),
        CallKind::BudgetExceeded
    );
    assert_eq!(runs(&counter), 3);
}

#[tokio::test]
async fn the_window_slides_and_a_group_budget_is_shared_by_its_members() {
    let _host = host::shared().await;
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter");
    let doc = json!({"budgets": [
        {"group": "Team::\"ops\"", "action_group": "read-only", "calls": 1, "per_s": 1}
    ]});
    let rt = runtime(sqlite(dir.path()), budgets(doc));
    assert_eq!(count(&rt, "bob", &counter).await.kind(), CallKind::Ok);
    let refused = count(&rt, "carol", &counter).await;
    assert_eq!(
        refused.outcome(),
        &CallOutcome::BudgetExceeded {
            budget: "budgets/0".into()
        },
        "bob's call counts for the whole group"
    );
    assert_eq!(
        count(&rt, "alice", &counter).await.kind(),
        CallKind::Ok,
        "not in the group"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        count(&rt, "carol", &counter).await.kind(),
        CallKind::Ok,
        "the window moved on"
    );
    assert_eq!(
        count(&rt, "bob", &counter).await.kind(),
        CallKind::BudgetExceeded
    );
}

#[tokio::test]
async fn a_concurrent_limit_holds_under_64_concurrent_calls() {
    let _host = host::shared().await;
    const LIMIT: usize = 4;
    let (now, max, served) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let store = {
        let (now, max, served) = (Arc::clone(&now), Arc::clone(&max), Arc::clone(&served));
        Server::start(move |_| {
            let inside = now.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(inside, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(150));
            now.fetch_sub(1, Ordering::SeqCst);
            served.fetch_add(1, Ordering::SeqCst);
            Reply::json(200, &json!({"key": "k", "value": "v", "version": 1}))
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let doc = json!({"budgets": [
        {"id": "in-flight", "principal": "Agent::\"alice\"", "tool": "b_get", "concurrent": LIMIT}
    ]});
    let rt = runtime(sqlite(dir.path()), budgets(doc));
    let calls = (0..64).map(|_| {
        let (rt, url) = (rt.clone(), store.url());
        tokio::spawn(async move {
            rt.call(
                &Principal::agent("alice"),
                "b_get",
                json!({"store": url, "key": "k"}),
                CallOptions::default(),
            )
            .await
            .unwrap()
            .kind()
        })
    });
    let mut kinds = Vec::new();
    for call in calls.collect::<Vec<_>>() {
        kinds.push(call.await.unwrap());
    }
    let ok = kinds.iter().filter(|k| **k == CallKind::Ok).count();
    let exceeded = kinds
        .iter()
        .filter(|k| **k == CallKind::BudgetExceeded)
        .count();
    assert_eq!(ok + exceeded, 64, "{kinds:?}");
    assert!(
        max.load(Ordering::SeqCst) <= LIMIT,
        "max in flight {}",
        max.load(Ordering::SeqCst)
    );
    assert!(ok >= 1 && exceeded >= 1, "ok {ok}, exceeded {exceeded}");
    assert_eq!(
        served.load(Ordering::SeqCst),
        ok,
        "every refused call ran nothing"
    );
    // All ended: the budget has room again.
    let after = rt
        .call(
            &Principal::agent("alice"),
            "b_get",
            json!({"store": store.url(), "key": "k"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(after.kind(), CallKind::Ok);
}

fn refusal(doc: Value) -> String {
    let err = Budgets::from_value(
        &doc,
        Path::new("/etc/escepine/budgets.json"),
        &fixtures::registry("budgets"),
    )
    .expect_err("refused");
    assert!(matches!(err, BudgetsError::Invalid { .. }), "{err}");
    err.to_string()
}

#[test]
fn bad_budget_files_name_the_file_the_pointer_and_the_rule() {
    let cases = [
        (json!({"budgets": [{"calls": 1}, {"principal": "alice", "calls": 1}]}),
         "/etc/escepine/budgets.json: /budgets/1/principal: principal `alice` is not of the form"),
        (json!({"budgets": [{"principal": "Agent::\"a\"", "group": "Team::\"ops\"", "calls": 1}]}),
         "/etc/escepine/budgets.json: /budgets/0: names both `principal` and `group`"),
        (json!({"budgets": [{"tool": "nope", "calls": 1}]}),
         "/etc/escepine/budgets.json: /budgets/0/tool: no registered tool is named `nope`"),
        (json!({"budgets": [{"class": "risky", "calls": 1}]}),
         "/budgets/0/class: `risky` is not a side-effect class"),
        (json!({"budgets": [{"action_group": "nope", "calls": 1}]}),
         "/budgets/0/action_group: `nope` is not an action of the Cedar schema"),
        (json!({"budgets": [{"group": "ops", "calls": 1}]}),
         "/budgets/0/group: `ops` is not a Cedar entity uid"),
        (json!({"budgets": [{"tool": "b_get"}]}), "/budgets/0: sets no limit"),
        (json!({"budgets": [{"per_s": 5, "concurrent": 1}]}),
         "/budgets/0/per_s: a window counts `calls`"),
        (json!({"budgets": [{"calls": 1, "per_s": 0}]}), "/budgets/0/per_s: a window lasts"),
        (json!({"budgets": [{"calls": 1, "limit": 3}]}), "/budgets/0: unknown field `limit`"),
        (json!({"budgets": [{"tool": "b_get", "class": "read-only", "calls": 1}]}),
         "/budgets/0: names more than one of"),
        (json!({"budgets": [{"id": "x", "calls": 1}, {"id": "x", "calls": 2}]}),
         "/budgets/1/id: the id `x` is already taken"),
        (json!({"budget": []}), "budgets.json: (the document): unknown field `budget`"),
    ];
    for (doc, expected) in cases {
        let message = refusal(doc);
        assert!(message.contains(expected), "{message}\nlacks: {expected}");
    }
    let missing = Budgets::load(
        Path::new("/nonexistent/budgets.json"),
        &fixtures::registry("budgets"),
    )
    .expect_err("no file");
    assert!(
        missing
            .to_string()
            .starts_with("/nonexistent/budgets.json: cannot read"),
        "{missing}"
    );
}

/// Two runtimes on one PostgreSQL database (two ledgers, two connection pools) share one
/// budget: together they get exactly its calls, and the refusals are recorded in the chain.
#[cfg(feature = "postgres")]
#[test]
fn two_runtimes_on_one_postgres_database_share_a_budget() {
    use escepine_ledger::postgres::PostgresLedger;
    use escepine_testkit::postgres::TestDatabase;

    let _host = host::shared_blocking();
    let db = TestDatabase::create();
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter");
    let doc = json!({"budgets": [
        {"id": "shared", "principal": "Agent::\"alice\"", "tool": "b_count", "calls": 5}
    ]});
    let open = || -> Arc<dyn Ledger> {
        Arc::new(PostgresLedger::open(&db.url(), Durability::Full).unwrap())
    };
    let (first, second) = (
        runtime(open(), budgets(doc.clone())),
        runtime(open(), budgets(doc)),
    );
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let kinds = tokio.block_on(async {
        let calls: Vec<_> = (0..12)
            .map(|n| {
                let rt = if n % 2 == 0 {
                    first.clone()
                } else {
                    second.clone()
                };
                let counter = counter.clone();
                tokio::spawn(async move { count(&rt, "alice", &counter).await.kind() })
            })
            .collect();
        let mut kinds = Vec::new();
        for c in calls {
            kinds.push(c.await.unwrap());
        }
        kinds
    });
    let ok = kinds.iter().filter(|k| **k == CallKind::Ok).count();
    let exceeded = kinds
        .iter()
        .filter(|k| **k == CallKind::BudgetExceeded)
        .count();
    assert_eq!((ok, exceeded), (5, 7), "{kinds:?}");
    assert_eq!(runs(&counter), 5);
    let recorded = first
        .ledger()
        .entries()
        .unwrap()
        .iter()
        .filter(|e| {
            matches!(&e.record, Record::Outcome(o)
                if o.result == CallResult::BudgetExceeded && o.budget.as_deref() == Some("shared"))
        })
        .count();
    assert_eq!(recorded, 7);
    let uses = db.query_strings("SELECT count(*)::text FROM budget_uses WHERE ended");
    assert_eq!(uses, ["5"]);
}
