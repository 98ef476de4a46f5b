//! One call's state is read through the index of call ids, not by scanning the chain: on a
//! ledger of 100,000 entries (SQLite, and memory), reading a call decodes that call's entries
//! only — a handful of rows — as the store's `rows_read` counter shows. And a SQLite file
//! written before the index existed is indexed when a writer opens it.

use std::path::Path;
use std::time::Instant;

use escepine_ledger::calls::{state::CallState, CallView};
use escepine_ledger::entry::Entry;
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::record::{CallResult, Record};
use escepine_ledger::sqlite::{SqliteLedger, SqliteOptions};
use escepine_ledger::store::{Durability, Ledger};
use escepine_ledger::verify::verify_path;
use escepine_testkit::ledger::{intent, outcome, transition};

/// Entries in the large ledgers.
const ENTRIES: usize = 100_000;

/// The records of the large ledgers: per call an intent and an outcome, and every 40th entry a
/// transition of a run, up to `ENTRIES`.
fn records() -> impl Iterator<Item = Record> {
    (0..)
        .flat_map(|n| {
            let mut r = vec![intent(n, None), outcome(n)];
            if n % 20 == 0 {
                r.push(transition("run-1", "transition", "read"));
            }
            r
        })
        .take(ENTRIES)
}

/// Append every record through the store's own append, in groups the writer commits together.
async fn fill(ledger: &dyn Ledger) {
    let records: Vec<Record> = records().collect();
    for group in records.chunks(2_000) {
        // Each append is queued when it is called, so a group shares transactions.
        let pending: Vec<_> = group.iter().cloned().map(|r| ledger.append(r)).collect();
        for p in pending {
            p.await.expect("append");
        }
    }
}

/// Read call `n` and check what it holds; the rows the store read for it.
fn read_call(ledger: &dyn Ledger, n: usize) -> u64 {
    let before = ledger.rows_read();
    let started = Instant::now();
    let view = CallView::new(ledger);
    let call = view
        .call(&format!("call-{n}"))
        .expect("read")
        .expect("the call is there");
    let state = view.state(&format!("call-{n}"), 0).expect("state");
    let read = ledger.rows_read() - before;
    eprintln!(
        "call-{n}: {read} rows read for the call and its state, {:?}",
        started.elapsed()
    );
    let intent = call.intent.as_ref().expect("an intent");
    let outcome = call.outcome.as_ref().expect("an outcome");
    assert!(intent.seq < outcome.seq);
    assert_eq!(call.attempts().len(), 2);
    assert!(matches!(state, CallState::Ended(o) if o.result == CallResult::Ok));
    read
}

fn check_index_is_read(ledger: &dyn Ledger) {
    assert_eq!(
        ledger.head().expect("head").map(|h| h.seq),
        Some(ENTRIES as u64)
    );
    for n in [0, 12_345, 47_000] {
        // The intent and the outcome, twice (the call, then its state): nothing else.
        assert_eq!(read_call(ledger, n), 4, "call-{n} read through the index");
    }
    let before = ledger.rows_read();
    assert_eq!(
        CallView::new(ledger).call("no-such-call").expect("read"),
        None
    );
    assert_eq!(ledger.rows_read(), before, "an unknown call reads no row");
    // What the index spares: the whole chain is every row.
    let all = ledger.entries().expect("entries").len();
    assert_eq!(ledger.rows_read() - before, all as u64);
    assert_eq!(all, ENTRIES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_100_000_sqlite_entries_is_read_from_its_own_rows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = SqliteLedger::open_with(
        dir.path().join("ledger.db"),
        SqliteOptions {
            max_batch: 2_000,
            ..SqliteOptions::durability(Durability::Normal)
        },
    )
    .expect("open");
    let started = Instant::now();
    fill(&ledger).await;
    eprintln!(
        "{ENTRIES} SQLite entries appended in {:?}",
        started.elapsed()
    );
    check_index_is_read(&ledger);
}

#[tokio::test]
async fn a_call_of_100_000_memory_entries_is_read_from_its_own_rows() {
    let ledger = MemoryLedger::new();
    let started = Instant::now();
    fill(&ledger).await;
    eprintln!(
        "{ENTRIES} memory entries appended in {:?}",
        started.elapsed()
    );
    check_index_is_read(&ledger);
}

/// A ledger file as written before the `call_id` column existed: the five columns, the chain of
/// `records` sealed by hand.
fn old_ledger(path: &Path, records: Vec<Record>) -> Vec<Entry> {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.execute_batch(
        "CREATE TABLE entries (
            seq   INTEGER PRIMARY KEY,
            prev  TEXT    NOT NULL,
            hash  TEXT    NOT NULL,
            at_ms INTEGER NOT NULL,
            body  TEXT    NOT NULL
        )",
    )
    .expect("the old table");
    let mut prev = escepine_ledger::entry::GENESIS_PREV.to_string();
    let mut entries = Vec::new();
    for (i, record) in records.into_iter().enumerate() {
        let e = Entry::seal(i as u64 + 1, prev, 1_700_000_000_000, record).expect("sealed");
        conn.execute(
            "INSERT INTO entries VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![e.seq as i64, e.prev, e.hash, e.at_ms as i64, e.body()],
        )
        .expect("insert");
        prev = e.hash.clone();
        entries.push(e);
    }
    entries
}

#[tokio::test]
async fn a_ledger_written_before_the_index_is_indexed_when_opened() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let old = old_ledger(
        &path,
        vec![
            transition("run-1", "run_started", "read"),
            intent(1, Some("run-1")),
            intent(2, None),
            outcome(1),
            outcome(2),
        ],
    );
    // Read-only, before any writer: read by scanning, the same entries.
    let scanned = escepine_ledger::sqlite::read_call(&path, "call-1").expect("read");
    assert_eq!(scanned, vec![old[1].clone(), old[3].clone()]);

    let ledger = SqliteLedger::open(&path, Durability::Full).expect("open migrates");
    let before = ledger.rows_read();
    let call = CallView::new(&ledger)
        .call("call-1")
        .expect("read")
        .expect("call-1");
    assert_eq!(ledger.rows_read() - before, 2, "through the index");
    assert_eq!(call.intent.map(|i| i.seq), Some(2));
    assert_eq!(call.outcome.map(|o| o.seq), Some(4));
    // The chain is as it was, and goes on; the new entries are indexed as appended.
    ledger.append(outcome(3)).await.expect("append");
    ledger.append(intent(3, None)).await.expect("append");
    let call = CallView::new(&ledger).call("call-3").expect("read");
    assert_eq!(
        call.map(|c| (c.intent.map(|i| i.seq), c.outcome.map(|o| o.seq))),
        Some((Some(7), Some(6)))
    );
    drop(ledger);
    assert_eq!(verify_path(&path, None).expect("intact").entries, 7);
    let conn = rusqlite::Connection::open(&path).expect("open");
    let indexed: Vec<(i64, Option<String>)> = conn
        .prepare("SELECT seq, call_id FROM entries ORDER BY seq")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let ids: Vec<Option<&str>> = indexed.iter().map(|(_, c)| c.as_deref()).collect();
    assert_eq!(
        ids,
        [
            None,
            Some("call-1"),
            Some("call-2"),
            Some("call-1"),
            Some("call-2"),
            Some("call-3"),
            Some("call-3")
        ]
    );
    let plan: String = conn
        .query_row(
            "EXPLAIN QUERY PLAN SELECT seq, prev, hash, at_ms, body FROM entries WHERE call_id = 'call-1' ORDER BY seq",
            [],
            |r| r.get(3),
        )
        .expect("plan");
    assert!(plan.contains("entries_by_call"), "{plan}");
}
