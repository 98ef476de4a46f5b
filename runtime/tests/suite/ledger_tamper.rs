//! Tampering with a real ledger file through the `sqlite3` command-line tool, then
//! `escepine ledger verify` (exit 0 intact, 1 tampered naming the entry) and `escepine ledger show`.
//!
//! Needs the `sqlite3` program (Debian package `sqlite3`).

use crate::support::host;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_testkit::ledger::{denied_intent, denied_outcome, intent, outcome, transition};

fn escepine(args: &[&str]) -> Output {
    Command::new(escepine_testkit::bins::path(
        escepine_testkit::bins::ESCEPINE,
    ))
    .args(args)
    .output()
    .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn sqlite3(db: &Path, sql: &str) {
    let out = Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
        .expect("the sqlite3 command-line tool is needed (apt-get install sqlite3)");
    assert!(
        out.status.success(),
        "sqlite3 failed on {sql}: {}",
        text(&out.stderr)
    );
}

/// A closed ledger of 10 entries: odd seqs are intents (allowed), even seqs their outcomes.
fn ledger(dir: &Path) -> (PathBuf, String) {
    let path = dir.join("ledger.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let head = rt.block_on(async {
        let ledger = SqliteLedger::open(&path, Durability::Full).unwrap();
        let mut head = None;
        for n in 1..=5 {
            ledger.append(intent(n, Some("run-1"))).await.unwrap();
            head = Some(ledger.append(outcome(n)).await.unwrap());
        }
        head.unwrap().hash
    });
    assert!(
        !dir.join("ledger.db-wal").exists(),
        "closing the ledger checkpoints its WAL"
    );
    (path, head)
}

fn verify(path: &Path) -> Output {
    escepine(&["ledger", "verify", path.to_str().unwrap()])
}

#[test]
fn an_untouched_ledger_verifies() {
    let _host = host::shared_blocking();
    let dir = tempfile::tempdir().unwrap();
    let (path, head) = ledger(dir.path());
    let out = verify(&path);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(
        text(&out.stdout).trim(),
        format!("intact: 10 entries, head {head}")
    );
}

#[test]
fn each_tampering_with_sqlite3_is_named() {
    let _host = host::shared_blocking();
    let cases: &[(&str, &str, &str)] = &[
        (
            "a changed body",
            r#"UPDATE entries SET body = replace(body, '"allow"', '"deny"') WHERE seq = 5;"#,
            "entry 5 changed",
        ),
        ("a changed time", "UPDATE entries SET at_ms = at_ms + 1 WHERE seq = 8;", "entry 8 changed"),
        ("a deleted row", "DELETE FROM entries WHERE seq = 5;", "entry 5 removed"),
        ("the first row deleted", "DELETE FROM entries WHERE seq = 1;", "entry 1 removed"),
        (
            "a deleted row, later rows renumbered",
            "DELETE FROM entries WHERE seq = 4; UPDATE entries SET seq = -seq WHERE seq > 4; \
             UPDATE entries SET seq = -seq - 1 WHERE seq < 0;",
            "entry 4 removed",
        ),
        (
            "a row inserted in the middle, later rows renumbered",
            r#"UPDATE entries SET seq = -seq WHERE seq >= 5; UPDATE entries SET seq = 1 - seq WHERE seq < 0;
               INSERT INTO entries (seq, prev, hash, at_ms, body) VALUES (5, (SELECT hash FROM entries WHERE seq = 4),
                 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00', 1700000000000,
                 '{"event":"forged","kind":"transition","run_id":"run-1"}');"#,
            "entry 5 inserted",
        ),
        (
            "a row appended at the end",
            r#"INSERT INTO entries (seq, prev, hash, at_ms, body) VALUES (11, (SELECT hash FROM entries WHERE seq = 10),
                 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00', 1700000000000,
                 '{"event":"forged","kind":"transition","run_id":"run-1"}');"#,
            "entry 11 ",
        ),
        (
            "a copy of a row appended",
            "INSERT INTO entries (seq, prev, hash, at_ms, body) SELECT 11, prev, hash, at_ms, body FROM entries WHERE seq = 3;",
            "entry 11 inserted",
        ),
        (
            "two rows' bodies swapped",
            "CREATE TEMP TABLE t AS SELECT seq, body FROM entries WHERE seq IN (5, 7); \
             UPDATE entries SET body = (SELECT body FROM t WHERE t.seq = 12 - entries.seq) WHERE seq IN (5, 7);",
            "entry 5 reordered",
        ),
        (
            "two whole rows swapped",
            "UPDATE entries SET seq = -seq WHERE seq IN (6, 7); UPDATE entries SET seq = 13 + seq WHERE seq < 0;",
            "entry 6 reordered",
        ),
        ("a hash overwritten", "UPDATE entries SET hash = upper(hash) WHERE seq = 9;", "entry 9 changed"),
        // The index of call ids is not hashed: a read of a call through it would miss an
        // entry, or take another call's.
        (
            "an outcome filed under another call",
            "UPDATE entries SET call_id = 'call-1' WHERE seq = 4;",
            "entry 4 misindexed",
        ),
        ("an outcome taken out of the index", "UPDATE entries SET call_id = NULL WHERE seq = 6;", "entry 6 misindexed"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let (original, _) = ledger(dir.path());
    for (i, (what, sql, expect)) in cases.iter().enumerate() {
        let copy = dir.path().join(format!("case-{i}.db"));
        std::fs::copy(&original, &copy).unwrap();
        sqlite3(&copy, sql);
        let out = verify(&copy);
        let stdout = text(&out.stdout);
        println!("{what}: {}", stdout.trim_end());
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(
            stdout.starts_with(&format!("tampered: {expect}")),
            "{what}: expected `{expect}`, got {stdout}"
        );
    }
}

#[test]
fn a_cut_off_end_shows_only_against_a_known_head() {
    let _host = host::shared_blocking();
    let dir = tempfile::tempdir().unwrap();
    let (path, head) = ledger(dir.path());
    let out = escepine(&["ledger", "verify", path.to_str().unwrap(), "--head", &head]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("is entry 10"),
        "{}",
        text(&out.stdout)
    );

    sqlite3(&path, "DELETE FROM entries WHERE seq >= 9;");
    assert_eq!(
        verify(&path).status.code(),
        Some(0),
        "a shorter chain is still a chain"
    );
    let out = escepine(&["ledger", "verify", path.to_str().unwrap(), "--head", &head]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).starts_with("tampered: entry 9 removed"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_file_that_is_not_a_ledger_is_unreadable() {
    let _host = host::shared_blocking();
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        "not a database at all, just some text that is long enough\n".repeat(200),
    )
    .unwrap();
    for p in [junk, dir.path().join("missing.db")] {
        let out = verify(&p);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains("ledger unavailable"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn show_prints_runs_and_calls_readably() {
    let _host = host::shared_blocking();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ledger = SqliteLedger::open(&path, Durability::Full).unwrap();
        for r in [
            transition("run-1", "run_started", "read"),
            intent(1, Some("run-1")),
            denied_intent(2, None),
            outcome(1),
            denied_outcome(2),
            intent(3, Some("run-2")),
            transition("run-1", "run_ended", "done"),
        ] {
            ledger.append(r).await.unwrap();
        }
    });
    let p = path.to_str().unwrap();
    let out = escepine(&["ledger", "show", p]);
    let all = text(&out.stdout);
    println!("{all}");
    assert_eq!(out.status.code(), Some(0), "{all}{}", text(&out.stderr));
    for needle in [
        "7 entries, 2 runs, 3 calls",
        "run run-1",
        "run_started  state read",
        "call call-1  kb_fetch@1.2.0  read-only  step read",
        r#"principal  Agent::"alice""#,
        "decision   allow  policies kb-read, page-read:0",
        "attempt 1  2023-11-14T22:13:20.000Z      15.250 ms  transient: exit 75: upstream busy",
        "attempt 2  2023-11-14T22:13:20.100Z       3.125 ms  ok",
        "outcome    ok  output sha256 ",
        "run run-2",
        "call call-3",
        "outcome    (none recorded)",
        "calls outside any run",
        "decision   deny  policies no-linkedin",
        "outcome    denied",
    ] {
        assert!(all.contains(needle), "missing `{needle}` in:\n{all}");
    }
    // Runs first, calls outside any run last.
    assert!(all.find("run run-2").unwrap() < all.find("calls outside any run").unwrap());

    let out = escepine(&["ledger", "show", p, "--run", "run-2"]);
    let one = text(&out.stdout);
    assert!(
        one.contains("call call-3") && !one.contains("call-1") && !one.contains("run-1"),
        "{one}"
    );

    let out = escepine(&["ledger", "show", p, "--run", "no-such-run"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no entries for run no-such-run"));

    // A body that no longer decodes is named, not unwrapped.
    sqlite3(
        &path,
        "UPDATE entries SET body = '{\"kind\":\"bogus\"}' WHERE seq = 4;",
    );
    let out = escepine(&["ledger", "show", p]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("ledger entry 4 is corrupt"),
        "{}",
        text(&out.stderr)
    );
}
