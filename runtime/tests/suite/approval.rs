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
use escepine_runtime::approval::{ApprovalError, Decider, Verdict};
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

/// What an identity provider vouched for: `principal` in `parents` (a token of issuer `iss`).
fn attested(parents: &[&str]) -> escepine_contract::Attestation {
    escepine_contract::Attestation {
        issuer: "http://127.0.0.1:9/".into(),
        jti_sha256: Some(escepine_ledger::entry::sha256_hex(b"jti-1")),
        parents: parents
            .iter()
            .map(|id| Principal {
                entity_type: "Team".into(),
                id: (*id).into(),
            })
            .collect(),
    }
}

/// A principal that no entity file knows — `erin`, a writer by her token's claims — asks for a
/// write: Cedar sees her in `Team::"writers"`, so the call waits (without the attestation it is
/// denied); `carol`, a reviewer by her token, approves it (without the attestation she is not
/// permitted); the approved call is authorized again with erin's recorded parents and runs
/// once. Both attestations are in the ledger, the tokens themselves nowhere.
#[tokio::test]
async fn the_parents_a_token_names_decide_the_call_its_approval_and_the_approved_run() {
    let _host = host::shared().await;
    let store = Store::start();
    let rt = runtime(
        &store,
        Arc::new(escepine_ledger::memory::MemoryLedger::new()),
    );
    let erin = Principal::agent("erin");
    let carol = Principal::agent("carol");

    let bare = rt
        .call(
            &erin,
            "s_put",
            item(&store, "k", "v1"),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(bare.kind(), CallKind::Denied, "{bare}");

    let writer = CallOptions {
        attestation: Some(attested(&["writers"])),
        ..CallOptions::default()
    };
    let waiting = rt
        .call(&erin, "s_put", item(&store, "k", "v1"), writer)
        .await
        .unwrap();
    let CallOutcome::AwaitingApproval { policy_ids, .. } = waiting.outcome() else {
        panic!("waits: {waiting}");
    };
    assert_eq!(policy_ids, &["writers-write-with-approval"]);
    let id = waiting.call_id().to_string();

    let refused = rt.approve(&carol, &id).await.unwrap_err();
    assert!(
        matches!(refused, ApprovalError::NotPermitted { .. }),
        "{refused}"
    );
    let reviewer = attested(&["reviewers"]);
    let approved = rt
        .decide(
            Decider {
                principal: &carol,
                attestation: Some(&reviewer),
            },
            &id,
            Verdict::Approve,
        )
        .await
        .unwrap();
    assert_eq!(approved.kind(), CallKind::Ok, "{approved}");
    assert_eq!(store.applied().get(waiting.idempotency_key()), Some(&1));

    let entries = rt.ledger().entries().unwrap();
    let intent = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Intent(i) if i.call_id == id => Some(i),
            _ => None,
        })
        .unwrap();
    assert_eq!(intent.attestation, Some(attested(&["writers"])));
    let approval = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Approval(a) if a.call_id == id => Some(a),
            _ => None,
        })
        .unwrap();
    assert_eq!(approval.approver, "Agent::\"carol\"");
    assert_eq!(approval.attestation.as_ref(), Some(&reviewer));
    assert_eq!(approval.policy_ids, ["reviewers-approve"]);
    escepine_ledger::verify::verify_entries(&entries, None).unwrap();
}

/// The requester withdraws its own waiting call: recorded (`withdrawn` by the requester, the
/// outcome `rejected`), nothing runs, and nobody can approve it afterwards; no one else can
/// withdraw it, and a call that already ran is not withdrawn.
#[tokio::test]
async fn only_the_requester_withdraws_a_waiting_call_and_then_nothing_runs() {
    let _host = host::shared().await;
    let store = Store::start();
    let rt = runtime(
        &store,
        Arc::new(escepine_ledger::memory::MemoryLedger::new()),
    );
    let alice = Principal::agent("alice");
    let bob = Principal::agent("bob");
    let waiting = put(&rt, &store, "w").await;
    let id = waiting.call_id().to_string();

    let by_bob = rt
        .decide(Decider::named(&bob), &id, Verdict::Withdraw)
        .await
        .unwrap_err();
    assert!(
        matches!(by_bob, ApprovalError::NotRequester { .. }),
        "{by_bob}"
    );
    let withdrawn = rt
        .decide(Decider::named(&alice), &id, Verdict::Withdraw)
        .await
        .unwrap();
    assert_eq!(withdrawn.kind(), CallKind::Rejected, "{withdrawn}");
    assert!(withdrawn.to_string().contains("withdrawn by its requester"));
    let late = rt.approve(&bob, &id).await.unwrap_err();
    assert!(
        matches!(late, ApprovalError::AlreadyDecided { .. }),
        "{late}"
    );
    assert!(store.applied().is_empty());
    let entries = rt.ledger().entries().unwrap();
    let of_call: Vec<String> = entries
        .iter()
        .filter(|e| e.record.call_id() == Some(id.as_str()))
        .map(|e| match &e.record {
            Record::Approval(a) => format!("approval {} by {}", a.result.as_str(), a.approver),
            Record::Outcome(o) => format!("outcome {}", o.result.as_str()),
            other => other.kind().to_string(),
        })
        .collect();
    assert_eq!(
        of_call,
        [
            "intent",
            "approval withdrawn by Agent::\"alice\"",
            "outcome rejected"
        ]
    );

    let ran = put(&rt, &store, "r").await;
    rt.approve(&bob, ran.call_id()).await.unwrap();
    let again = rt
        .decide(Decider::named(&alice), ran.call_id(), Verdict::Withdraw)
        .await
        .unwrap_err();
    assert!(
        matches!(again, ApprovalError::AlreadyDecided { .. }),
        "{again}"
    );
    assert_eq!(store.applied().len(), 1);
}
