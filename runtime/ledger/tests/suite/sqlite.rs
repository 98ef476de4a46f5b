//! The durable ledger on real SQLite files: chaining, reopening, concurrency, unavailability.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_ledger::entry::GENESIS_PREV;
use escepine_ledger::error::LedgerError;
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::record::Record;
use escepine_ledger::sqlite::{read_entries, SqliteLedger, SqliteOptions};
use escepine_ledger::store::{Durability, Ledger};
use escepine_ledger::verify::{verify_entries, verify_path};
use escepine_testkit::ledger::{denied_intent, denied_outcome, intent, outcome, transition};

fn records() -> Vec<Record> {
    vec![
        transition("run-1", "run_started", "read"),
        intent(1, Some("run-1")),
        outcome(1),
        denied_intent(2, None),
        denied_outcome(2),
        transition("run-1", "run_ended", "done"),
    ]
}

#[tokio::test]
async fn a_chain_round_trips_through_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let ledger = SqliteLedger::open(&path, Durability::Full).unwrap();
    assert_eq!(ledger.head().unwrap(), None);
    let mut committed = Vec::new();
    for r in records() {
        committed.push(ledger.append(r).await.unwrap());
    }
    let entries = ledger.entries().unwrap();
    assert_eq!(entries.len(), 6);
    assert_eq!(entries[0].prev, GENESIS_PREV);
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
        assert_eq!(e.record, records()[i]);
        assert_eq!(e.committed(), committed[i]);
        assert_eq!(
            e.computed_hash().unwrap(),
            e.hash,
            "the body re-encodes to the stored canonical text"
        );
        if i > 0 {
            assert_eq!(e.prev, entries[i - 1].hash);
        }
    }
    assert_eq!(ledger.head().unwrap(), Some(committed[5].clone()));

    // The run's entries: its transitions, its call's intent and outcome; not the other call.
    let run: Vec<u64> = ledger
        .entries_for_run("run-1")
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(run, vec![1, 2, 3, 6]);

    let report = verify_path(&path, None).unwrap();
    assert_eq!(
        (report.entries, report.head.as_str()),
        (6, committed[5].hash.as_str())
    );
    assert_eq!(verify_entries(&entries, None).unwrap(), report);
    drop(ledger);
    assert_eq!(read_entries(&path).unwrap(), entries);
}

#[tokio::test]
async fn the_memory_ledger_chains_the_same_way() {
    let ledger = MemoryLedger::new();
    for r in records() {
        ledger.append(r).await.unwrap();
    }
    let entries = ledger.entries().unwrap();
    assert_eq!(ledger.len(), 6);
    assert_eq!(
        verify_entries(&entries, None).unwrap().head,
        entries[5].hash
    );
    let run: Vec<u64> = ledger
        .entries_for_run("run-1")
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(run, vec![1, 2, 3, 6]);
    assert_eq!(ledger.head().unwrap().map(|c| c.seq), Some(6));

    let mut altered = entries.clone();
    altered[2].at_ms += 1;
    let err = verify_entries(&altered, None).unwrap_err();
    assert!(err.to_string().starts_with("entry 3 changed"), "{err}");
}

#[tokio::test]
async fn reopening_continues_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    for (round, durability) in [Durability::Full, Durability::Normal, Durability::Full]
        .into_iter()
        .enumerate()
    {
        let ledger = SqliteLedger::open(&path, durability).unwrap();
        let before = ledger.head().unwrap();
        let c = ledger.append(intent(round, None)).await.unwrap();
        assert_eq!(c.seq, round as u64 + 1);
        let entries = ledger.entries().unwrap();
        let last = entries.last().unwrap();
        assert_eq!(
            last.prev,
            before
                .map(|b| b.hash)
                .unwrap_or_else(|| GENESIS_PREV.to_string())
        );
    }
    let report = verify_path(&path, None).unwrap();
    assert_eq!(report.entries, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_appenders_make_one_gap_free_chain() {
    const TASKS: usize = 64;
    const CALLS: usize = 25;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let ledger = Arc::new(SqliteLedger::open(&path, Durability::Full).unwrap());
    let mut handles = Vec::new();
    for t in 0..TASKS {
        let ledger = ledger.clone();
        handles.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for c in 0..CALLS {
                let n = t * 1000 + c;
                got.push(
                    ledger
                        .append(intent(n, Some(&format!("run-{t}"))))
                        .await
                        .unwrap(),
                );
                got.push(ledger.append(outcome(n)).await.unwrap());
            }
            got
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        let got = h.await.unwrap();
        // Each task's own appends are ordered in the chain.
        assert!(got.windows(2).all(|w| w[0].seq < w[1].seq));
        all.extend(got);
    }
    let total = (TASKS * CALLS * 2) as u64;
    let seqs: HashSet<u64> = all.iter().map(|c| c.seq).collect();
    assert_eq!(
        seqs,
        (1..=total).collect::<HashSet<_>>(),
        "every append has its own seq, without gaps"
    );
    let entries = ledger.entries().unwrap();
    for c in &all {
        assert_eq!(entries[(c.seq - 1) as usize].hash, c.hash);
    }
    assert_eq!(ledger.entries_for_run("run-7").unwrap().len(), CALLS * 2);
    assert_eq!(verify_path(&path, None).unwrap().entries, total);
}

#[test]
fn a_ledger_that_cannot_be_opened_for_writing_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();

    let not_a_db = dir.path().join("notes.txt");
    std::fs::write(
        &not_a_db,
        "these are not the pages of a SQLite database\n".repeat(100),
    )
    .unwrap();
    let err = SqliteLedger::open(&not_a_db, Durability::Full).unwrap_err();
    assert!(matches!(err, LedgerError::Unavailable { .. }), "{err}");

    let missing_dir = dir.path().join("no/such/dir/ledger.db");
    assert!(matches!(
        SqliteLedger::open(&missing_dir, Durability::Full),
        Err(LedgerError::Unavailable { .. })
    ));

    assert!(matches!(
        SqliteLedger::open(dir.path(), Durability::Full),
        Err(LedgerError::Unavailable { .. })
    ));

    // A database whose `entries` table has another shape.
    let other = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE entries (id INTEGER PRIMARY KEY, note TEXT)")
        .unwrap();
    drop(conn);
    let err = SqliteLedger::open(&other, Durability::Full).unwrap_err();
    assert!(err.to_string().contains("another shape"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_fails_while_the_ledger_cannot_be_written_and_the_chain_survives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let options = SqliteOptions {
        busy_timeout: Duration::from_millis(100),
        ..SqliteOptions::default()
    };
    let ledger = SqliteLedger::open_with(&path, options).unwrap();
    ledger.append(intent(1, None)).await.unwrap();

    // Another process's connection holds the write lock: no batch can commit.
    let blocker = rusqlite::Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let started = Instant::now();
    let (a, b) = tokio::join!(ledger.append(outcome(1)), ledger.append(intent(2, None)));
    for r in [a, b] {
        match r {
            Err(LedgerError::Unavailable { what, .. }) => {
                assert!(what.contains("locked"), "{what}")
            }
            other => panic!("expected the ledger to be unavailable, got {other:?}"),
        }
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    blocker.execute_batch("COMMIT").unwrap();
    drop(blocker);

    // Nothing of the failed batch was kept; the chain continues without a gap.
    let c = ledger.append(outcome(1)).await.unwrap();
    assert_eq!(c.seq, 2);
    assert_eq!(verify_path(&path, None).unwrap().entries, 2);
}

#[tokio::test]
async fn a_second_writer_on_the_same_file_does_not_fork_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let a = SqliteLedger::open(&path, Durability::Normal).unwrap();
    let b = SqliteLedger::open(&path, Durability::Normal).unwrap();
    for n in 0..10 {
        let (x, y) = tokio::join!(a.append(intent(n, None)), b.append(outcome(n)));
        assert_ne!(x.unwrap().seq, y.unwrap().seq);
    }
    assert_eq!(verify_path(&path, None).unwrap().entries, 20);
}

/// Opens the ledger at `path` from `n` threads at once (each its own connection, as `n`
/// processes would have); how many opened.
fn open_at_once(path: &std::path::Path, n: usize) -> usize {
    let start = std::sync::Arc::new(std::sync::Barrier::new(n));
    let opened: Vec<_> = (0..n)
        .map(|_| {
            let (path, start) = (path.to_path_buf(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                SqliteLedger::open(&path, Durability::Full)
            })
        })
        .collect();
    opened
        .into_iter()
        .map(|t| t.join().unwrap())
        .inspect(|r| {
            if let Err(e) = r {
                eprintln!("{e}");
            }
        })
        .filter(Result::is_ok)
        .count()
}

#[test]
fn runtimes_opening_a_new_ledger_at_once_all_open_it() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let path = dir.path().join(format!("ledger-{round}.db"));
        assert_eq!(open_at_once(&path, 6), 6, "round {round}");
    }
}
