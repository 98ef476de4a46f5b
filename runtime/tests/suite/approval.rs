//! Calls that wait for approval, through the `Runtime` API: real tool processes writing to the
//! loopback store (which counts every applied write), the SOP fixtures' tools with the approval
//! policies of `tests/fixtures/approval`, SQLite and PostgreSQL ledgers shared by two runtimes.

use std::sync::Arc;

use crate::support::host;
use escepine_contract::Principal;
use escepine_ledger::calls::state::CallState;
use escepine_ledger::entry::Entry;
use escepine_ledger::record::{CallResult, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_runtime::approval::ApprovalError;
use escepine_runtime::executor::process::ProcessExecutor;
use escepine_runtime::{CallKind, CallOptions, CallOutcome, CallReport, Runtime};
use escepine_testkit::bins::workspace_root;
use escepine_testkit::sop::{self as fixtures, item, Store};
use escepine_testkit::testtool;

fn registry() -> escepine_policy::BoundRegistry {
    let root = workspace_root();
    escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(fixtures::fixtures().join("records"))
            .policies(root.join("runtime/tests/fixtures/approval/policies"))
            .envelope(fixtures::fixtures().join("envelope.json"))
            .workspace_root(root),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}

fn runtime(store: &Store, ledger: Arc<dyn Ledger>) -> Runtime {
    runtime_trusting(store, ledger, Vec::new())
}

fn runtime_trusting(
    store: &Store,
    ledger: Arc<dyn Ledger>,
    checkpoints: Vec<escepine_ledger::checkpoint::Checkpoint>,
) -> Runtime {
    let entities = std::fs::read_to_string(
        workspace_root().join("runtime/tests/fixtures/approval/entities.json"),
    )
    .unwrap();
    let tool = testtool::testtool();
    Runtime::builder(registry())
        .ledger(ledger)
        .executor(Arc::new(
            ProcessExecutor::new().with_bin_dir(tool.parent().unwrap()),
        ))
        .overlay(fixtures::overlay(store))
        .entities(serde_json::from_str(&entities).unwrap())
        .trusted_checkpoints(checkpoints)
        .build()
        .unwrap()
}

async fn put(rt: &Runtime, store: &Store, key: &str) -> CallReport {
    rt.call(
        &Principal::agent("alice"),
        "s_put",
        item(store, key, "v1"),
        CallOptions::default(),
    )
    .await
    .unwrap()
}

/// A waiting call, then `n` approvals at once by `bob` spread over `runtimes`: exactly one
/// runs the call, every other is refused, and the store applied the write once.
async fn approve_at_once(runtimes: &[Runtime], store: &Store, n: usize) {
    let first = &runtimes[0];
    let waiting = put(first, store, "once").await;
    assert_eq!(waiting.kind(), CallKind::AwaitingApproval);
    assert!(
        waiting.outcome_entry().is_none(),
        "no outcome while it waits"
    );
    let CallOutcome::AwaitingApproval {
        policy_ids,
        reasons,
        ..
    } = waiting.outcome()
    else {
        panic!("waits: {waiting}");
    };
    assert_eq!(policy_ids, &["alice-writes-with-approval"]);
    assert_eq!(reasons, &["a new item in the store needs a reviewer"]);
    let id = waiting.call_id().to_string();
    assert!(store.applied().is_empty());
    for rt in runtimes {
        assert!(
            matches!(rt.call_state(&id).unwrap(), CallState::Waiting(w) if w.principal == "Agent::\"alice\""),
            "every runtime on the ledger sees the wait"
        );
    }

    let decisions: Vec<_> = (0..n)
        .map(|k| {
            let rt = runtimes[k % runtimes.len()].clone();
            let id = id.clone();
            tokio::spawn(async move { rt.approve(&Principal::agent("bob"), &id).await })
        })
        .collect();
    let mut ran = 0;
    for d in decisions {
        match d.await.unwrap() {
            Ok(report) => {
                assert_eq!(report.kind(), CallKind::Ok, "{report}");
                assert_eq!(report.call_id(), id);
                assert_eq!(report.idempotency_key(), waiting.idempotency_key());
                ran += 1;
            }
            Err(e) => assert!(
                matches!(e, ApprovalError::AlreadyDecided { .. }),
                "refused as decided: {e}"
            ),
        }
    }
    assert_eq!(ran, 1, "exactly one approval ran the call");
    assert_eq!(
        store.applied().get(waiting.idempotency_key()),
        Some(&1),
        "{:?}",
        store.applied()
    );
    let entries = first.ledger().entries().unwrap();
    let of_call: Vec<&str> = entries
        .iter()
        .filter(|e| e.record.call_id() == Some(id.as_str()))
        .map(|e| e.record.kind())
        .collect();
    assert_eq!(of_call, ["intent", "approval", "outcome"]);
    assert!(matches!(
        first.call_state(&id).unwrap(),
        CallState::Ended(o) if o.result == CallResult::Ok
    ));
    escepine_ledger::verify::verify_entries(&entries, None).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_approvals_on_one_sqlite_file_run_the_call_once_after_a_restart() {
    let _host = host::shared().await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::start();
    let open = || -> Arc<dyn Ledger> {
        Arc::new(SqliteLedger::open(dir.path().join("ledger.db"), Durability::Full).unwrap())
    };
    {
        // A runtime asks, and stops.
        let rt = runtime(&store, open());
        let waiting = put(&rt, &store, "before-restart").await;
        assert_eq!(waiting.kind(), CallKind::AwaitingApproval);
    }
    let runtimes = [runtime(&store, open()), runtime(&store, open())];
    // The earlier wait survived the restart.
    let entries = runtimes[0].ledger().entries().unwrap();
    let earlier = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Intent(i) => Some(i.call_id.clone()),
            _ => None,
        })
        .unwrap();
    assert!(matches!(
        runtimes[1].call_state(&earlier).unwrap(),
        CallState::Waiting(_)
    ));
    approve_at_once(&runtimes, &store, 8).await;
    // Refusals change nothing: the earlier call still waits.
    let carol = runtimes[0]
        .approve(&Principal::agent("alice"), &earlier)
        .await
        .unwrap_err();
    assert!(
        matches!(carol, ApprovalError::SelfApproval { .. }),
        "{carol}"
    );
    let mallory = runtimes[1]
        .reject(&Principal::agent("mallory"), &earlier)
        .await
        .unwrap_err();
    assert!(
        matches!(mallory, ApprovalError::NotPermitted { .. }),
        "{mallory}"
    );
    assert!(matches!(
        runtimes[0].call_state(&earlier).unwrap(),
        CallState::Waiting(_)
    ));
    assert!(
        runtimes[0].expire(&earlier).await.unwrap().is_none(),
        "not past its expiry"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn concurrent_approvals_by_two_runtimes_on_one_postgres_database_run_the_call_once() {
    use escepine_ledger::postgres::PostgresLedger;
    use escepine_testkit::postgres::TestDatabase;

    let _host = host::shared_blocking();
    let db = TestDatabase::create();
    let store = Store::start();
    let open = || -> Arc<dyn Ledger> {
        Arc::new(PostgresLedger::open(&db.url(), Durability::Full).unwrap())
    };
    let runtimes = [runtime(&store, open()), runtime(&store, open())];
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(approve_at_once(&runtimes, &store, 8));
}

#[tokio::test]
async fn a_call_that_outlives_its_wait_is_recorded_expired_and_never_runs() {
    let _host = host::shared().await;
    let store = Store::start();
    let tool = testtool::testtool();
    let entities = std::fs::read_to_string(
        workspace_root().join("runtime/tests/fixtures/approval/entities.json"),
    )
    .unwrap();
    let rt = Runtime::builder(registry())
        .ledger(Arc::new(escepine_ledger::memory::MemoryLedger::new()))
        .executor(Arc::new(
            ProcessExecutor::new().with_bin_dir(tool.parent().unwrap()),
        ))
        .overlay(fixtures::overlay(&store))
        .entities(serde_json::from_str(&entities).unwrap())
        .approval_ttl(std::time::Duration::from_millis(50))
        .build()
        .unwrap();
    let waiting = put(&rt, &store, "late").await;
    tokio::time::sleep(std::time::Duration::from_millis(80)).await;
    assert!(matches!(
        rt.call_state(waiting.call_id()).unwrap(),
        CallState::Expired(_)
    ));
    let expired = rt
        .expire(waiting.call_id())
        .await
        .unwrap()
        .expect("recorded");
    assert_eq!(expired.kind(), CallKind::Expired);
    let again = rt
        .approve(&Principal::agent("bob"), waiting.call_id())
        .await
        .unwrap_err();
    assert!(
        matches!(again, ApprovalError::AlreadyDecided { .. }),
        "{again}"
    );
    assert!(store.applied().is_empty());
}

/// The signed checkpoint of the ledger's chain as it is now, opened with its verifier key.
fn checkpoint_now(ledger: &dyn Ledger) -> escepine_ledger::checkpoint::Checkpoint {
    use escepine_ledger::checkpoint::{self, SignerKey};
    use escepine_ledger::proof::LedgerTree;
    let key = SignerKey::generate("example.com/escepine/test").unwrap();
    let tree = LedgerTree::of_entries(&ledger.entries().unwrap()).unwrap();
    let note = tree.checkpoint(key.verifier().name()).sign(&key).unwrap();
    checkpoint::open(&note, key.verifier()).unwrap()
}

/// Rewrites entry `seq` of the SQLite file at `db` as a careful attacker would: the intent's
/// payload key made `evil`, its payload hash and the entry's hash recomputed, so that the chain
/// (the entry is its head) still verifies.
fn rewrite_head_intent(db: &std::path::Path, ledger: &dyn Ledger, seq: u64) {
    use escepine_ledger::entry::{canonical_json, sha256_hex};
    let mut entry = ledger.entry(seq).unwrap().expect("the entry");
    let Record::Intent(intent) = &mut entry.record else {
        panic!("entry {seq} is an intent")
    };
    intent.payload["key"] = "evil".into();
    intent.payload_hash = sha256_hex(canonical_json(&intent.payload).as_bytes());
    let entry = Entry::seal(entry.seq, entry.prev, entry.at_ms, entry.record).unwrap();
    let body = entry.body().replace('\'', "''");
    let sql = format!(
        "UPDATE entries SET body = '{body}', hash = '{}' WHERE seq = {seq}",
        entry.hash
    );
    let out = std::process::Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
        .expect("the sqlite3 command-line tool is needed (apt-get install sqlite3)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    escepine_ledger::verify::verify_entries(&ledger.entries().unwrap(), None)
        .expect("the rewritten chain still verifies on its own");
}

/// With a trusted checkpoint, an approval runs an untouched call, and refuses one whose intent
/// was rewritten and re-hashed after the checkpoint was signed (the chain alone cannot show
/// it: the intent is its head); nothing reaches the store and nothing is recorded.
#[tokio::test]
async fn a_trusted_checkpoint_refuses_an_approval_of_a_rewritten_intent() {
    let _host = host::shared().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let store = Store::start();
    let ledger: Arc<dyn Ledger> = Arc::new(SqliteLedger::open(&path, Durability::Full).unwrap());
    let asking = runtime(&store, ledger.clone());

    let first = put(&asking, &store, "a").await;
    let trusting = runtime_trusting(&store, ledger.clone(), vec![checkpoint_now(&*ledger)]);
    let approved = trusting
        .approve(&Principal::agent("bob"), first.call_id())
        .await
        .expect("an untouched call is approved");
    assert_eq!(approved.kind(), CallKind::Ok, "{approved}");
    assert_eq!(store.applied().len(), 1);

    let second = put(&asking, &store, "a").await;
    let seq = second.intent_entry().seq;
    let trusting = runtime_trusting(&store, ledger.clone(), vec![checkpoint_now(&*ledger)]);
    rewrite_head_intent(&path, &*ledger, seq);
    let before = ledger.entries().unwrap().len();
    let err = trusting
        .approve(&Principal::agent("bob"), second.call_id())
        .await
        .expect_err("refused");
    assert!(
        matches!(err, ApprovalError::Untrusted { .. }),
        "refused as untrusted: {err}"
    );
    assert!(
        err.to_string().contains("does not match its checkpoint"),
        "{err}"
    );
    assert_eq!(store.applied().len(), 1, "the rewritten write never ran");
    assert!(!store.items().contains_key("evil"));
    assert_eq!(ledger.entries().unwrap().len(), before, "nothing recorded");
}
