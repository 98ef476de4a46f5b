//! `escepine ledger keygen`, `checkpoint`, `prove` and `verify --checkpoint` on real SQLite
//! ledgers, tampered with through the `sqlite3` command-line tool (Debian package `sqlite3`), and
//! on the same rows in PostgreSQL ledgers tampered with through SQL: every change, removal,
//! insertion, swap, cut tail and consistent rewrite of what a checkpoint covers is found; every call's inclusion proof verifies; two checkpoints are proven consistent,
//! and a history rewritten between them is not.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use escepine_ledger::checkpoint::{self, Checkpoint, VerifierKey};
use escepine_ledger::entry::{entry_hash, CallIndex, GENESIS_PREV};
use escepine_ledger::merkle::{
    hash_from_b64, leaf_hash, verify_consistency, verify_inclusion, Hash,
};
use escepine_ledger::postgres::PostgresLedger;
use escepine_ledger::sqlite::{read_rows, SqliteLedger};
use escepine_ledger::store::{Durability, Ledger};
use escepine_testkit::ledger::{intent, outcome, transition};
use escepine_testkit::postgres::TestDatabase;
use serde_json::Value;

const NAME: &str = "example.com/escepine/test-log";

fn escepine(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(args)
        .output()
        .expect("run escepine")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}stderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
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

/// Append calls `from ..= to` (intent, outcome) to the ledger at `path`, and a transition after
/// each third call.
fn append(path: &Path, from: usize, to: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let ledger = SqliteLedger::open(path, Durability::Full).expect("open the ledger");
        for n in from..=to {
            ledger
                .append(intent(n, Some("run-1")))
                .await
                .expect("append");
            ledger.append(outcome(n)).await.expect("append");
            if n % 3 == 0 {
                ledger
                    .append(transition("run-1", "step_started", "read"))
                    .await
                    .expect("append");
            }
        }
    });
}

/// A key made by `ledger keygen`, and a ledger of calls 1 ..= 8 (18 entries).
struct Setup {
    dir: tempfile::TempDir,
    db: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let keys = dir.path().join("keys");
        let out = escepine(&["ledger", "keygen", "--name", NAME, "--out", s(&keys)]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let db = dir.path().join("ledger.db");
        append(&db, 1, 8);
        Self { dir, db }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn signer(&self) -> PathBuf {
        self.path("keys/signer.key")
    }

    fn verifier(&self) -> PathBuf {
        self.path("keys/verifier.pub")
    }

    /// `ledger checkpoint` of `db`, written to `file`.
    fn checkpoint(&self, db: &Path, file: &str) -> PathBuf {
        let out = escepine(&["ledger", "checkpoint", s(db), "--key", s(&self.signer())]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(out.stderr.is_empty(), "{}", show(&out));
        let path = self.path(file);
        std::fs::write(&path, &out.stdout).expect("write the checkpoint");
        path
    }

    fn opened(&self, file: &Path) -> Checkpoint {
        let key = VerifierKey::parse(&std::fs::read_to_string(self.verifier()).unwrap()).unwrap();
        checkpoint::open(&std::fs::read_to_string(file).unwrap(), &key).expect("a valid checkpoint")
    }

    fn verify(&self, db: &Path, checkpoints: &[&Path]) -> Output {
        self.verify_at(s(db), checkpoints)
    }

    /// `ledger verify` of the ledger at `location` (a path or a URL) against `checkpoints`.
    fn verify_at(&self, location: &str, checkpoints: &[&Path]) -> Output {
        let mut args = vec!["ledger", "verify", location];
        for c in checkpoints {
            args.extend(["--checkpoint", s(c)]);
        }
        let key = self.verifier();
        args.extend(["--public-key", s(&key)]);
        escepine(&args)
    }

    fn copy(&self, name: &str) -> PathBuf {
        let copy = self.path(name);
        std::fs::copy(&self.db, &copy).expect("copy the ledger");
        copy
    }
}

/// SQL that rewrites entry `seq`'s body (`"allow"` → `"deny"`) and re-seals it and every later
/// entry with recomputed hashes: a chain that verifies on its own, made without any key.
fn rechain_sql(db: &Path, seq: usize) -> String {
    let mut rows = read_rows(db).expect("the rows");
    let mut prev = if seq == 1 {
        GENESIS_PREV.to_string()
    } else {
        rows[seq - 2].hash.clone().unwrap()
    };
    let mut sql = String::from("BEGIN;");
    for (i, r) in rows.iter_mut().enumerate().skip(seq - 1) {
        let mut body = r.body.clone().unwrap();
        if i == seq - 1 {
            assert!(body.contains("\"allow\""), "entry {seq} is an intent");
            body = body.replace("\"allow\"", "\"deny\"");
        }
        let at = r.at_ms.unwrap() as u64;
        let hash = entry_hash(r.seq as u64, &prev, at, &body);
        sql.push_str(&format!(
            "UPDATE entries SET prev = '{prev}', hash = '{hash}', body = '{}' WHERE seq = {};",
            body.replace('\'', "''"),
            r.seq
        ));
        prev = hash;
    }
    sql.push_str("COMMIT;");
    sql
}

#[test]
fn keygen_writes_exactly_the_two_keys_and_refuses_bad_names_and_overwrites() {
    let setup = Setup::new();
    let keys = setup.path("keys");
    let mut files: Vec<String> = std::fs::read_dir(&keys)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["signer.key", "verifier.pub"]);
    let signer = std::fs::read_to_string(setup.signer()).unwrap();
    let verifier = std::fs::read_to_string(setup.verifier()).unwrap();
    assert!(
        signer.starts_with(&format!("PRIVATE+KEY+{NAME}+")),
        "{signer}"
    );
    let parts: Vec<&str> = verifier.trim().splitn(3, '+').collect();
    assert_eq!(parts[0], NAME);
    assert!(parts[1].len() == 8 && parts[1].bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(signer.contains(&format!("+{}+", parts[1])));
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(setup.signer())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the signer key is private");

    let again = escepine(&["ledger", "keygen", "--name", NAME, "--out", s(&keys)]);
    assert_eq!(again.status.code(), Some(1), "{}", show(&again));
    assert!(
        text(&again.stderr).contains("not empty"),
        "{}",
        show(&again)
    );
    assert_eq!(std::fs::read_to_string(setup.signer()).unwrap(), signer);

    let bad = escepine(&[
        "ledger",
        "keygen",
        "--name",
        "a+b",
        "--out",
        s(&setup.path("k2")),
    ]);
    assert_eq!(bad.status.code(), Some(1), "{}", show(&bad));
    assert!(
        text(&bad.stderr).contains("key name `a+b`: it contains `+`"),
        "{}",
        show(&bad)
    );
    assert!(!setup.path("k2").exists());
}

#[test]
fn a_checkpoint_is_printed_only_and_verifies_the_untouched_ledger() {
    let setup = Setup::new();
    let before = std::fs::read(&setup.db).unwrap();
    let file = setup.checkpoint(&setup.db, "cp");
    assert_eq!(
        std::fs::read(&setup.db).unwrap(),
        before,
        "nothing is written into the ledger"
    );
    let note = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = note.lines().collect();
    assert_eq!(lines[0], NAME);
    assert_eq!(lines[1], "18");
    assert_eq!(lines[3], "");
    assert!(lines[4].starts_with(&format!("\u{2014} {NAME} ")), "{note}");
    let cp = setup.opened(&file);
    assert_eq!(cp.size, 18);

    let out = setup.verify(&setup.db, &[&file]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = text(&out.stdout);
    let head = read_rows(&setup.db)
        .unwrap()
        .last()
        .unwrap()
        .hash
        .clone()
        .unwrap();
    assert_eq!(
        stdout.lines().next().unwrap(),
        format!("intact: 18 entries, head {head}")
    );
    assert!(
        stdout.contains(&format!("18 of 18 entries, root {}", lines[2])),
        "{stdout}"
    );

    // Without checkpoints, the output is as it always was.
    let plain = escepine(&["ledger", "verify", s(&setup.db)]);
    assert_eq!(
        text(&plain.stdout),
        format!("intact: 18 entries, head {head}\n")
    );
}

/// Where the tampered rows live: the SQL of a renumbering differs (PostgreSQL's table checks
/// `seq >= 1` on every row, so rows are moved out of the way by an offset, not a sign).
#[derive(Clone, Copy)]
enum Store {
    Sqlite,
    Postgres,
}

/// Each tampering of the 18 entries a checkpoint covers: what, the SQL, the verdict expected.
fn tamperings(setup: &Setup, store: Store) -> Vec<(&'static str, String, &'static str)> {
    let forged = "INSERT INTO entries (seq, prev, hash, at_ms, body) VALUES (5, (SELECT hash FROM entries WHERE seq = 4),
                 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00', 1700000000000,
                 '{\"event\":\"forged\",\"kind\":\"transition\",\"run_id\":\"run-1\"}');";
    let (insert, swap) = match store {
        Store::Sqlite => (
            format!(
                "UPDATE entries SET seq = -seq WHERE seq >= 5; \
                 UPDATE entries SET seq = 1 - seq WHERE seq < 0; {forged}"
            ),
            "UPDATE entries SET seq = -seq WHERE seq IN (6, 7); \
             UPDATE entries SET seq = 13 + seq WHERE seq < 0;"
                .to_string(),
        ),
        Store::Postgres => (
            format!(
                "UPDATE entries SET seq = seq + 1000 WHERE seq >= 5; \
                 UPDATE entries SET seq = seq - 999 WHERE seq > 1000; {forged}"
            ),
            "UPDATE entries SET seq = seq + 1000 WHERE seq IN (6, 7); \
             UPDATE entries SET seq = 1013 - seq WHERE seq > 1000;"
                .to_string(),
        ),
    };
    vec![
        (
            "a changed body",
            r#"UPDATE entries SET body = replace(body, '"allow"', '"deny"') WHERE seq = 5;"#.into(),
            "tampered: entry 5 changed",
        ),
        ("a deleted row", "DELETE FROM entries WHERE seq = 5;".into(), "tampered: entry 5 removed"),
        ("a row inserted, later rows renumbered", insert, "tampered: entry 5 inserted"),
        ("two rows swapped", swap, "tampered: entry 6 reordered"),
        (
            "an outcome filed under another call",
            "UPDATE entries SET call_id = 'call-1' WHERE seq = 4;".into(),
            "tampered: entry 4 misindexed",
        ),
        (
            "the tail cut",
            "DELETE FROM entries WHERE seq > 14;".into(),
            "tampered: entry 15 removed: the checkpoint covers 18 entries, but the chain ends at entry 14",
        ),
        (
            "every row deleted",
            "DELETE FROM entries;".into(),
            "tampered: entry 1 removed: the checkpoint covers 18 entries",
        ),
        (
            "the whole chain rewritten with recomputed hashes",
            rechain_sql(&setup.db, 1),
            "tampered: entries 1 to 18 rewritten",
        ),
        (
            "a late entry rewritten, the rest re-chained",
            rechain_sql(&setup.db, 17),
            "tampered: entries 1 to 18 rewritten",
        ),
    ]
}

/// `verify --checkpoint` of a tampered `ledger` (a path or a URL) reports `expect`, and only that.
fn assert_tampered(setup: &Setup, ledger: &str, cp: &Path, what: &str, expect: &str) {
    let out = setup.verify_at(ledger, &[cp]);
    assert_eq!(out.status.code(), Some(1), "{what}: {}", show(&out));
    assert!(
        text(&out.stdout).starts_with(expect),
        "{what}: {}",
        show(&out)
    );
    assert!(
        !text(&out.stdout).contains("intact"),
        "{what}: {}",
        show(&out)
    );
}

#[test]
fn each_tampering_of_what_a_checkpoint_covers_is_found() {
    let setup = Setup::new();
    let cp = setup.checkpoint(&setup.db, "cp");
    for (i, (what, sql, expect)) in tamperings(&setup, Store::Sqlite).iter().enumerate() {
        let copy = setup.copy(&format!("case-{i}.db"));
        sqlite3(&copy, sql);
        assert_tampered(&setup, s(&copy), &cp, what, expect);
    }
    // A consistent rewrite passes the chain check alone: the checkpoint is what finds it.
    let copy = setup.copy("rewritten.db");
    sqlite3(&copy, &rechain_sql(&setup.db, 1));
    let plain = escepine(&["ledger", "verify", s(&copy)]);
    assert_eq!(plain.status.code(), Some(0), "{}", show(&plain));
}

/// The SQL that copies the rows of the SQLite ledger at `db` into an empty `entries` table,
/// each filed under its call as the SQLite file files it.
fn copy_rows_sql(db: &Path) -> String {
    let mut sql = String::from("BEGIN;");
    for r in read_rows(db).expect("the rows") {
        let call_id = match r.call_id {
            CallIndex::Column(Some(id)) => format!("'{id}'"),
            CallIndex::Column(None) => "NULL".to_string(),
            CallIndex::Absent => panic!("the SQLite file has the index of call ids"),
        };
        sql.push_str(&format!(
            "INSERT INTO entries (seq, prev, hash, at_ms, body, call_id) \
             VALUES ({}, '{}', '{}', {}, '{}', {call_id});",
            r.seq,
            r.prev.unwrap(),
            r.hash.unwrap(),
            r.at_ms.unwrap(),
            r.body.unwrap().replace('\'', "''")
        ));
    }
    sql.push_str("COMMIT;");
    sql
}

#[test]
fn each_tampering_of_postgresql_rows_is_found_against_the_same_checkpoint() {
    let setup = Setup::new();
    let cp = setup.checkpoint(&setup.db, "cp");
    let copy = copy_rows_sql(&setup.db);
    // The same rows in a PostgreSQL ledger: the checkpoint signed over the SQLite file covers
    // them as well (the tree depends on the entries only), then each tampering is found.
    let fresh = || {
        let db = TestDatabase::create();
        drop(PostgresLedger::open(&db.url(), Durability::Full).expect("create the table"));
        db.execute(&copy);
        db
    };
    let untouched = fresh();
    let out = setup.verify_at(&untouched.url(), &[&cp]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for (what, sql, expect) in tamperings(&setup, Store::Postgres) {
        let db = fresh();
        db.execute(&sql);
        assert_tampered(&setup, &db.url(), &cp, what, expect);
    }
}

#[test]
fn an_altered_or_foreign_checkpoint_is_refused() {
    let setup = Setup::new();
    let cp = setup.checkpoint(&setup.db, "cp");
    let note = std::fs::read_to_string(&cp).unwrap();
    let altered = setup.path("altered");
    std::fs::write(&altered, note.replacen("\n18\n", "\n17\n", 1)).unwrap();
    let out = setup.verify(&setup.db, &[&altered]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text(&out.stdout).contains("does not verify"),
        "{}",
        show(&out)
    );

    let other = setup.path("other-keys");
    let k = escepine(&["ledger", "keygen", "--name", NAME, "--out", s(&other)]);
    assert_eq!(k.status.code(), Some(0), "{}", show(&k));
    let out = escepine(&[
        "ledger",
        "verify",
        s(&setup.db),
        "--checkpoint",
        s(&cp),
        "--public-key",
        s(&other.join("verifier.pub")),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text(&out.stdout).contains("has no signature by"),
        "{}",
        show(&out)
    );

    let garbled = setup.path("garbled");
    std::fs::write(&garbled, "not a checkpoint").unwrap();
    let out = setup.verify(&setup.db, &[&garbled]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("garbled: not a signed note"),
        "{}",
        show(&out)
    );

    let bad_key = setup.path("bad.pub");
    std::fs::write(&bad_key, "nobody+00000000+AAAA").unwrap();
    let out = escepine(&[
        "ledger",
        "verify",
        s(&setup.db),
        "--checkpoint",
        s(&cp),
        "--public-key",
        s(&bad_key),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("bad.pub: verifier key:"),
        "{}",
        show(&out)
    );

    // A checkpoint without its key is a usage error.
    let out = escepine(&["ledger", "verify", s(&setup.db), "--checkpoint", s(&cp)]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    // No checkpoint of a broken chain is signed.
    let copy = setup.copy("broken.db");
    sqlite3(&copy, "UPDATE entries SET at_ms = at_ms + 1 WHERE seq = 3;");
    let out = escepine(&[
        "ledger",
        "checkpoint",
        s(&copy),
        "--key",
        s(&setup.signer()),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(out.stdout.is_empty(), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("tampered: entry 3 changed"),
        "{}",
        show(&out)
    );
}

fn hashes(v: &Value) -> Vec<Hash> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|h| hash_from_b64(h.as_str().unwrap()).unwrap())
        .collect()
}

#[test]
fn every_calls_inclusion_proofs_verify_against_the_checkpoint() {
    let setup = Setup::new();
    let cp = setup.opened(&setup.checkpoint(&setup.db, "cp"));
    for n in 1..=8 {
        let call = format!("call-{n}");
        let out = escepine(&["ledger", "prove", s(&setup.db), &call]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let proof: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(proof["call_id"], call.as_str());
        assert_eq!(proof["tree_size"], cp.size);
        assert_eq!(
            hash_from_b64(proof["root"].as_str().unwrap()).unwrap(),
            cp.root
        );
        let entries = proof["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 2, "the intent and the outcome of {call}");
        for e in entries {
            let input = e["leaf_input"].as_str().unwrap();
            let leaf = hash_from_b64(e["leaf_hash"].as_str().unwrap()).unwrap();
            assert_eq!(leaf, leaf_hash(input.as_bytes()));
            assert!(input.contains(&format!("\"call_id\":\"{call}\"")));
            let index = e["leaf_index"].as_u64().unwrap();
            assert_eq!(e["seq"].as_u64().unwrap(), index + 1);
            verify_inclusion(&leaf, index, cp.size, &hashes(&e["audit_path"]), &cp.root)
                .unwrap_or_else(|err| panic!("{call} entry {index}: {err}"));
            // Against a changed leaf, the same path fails.
            let changed = leaf_hash(input.replace("allow", "deny").as_bytes());
            if changed != leaf {
                assert!(verify_inclusion(
                    &changed,
                    index,
                    cp.size,
                    &hashes(&e["audit_path"]),
                    &cp.root
                )
                .is_err());
            }
        }
    }
    let out = escepine(&["ledger", "prove", s(&setup.db), "call-99"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("no entry records call `call-99`"),
        "{}",
        show(&out)
    );
    let out = escepine(&["ledger", "prove", s(&setup.db), "call-1", "--size", "999"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn two_checkpoints_are_proven_consistent_and_a_rewritten_history_is_not() {
    let setup = Setup::new();
    let old = setup.checkpoint(&setup.db, "old");
    let before_growth = setup.copy("before-growth.db");
    append(&setup.db, 9, 13);
    let new = setup.checkpoint(&setup.db, "new");
    assert_eq!(setup.opened(&new).size, 30);

    let out = setup.verify(&setup.db, &[&old, &new]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        text(&out.stdout)
            .contains("consistent: the checkpoint of 30 entries extends the checkpoint of 18"),
        "{}",
        show(&out)
    );
    // Either order.
    let out = setup.verify(&setup.db, &[&new, &old]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // The old checkpoint still holds for the grown ledger.
    let out = setup.verify(&setup.db, &[&old]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // The new one does not hold for the ledger before it grew.
    let out = setup.verify(&before_growth, &[&old, &new]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text(&out.stdout).contains("entry 19 removed"),
        "{}",
        show(&out)
    );

    // The operator, who holds the key, rewrites entry 5, re-chains, grows the ledger and signs
    // a new checkpoint: it matches the ledger, but not the history the old one covers.
    let forged = setup.copy("forged.db");
    sqlite3(&forged, &rechain_sql(&forged, 5));
    let resigned = setup.checkpoint(&forged, "resigned");
    let alone = setup.verify(&forged, &[&resigned]);
    assert_eq!(alone.status.code(), Some(0), "{}", show(&alone));
    let out = setup.verify(&forged, &[&old, &resigned]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text(&out.stdout).starts_with(
            "tampered: the checkpoint of 30 entries is not consistent with the checkpoint of 18"
        ),
        "{}",
        show(&out)
    );
    // And the old checkpoint alone finds the rewrite.
    let out = setup.verify(&forged, &[&old]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text(&out.stdout).starts_with("tampered: entries 1 to 18 rewritten"),
        "{}",
        show(&out)
    );

    let three = setup.verify(&setup.db, &[&old, &new, &new]);
    assert_eq!(three.status.code(), Some(2), "{}", show(&three));
}

#[test]
fn a_printed_consistency_proof_verifies_between_two_checkpoints_offline() {
    let setup = Setup::new();
    let old = setup.opened(&setup.checkpoint(&setup.db, "old"));
    append(&setup.db, 9, 13);
    let new = setup.opened(&setup.checkpoint(&setup.db, "new"));
    let out = escepine(&[
        "ledger",
        "prove",
        s(&setup.db),
        "--consistency",
        &old.size.to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["old_size"], 18);
    assert_eq!(json["new_size"], 30);
    let root = |json: &Value, k: &str| hash_from_b64(json[k].as_str().unwrap()).unwrap();
    // The roots are the checkpoints' own, and the proof links them (RFC 9162 §2.1.4.2).
    assert_eq!(root(&json, "old_root"), old.root);
    assert_eq!(root(&json, "new_root"), new.root);
    let proof: Vec<Hash> = json["proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| hash_from_b64(h.as_str().unwrap()).unwrap())
        .collect();
    assert!(!proof.is_empty());
    verify_consistency(18, 30, &old.root, &new.root, &proof).expect("consistent");
    // A proof against another root does not verify.
    let mut wrong = old.root;
    wrong[0] ^= 1;
    assert!(verify_consistency(18, 30, &wrong, &new.root, &proof).is_err());

    // `--size` picks the later tree; a size beyond the chain or an inverted pair is refused.
    let out = escepine(&[
        "ledger",
        "prove",
        s(&setup.db),
        "--consistency",
        "3",
        "--size",
        "18",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (json["old_size"].as_u64(), json["new_size"].as_u64()),
        (Some(3), Some(18))
    );
    assert_eq!(root(&json, "new_root"), old.root);
    for bad in [["--consistency", "31"], ["--consistency", "20"]] {
        let mut args = vec!["ledger", "prove", s(&setup.db)];
        args.extend(bad);
        if bad[1] == "20" {
            args.extend(["--size", "19"]);
        }
        let out = escepine(&args);
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        assert!(out.stdout.is_empty(), "{}", show(&out));
    }
    // Neither a call nor --consistency: usage.
    let out = escepine(&["ledger", "prove", s(&setup.db)]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}
