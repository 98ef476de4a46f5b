//! Chain verification: recompute every hash from the stored bodies and name the first entry that
//! was changed, removed, inserted or reordered.
//!
//! Nothing stored is trusted: each row's hash is recomputed from its `seq`, `prev`, `at_ms` and
//! body text, and each `prev` must be the hash of the entry before. On the first row that does
//! not fit, the rest of the rows are searched to tell *what* happened to it:
//!
//! - a gap in `seq` → the missing entries were **removed**;
//! - the original entry of this position follows later → the rows before it were **inserted**
//!   (or, if this row's content belongs exactly there, the two were **reordered**, swapped);
//! - this row's content hashes correctly at another position, or its body belongs to another
//!   entry's envelope → **reordered** (or a copy, **inserted**, if that other entry is intact);
//! - otherwise its content no longer matches its hash → **changed**.
//!
//! A hash chain cannot show that entries were cut from its *end* (or that the whole chain was
//! rewritten) unless the expected head is known from elsewhere: pass it as `anchor`.

use std::fmt;
#[cfg(feature = "sqlite")]
use std::path::Path;

use crate::entry::Entry;
use crate::entry::{body_call_id, is_hash, CallIndex, StoredRow};
use crate::entry::{entry_hash, GENESIS_PREV};
use crate::error::LedgerError;
#[cfg(feature = "sqlite")]
use crate::sqlite;

/// An intact chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// How many entries it holds.
    pub entries: u64,
    /// The last entry's hash ([`GENESIS_PREV`] when empty).
    pub head: String,
    /// Where the anchor hash was found, when one was given.
    pub anchor_seq: Option<u64>,
}

/// What happened to the first entry that does not fit the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TamperKind {
    /// Its content (body, time, predecessor or hash) no longer matches its hash.
    Changed,
    /// It is missing.
    Removed,
    /// It is not part of the chain (added, or a copy of another entry).
    Inserted,
    /// Its content belongs to another position.
    Reordered,
    /// Its content fits the chain, but the store's index of call ids (the `call_id` column,
    /// which is not hashed) files it under another call than its record names, or under none.
    Misindexed,
}

impl fmt::Display for TamperKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TamperKind::Changed => "changed",
            TamperKind::Removed => "removed",
            TamperKind::Inserted => "inserted",
            TamperKind::Reordered => "reordered",
            TamperKind::Misindexed => "misindexed",
        })
    }
}

/// The first entry that does not fit the chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entry {seq} {kind}: {detail}")]
pub struct Tamper {
    /// The entry's sequence number (for a removal, the first missing one).
    pub seq: u64,
    /// What happened to it.
    pub kind: TamperKind,
    /// The evidence, in words.
    pub detail: String,
}

/// Why a stored ledger does not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The chain was tampered with.
    #[error(transparent)]
    Tampered(#[from] Tamper),
    /// The store could not be read at all (missing file, not a ledger).
    #[error(transparent)]
    Unreadable(#[from] LedgerError),
}

/// Verify the ledger file at `path` (opened read-only), optionally against a known head hash.
///
/// The happy path streams the rows; only on the first misfit are all rows loaded to diagnose it.
#[cfg(feature = "sqlite")]
pub fn verify_path(path: &Path, anchor: Option<&str>) -> Result<VerifyReport, VerifyError> {
    let conn = sqlite::open_read_only(path)?;
    let mut walk = Walk::new(anchor);
    let mut broken = false;
    sqlite::for_each_row(&conn, |row| {
        if walk.step(&row) {
            true
        } else {
            broken = true;
            false
        }
    })?;
    if broken {
        drop(conn);
        let rows = sqlite::read_rows(path)?;
        return Ok(verify_rows(&rows, anchor)?);
    }
    Ok(walk.finish()?)
}

/// Verify entries held in memory, each by the body it was sealed or stored with.
pub fn verify_entries(
    entries: &[Entry],
    anchor: Option<&str>,
) -> Result<VerifyReport, VerifyError> {
    let rows: Vec<StoredRow> = entries.iter().map(Entry::stored_row).collect();
    Ok(verify_rows(&rows, anchor)?)
}

/// Verify stored rows given in chain order (as read from a store, unchecked).
pub fn verify_rows(rows: &[StoredRow], anchor: Option<&str>) -> Result<VerifyReport, Tamper> {
    let mut walk = Walk::new(anchor);
    for (i, row) in rows.iter().enumerate() {
        if !walk.step(row) {
            return Err(diagnose(rows, i, walk.next_seq, &walk.prev));
        }
    }
    walk.finish()
}

/// The walk along an intact prefix of the chain.
struct Walk<'a> {
    next_seq: u64,
    prev: String,
    anchor: Option<&'a str>,
    anchor_seq: Option<u64>,
    /// The first entry of the intact chain whose index column disagrees with its record.
    misindexed: Option<Tamper>,
}

impl<'a> Walk<'a> {
    fn new(anchor: Option<&'a str>) -> Self {
        Self {
            next_seq: 1,
            prev: GENESIS_PREV.to_string(),
            anchor,
            anchor_seq: None,
            misindexed: None,
        }
    }

    /// Accept `row` as the next entry, if it is.
    fn step(&mut self, row: &StoredRow) -> bool {
        let Ok(f) = Fields::of(row) else { return false };
        if f.seq != self.next_seq || f.prev != self.prev || !f.self_consistent() {
            return false;
        }
        if self.anchor == Some(f.hash) {
            self.anchor_seq = Some(f.seq);
        }
        if let (CallIndex::Column(column), None) = (&row.call_id, &self.misindexed) {
            let named = body_call_id(f.body);
            if *column != named {
                self.misindexed = Some(misindexed(f.seq, column.as_deref(), named.as_deref()));
            }
        }
        self.prev = f.hash.to_string();
        self.next_seq += 1;
        true
    }

    /// The report of an intact chain; a chain cut short of the anchor, or the first misindexed
    /// entry, is a tamper (in that order).
    fn finish(self) -> Result<VerifyReport, Tamper> {
        let entries = self.next_seq - 1;
        if let Some(anchor) = self.anchor {
            if self.anchor_seq.is_none() && !(entries == 0 && anchor == GENESIS_PREV) {
                return Err(Tamper {
                    seq: entries + 1,
                    kind: TamperKind::Removed,
                    detail: format!(
                        "the expected head {anchor} is not in the chain, which ends at entry {entries} \
                         ({}): entries were removed from its end, or the chain was rewritten",
                        self.prev
                    ),
                });
            }
        }
        if let Some(tamper) = self.misindexed {
            return Err(tamper);
        }
        Ok(VerifyReport {
            entries,
            head: self.prev,
            anchor_seq: self.anchor_seq,
        })
    }
}

/// Entry `seq`, filed under the call `column` while its record names `named`.
fn misindexed(seq: u64, column: Option<&str>, named: Option<&str>) -> Tamper {
    let under = column.map_or_else(|| "no call".to_string(), |c| format!("call `{c}`"));
    let names = named.map_or_else(|| "no call".to_string(), |c| format!("call `{c}`"));
    Tamper {
        seq,
        kind: TamperKind::Misindexed,
        detail: format!(
            "its call_id column files it under {under}, but its record names {names}: a read \
             of a call by its id would miss the entry or take another call's"
        ),
    }
}

/// A row's columns, well-typed.
#[derive(Debug, Clone, Copy)]
struct Fields<'a> {
    seq: u64,
    prev: &'a str,
    hash: &'a str,
    at_ms: u64,
    body: &'a str,
}

impl<'a> Fields<'a> {
    fn of(row: &'a StoredRow) -> Result<Self, String> {
        let seq = u64::try_from(row.seq)
            .ok()
            .filter(|s| *s > 0)
            .ok_or_else(|| format!("seq {} is not positive", row.seq))?;
        let prev = row.prev.as_deref().ok_or("its prev is not text")?;
        let hash = row.hash.as_deref().ok_or("its hash is not text")?;
        let at_ms = row
            .at_ms
            .and_then(|t| u64::try_from(t).ok())
            .ok_or("its at_ms is not a non-negative integer")?;
        let body = row.body.as_deref().ok_or("its body is not text")?;
        Ok(Self {
            seq,
            prev,
            hash,
            at_ms,
            body,
        })
    }

    /// Whether this content, sealed as entry `seq`, has this row's hash.
    fn hashes_at(&self, seq: u64) -> bool {
        entry_hash(seq, self.prev, self.at_ms, self.body) == self.hash
    }

    fn self_consistent(&self) -> bool {
        self.hashes_at(self.seq)
    }
}

/// Name what happened at `rows[i]`, the first row that does not continue the chain whose next
/// entry is `expected` after hash `expected_prev`.
fn diagnose(rows: &[StoredRow], i: usize, expected: u64, expected_prev: &str) -> Tamper {
    let row = &rows[i];
    let tamper = |seq: u64, kind: TamperKind, detail: String| Tamper { seq, kind, detail };

    if row.seq < 1 {
        return tamper(
            expected,
            TamperKind::Inserted,
            format!(
                "a row with seq {} stands where entry {expected} belongs",
                row.seq
            ),
        );
    }
    let seq = row.seq.unsigned_abs();
    if seq < expected {
        return if seq + 1 == expected {
            tamper(
                seq,
                TamperKind::Inserted,
                format!("a second row with seq {seq} follows entry {seq}"),
            )
        } else {
            tamper(
                seq,
                TamperKind::Reordered,
                format!("entry {seq} comes after entry {}", expected - 1),
            )
        };
    }
    if seq > expected {
        if rows[i + 1..]
            .iter()
            .any(|r| r.seq.unsigned_abs() == expected && r.seq > 0)
        {
            return tamper(
                expected,
                TamperKind::Reordered,
                format!("entry {expected} comes after entry {seq}"),
            );
        }
        if let Ok(f) = Fields::of(row) {
            if f.prev == expected_prev && f.hashes_at(expected) {
                return tamper(
                    expected,
                    TamperKind::Changed,
                    format!("entry {expected} was renumbered {seq}"),
                );
            }
        }
        let missing = if seq == expected + 1 {
            format!("entry {expected} is missing")
        } else {
            format!("entries {expected} to {} are missing", seq - 1)
        };
        let detail = if expected == 1 {
            format!("{missing}: the chain starts at entry {seq}")
        } else {
            format!(
                "{missing}: the chain goes from entry {} to entry {seq}",
                expected - 1
            )
        };
        return tamper(expected, TamperKind::Removed, detail);
    }

    // The row stands at the expected position but does not fit.
    let f = match Fields::of(row) {
        Ok(f) => f,
        Err(why) => return tamper(expected, TamperKind::Changed, why),
    };
    let positions: Vec<u64> = rows
        .iter()
        .filter_map(|r| u64::try_from(r.seq).ok())
        .collect();
    let home = if f.self_consistent() {
        Some(f.seq)
    } else {
        positions
            .iter()
            .copied()
            .find(|k| *k != f.seq && f.hashes_at(*k))
    };
    // Where the original entry of this position went, if it is still stored.
    let original = rows[i + 1..].iter().find_map(|r| {
        let g = Fields::of(r).ok()?;
        (g.prev == expected_prev && g.hashes_at(expected)).then_some(g.seq)
    });
    if let Some(at) = original {
        if home == Some(at) {
            return tamper(
                expected,
                TamperKind::Reordered,
                format!("entries {expected} and {at} were swapped: each holds the other's content"),
            );
        }
        let rows_word = if at - expected == 1 {
            format!("row {expected} is")
        } else {
            format!("rows {expected} to {} are", at - 1)
        };
        return tamper(
            expected,
            TamperKind::Inserted,
            format!("{rows_word} not part of the chain: the original entry {expected} follows at seq {at}"),
        );
    }
    match home {
        Some(k) if k == f.seq => {
            return tamper(
                expected,
                TamperKind::Inserted,
                format!(
                    "its hash is its own, but it was sealed after {} instead of entry {}'s hash: \
                     it was inserted, or the entry before it was replaced",
                    f.prev,
                    expected - 1
                ),
            )
        }
        Some(k) if k > expected => {
            return tamper(
                expected,
                TamperKind::Removed,
                format!(
                    "entry {expected} is missing: entry {k}'s content is stored at seq {expected} \
                     (the entries after the removal were renumbered)"
                ),
            )
        }
        Some(k) => {
            // Content sealed as an earlier entry k, which the chain already accepted at seq k.
            let accepted = rows[..i]
                .iter()
                .find_map(|r| Fields::of(r).ok().filter(|g| g.seq == k));
            return match accepted {
                Some(g) if g.hash == f.hash => {
                    tamper(expected, TamperKind::Inserted, format!("it is a copy of entry {k}"))
                }
                Some(g) if g.prev == f.prev => tamper(
                    k,
                    TamperKind::Inserted,
                    format!(
                        "row {k} is not part of the chain: it was sealed after entry {} in place of \
                         the original entry {k}, which now follows at seq {}",
                        k - 1,
                        f.seq
                    ),
                ),
                _ => tamper(expected, TamperKind::Reordered, format!("it holds the content of entry {k}")),
            };
        }
        None => {}
    }
    // Does the body belong to another entry's envelope?
    let owner = rows.iter().enumerate().find_map(|(j, r)| {
        if j == i {
            return None;
        }
        let g = Fields::of(r).ok()?;
        (entry_hash(g.seq, g.prev, g.at_ms, f.body) == g.hash).then_some(g)
    });
    if let Some(g) = owner {
        return if g.self_consistent() {
            tamper(
                expected,
                TamperKind::Changed,
                format!("its body was replaced by a copy of entry {}'s body", g.seq),
            )
        } else {
            tamper(
                expected,
                TamperKind::Reordered,
                format!(
                    "it holds the body of entry {}: the bodies were swapped",
                    g.seq
                ),
            )
        };
    }
    let mut detail = String::from("its content does not match its hash");
    let mut hints = Vec::new();
    if !is_hash(f.hash) {
        hints.push("the stored hash is not 64 hex digits".to_string());
    }
    if f.prev != expected_prev {
        hints.push(format!("its prev is not entry {}'s hash", expected - 1));
    }
    if serde_json::from_str::<serde_json::Value>(f.body).is_err() {
        hints.push("its body is not JSON".to_string());
    }
    if !hints.is_empty() {
        detail.push_str(" (");
        detail.push_str(&hints.join("; "));
        detail.push(')');
    }
    tamper(expected, TamperKind::Changed, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::record_body;
    use crate::record::{Record, Transition};

    fn chain(n: u64) -> Vec<StoredRow> {
        let mut prev = GENESIS_PREV.to_string();
        (1..=n)
            .map(|seq| {
                let body = record_body(&Record::Transition(Transition {
                    run_id: "r".into(),
                    event: format!("e{seq}"),
                    state: None,
                    data: serde_json::Value::Null,
                }))
                .unwrap();
                let at_ms = 1000 + seq;
                let hash = entry_hash(seq, &prev, at_ms, &body);
                let row = StoredRow {
                    seq: seq as i64,
                    prev: Some(prev.clone()),
                    hash: Some(hash.clone()),
                    at_ms: Some(at_ms as i64),
                    body: Some(body),
                    call_id: Default::default(),
                };
                prev = hash;
                row
            })
            .collect()
    }

    /// A chain of an intent, an approval, a transition and an outcome, each row indexed as a
    /// writer indexes it (by `Record::call_id`).
    fn indexed_chain() -> Vec<StoredRow> {
        let records: Vec<Record> = [
            serde_json::json!({"kind": "intent", "call_id": "c-1", "idempotency_key": "k",
                "tool_id": "t", "tool_version": "1.0.0", "class": "read-only",
                "principal": "Agent::\"a\"", "payload": {"call_id": "nested"},
                "payload_hash": "00", "decision": "allow", "policy_ids": []}),
            serde_json::json!({"kind": "approval", "call_id": "c-1", "approver": "Agent::\"b\"",
                "result": "approved", "policy_ids": []}),
            serde_json::json!({"kind": "transition", "run_id": "r", "event": "step_started",
                "data": {"call_id": "nested"}}),
            serde_json::json!({"kind": "outcome", "call_id": "c-1", "result": "ok",
                "attempts": []}),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("a record"))
        .collect();
        let mut prev = GENESIS_PREV.to_string();
        records
            .iter()
            .enumerate()
            .map(|(i, record)| {
                let seq = i as u64 + 1;
                let body = record_body(record).unwrap();
                let hash = entry_hash(seq, &prev, 1000 + seq, &body);
                let row = StoredRow {
                    seq: seq as i64,
                    prev: Some(std::mem::replace(&mut prev, hash.clone())),
                    hash: Some(hash),
                    at_ms: Some(1000 + seq as i64),
                    body: Some(body),
                    call_id: CallIndex::Column(record.call_id().map(str::to_owned)),
                };
                row
            })
            .collect()
    }

    #[test]
    fn the_index_of_call_ids_is_checked_against_each_record() {
        let rows = indexed_chain();
        for row in &rows {
            let body = row.body.as_deref().unwrap();
            let record: Record = serde_json::from_str(body).unwrap();
            assert_eq!(body_call_id(body).as_deref(), record.call_id(), "{body}");
        }
        assert_eq!(verify_rows(&rows, None).unwrap().entries, 4);
        // Filed under another call, taken out of the index, or a transition filed under a call.
        let tamperings: [(usize, Option<&str>); 3] =
            [(3, Some("c-2")), (1, None), (2, Some("c-1"))];
        for (i, column) in tamperings {
            let mut rows = indexed_chain();
            rows[i].call_id = CallIndex::Column(column.map(str::to_owned));
            let t = verify_rows(&rows, None).unwrap_err();
            assert_eq!(
                (t.seq, t.kind),
                (i as u64 + 1, TamperKind::Misindexed),
                "{t}"
            );
            assert!(t.detail.contains("call_id column"), "{t}");
        }
        // A store without the index has nothing to check.
        let mut rows = indexed_chain();
        rows.iter_mut().for_each(|r| r.call_id = CallIndex::Absent);
        assert!(verify_rows(&rows, None).is_ok());
        // A broken chain is named before a misindexed entry.
        let mut rows = indexed_chain();
        rows[3].call_id = CallIndex::Column(None);
        rows[1].at_ms = Some(1);
        assert_eq!(kind(&rows), (2, TamperKind::Changed));
    }

    fn kind(rows: &[StoredRow]) -> (u64, TamperKind) {
        let t = verify_rows(rows, None).unwrap_err();
        (t.seq, t.kind)
    }

    #[test]
    fn intact_and_empty_chains_verify() {
        let rows = chain(5);
        let r = verify_rows(&rows, None).unwrap();
        assert_eq!(
            (r.entries, r.head.as_str()),
            (5, rows[4].hash.as_deref().unwrap())
        );
        assert_eq!(verify_rows(&[], None).unwrap().head, GENESIS_PREV);
        assert_eq!(
            verify_rows(&rows, rows[2].hash.as_deref())
                .unwrap()
                .anchor_seq,
            Some(3)
        );
    }

    #[test]
    fn each_kind_of_tampering_is_named() {
        let base = chain(8);

        let mut r = base.clone();
        r[3].body = Some(r[3].body.clone().unwrap().replace("e4", "e9"));
        assert_eq!(kind(&r), (4, TamperKind::Changed));

        let mut r = base.clone();
        r[3].at_ms = Some(5);
        assert_eq!(kind(&r), (4, TamperKind::Changed));

        let mut r = base.clone();
        r.remove(3);
        assert_eq!(kind(&r), (4, TamperKind::Removed));

        let mut r = base.clone();
        r.remove(0);
        assert_eq!(kind(&r), (1, TamperKind::Removed));

        // Removed, then the later rows renumbered.
        let mut r = base.clone();
        r.remove(3);
        for row in &mut r[3..] {
            row.seq -= 1;
        }
        assert_eq!(kind(&r), (4, TamperKind::Removed));

        // Inserted in the middle (later rows renumbered), with a made-up hash.
        let mut r = base.clone();
        for row in &mut r[3..] {
            row.seq += 1;
        }
        let mut forged = base[3].clone();
        forged.body =
            Some("{\"kind\":\"transition\",\"run_id\":\"r\",\"event\":\"forged\"}".into());
        r.insert(3, forged);
        assert_eq!(kind(&r), (4, TamperKind::Inserted));

        // Inserted with a correctly computed hash: the next row no longer links.
        let mut r = base.clone();
        for row in &mut r[3..] {
            row.seq += 1;
        }
        let mut forged = base[3].clone();
        forged.body = Some("{}".into());
        forged.hash = Some(entry_hash(4, forged.prev.as_deref().unwrap(), 1, "{}"));
        forged.at_ms = Some(1);
        r.insert(3, forged);
        assert_eq!(kind(&r), (4, TamperKind::Inserted));

        // A copy of an earlier row appended at the end.
        let mut r = base.clone();
        let mut copy = base[2].clone();
        copy.seq = 9;
        r.push(copy);
        assert_eq!(kind(&r), (9, TamperKind::Inserted));

        // Bodies swapped.
        let mut r = base.clone();
        let (a, b) = (r[3].body.clone(), r[4].body.clone());
        r[3].body = b;
        r[4].body = a;
        assert_eq!(kind(&r), (4, TamperKind::Reordered));

        // Whole rows swapped (all but seq).
        let mut r = base.clone();
        r.swap(3, 4);
        r[3].seq = 4;
        r[4].seq = 5;
        assert_eq!(kind(&r), (4, TamperKind::Reordered));

        // Out of order in a slice.
        let mut r = base.clone();
        r.swap(3, 4);
        assert_eq!(kind(&r), (4, TamperKind::Reordered));

        // Truncated at the end: only an anchor shows it.
        let r = base[..6].to_vec();
        assert!(verify_rows(&r, None).is_ok());
        let t = verify_rows(&r, base[7].hash.as_deref()).unwrap_err();
        assert_eq!((t.seq, t.kind), (7, TamperKind::Removed));

        // A column of the wrong type.
        let mut r = base.clone();
        r[5].hash = None;
        assert_eq!(kind(&r), (6, TamperKind::Changed));
    }
}
