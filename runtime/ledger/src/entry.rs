//! Ledger entries: the chain link around a [`Record`], its canonical encoding and its hash.
//!
//! An entry's hash is SHA-256 over the canonical JSON of the object
//! `{"at_ms": …, "prev": …, "record": …, "seq": …}`, where `record` is the canonical JSON of the
//! record (its *body*, stored verbatim) and `prev` the previous entry's hash ([`GENESIS_PREV`]
//! for the first). `runtime/LEDGER.md` documents the format for other stores.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::LedgerError;
use crate::record::Record;

/// A committed entry: its sequence number and hash (the evidence index cites the hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Position in the chain, from 1.
    pub seq: u64,
    /// The entry's hash (hex).
    pub hash: String,
}

/// The `prev` of the first entry: 64 zeros.
pub const GENESIS_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One link of the chain: a record with its position, time, predecessor and hash.
///
/// An entry also holds its *body*, the canonical JSON of its record, computed once: when the
/// entry is sealed ([`Entry::seal`], the memory ledger's append) or taken verbatim from the row
/// it was read from ([`StoredRow::to_entry`]). Its hash, the row a store writes and the leaf of
/// its Merkle tree are all computed over that one text. An entry whose `record` is changed in
/// place keeps its old body: seal a new entry instead. [`Entry::computed_hash`] re-encodes the
/// record, which is how such a change is found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Position in the chain, from 1, without gaps.
    pub seq: u64,
    /// The previous entry's hash (hex); [`GENESIS_PREV`] for the first entry.
    pub prev: String,
    /// When the entry was committed, Unix milliseconds.
    pub at_ms: u64,
    /// What is recorded.
    pub record: Record,
    /// SHA-256 (lower-case hex) of [`hash_input`] over this entry.
    pub hash: String,
    /// The canonical JSON of `record` as sealed or stored (see the type).
    #[serde(skip)]
    body: Arc<str>,
}

impl Entry {
    /// Seal `record` as entry `seq` after `prev`, at `at_ms`: encodes its body once and computes
    /// its hash over it.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the record cannot be encoded.
    pub fn seal(seq: u64, prev: String, at_ms: u64, record: Record) -> Result<Self, LedgerError> {
        let body: Arc<str> = record_body(&record)?.into();
        let hash = entry_hash(seq, &prev, at_ms, &body);
        Ok(Self {
            seq,
            prev,
            at_ms,
            record,
            hash,
            body,
        })
    }

    /// An entry from its parts: `body` must be the text `record` was decoded from or encoded to.
    pub(crate) fn from_parts(
        seq: u64,
        prev: String,
        at_ms: u64,
        record: Record,
        hash: String,
        body: Arc<str>,
    ) -> Self {
        Self {
            seq,
            prev,
            at_ms,
            record,
            hash,
            body,
        }
    }

    /// The body: the canonical JSON of the record, as stored and hashed.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The shared body (for a summary of the entry that keeps it without copying).
    pub(crate) fn shared_body(&self) -> Arc<str> {
        Arc::clone(&self.body)
    }

    /// The hash recomputed from the entry's fields, its record encoded anew (equal to `hash`
    /// unless the entry, or its record in place, was altered).
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the record cannot be encoded.
    pub fn computed_hash(&self) -> Result<String, LedgerError> {
        Ok(entry_hash(
            self.seq,
            &self.prev,
            self.at_ms,
            &record_body(&self.record)?,
        ))
    }

    /// The row a store holds for it (its body as sealed or stored).
    pub fn stored_row(&self) -> StoredRow {
        StoredRow {
            seq: i64::try_from(self.seq).unwrap_or(i64::MAX),
            prev: Some(self.prev.clone()),
            hash: Some(self.hash.clone()),
            at_ms: i64::try_from(self.at_ms).ok(),
            body: Some(self.body.to_string()),
            call_id: CallIndex::Absent,
        }
    }

    /// Its position and hash.
    pub fn committed(&self) -> Committed {
        Committed {
            seq: self.seq,
            hash: self.hash.clone(),
        }
    }
}

/// The body of a record: its canonical JSON (see [`canonical_json`]).
pub fn record_body(record: &Record) -> Result<String, LedgerError> {
    let value = serde_json::to_value(record)
        .map_err(|e| LedgerError::failed("cannot encode the record", e))?;
    Ok(canonical_json(&value))
}

/// The canonical JSON text of `value`.
///
/// Object keys are sorted by Unicode code point (byte order of their UTF-8), recursively; no
/// whitespace anywhere; numbers as `serde_json` writes them (integers in decimal, floats in their
/// shortest round-trip form); strings as `serde_json` writes them: `"` and `\` escaped with a
/// backslash, U+0008, U+0009, U+000A, U+000C, U+000D as `\b \t \n \f \r`, every other control
/// character below U+0020 as `\u00xx` (lower-case hex), everything else (non-ASCII included)
/// as its UTF-8 bytes. The workspace enables `serde_json`'s `preserve_order`, so the sorting is
/// done here explicitly rather than relying on the map type.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal exactly as `serde_json` writes it.
fn write_string(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            0x08 => Some("\\b"),
            0x09 => Some("\\t"),
            0x0a => Some("\\n"),
            0x0c => Some("\\f"),
            0x0d => Some("\\r"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0x0f)]));
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(bytes.as_ref()))
}

/// The text an entry's hash is computed over: the canonical JSON of
/// `{"at_ms":…,"prev":…,"record":…,"seq":…}` with `body` (already canonical) inserted verbatim.
pub fn hash_input(seq: u64, prev: &str, at_ms: u64, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + prev.len() + 64);
    out.push_str("{\"at_ms\":");
    out.push_str(&at_ms.to_string());
    out.push_str(",\"prev\":");
    write_string(prev, &mut out);
    out.push_str(",\"record\":");
    out.push_str(body);
    out.push_str(",\"seq\":");
    out.push_str(&seq.to_string());
    out.push('}');
    out
}

/// The hash of the entry `seq` after `prev`, committed at `at_ms`, whose body is `body`.
pub fn entry_hash(seq: u64, prev: &str, at_ms: u64, body: &str) -> String {
    sha256_hex(hash_input(seq, prev, at_ms, body))
}

/// Now, in Unix milliseconds (0 if the clock is before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `ms` (Unix milliseconds) as a UTC ISO 8601 timestamp with milliseconds:
/// `2000-02-29T00:00:00.123Z`.
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The entries of run `run_id`, in chain order: its transitions, the intents of its steps, and
/// the outcomes and approvals of those calls (they name only their call id).
pub fn select_run(entries: &[Entry], run_id: &str) -> Vec<Entry> {
    let calls: std::collections::HashSet<&str> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Intent(i) if i.run_id.as_deref() == Some(run_id) => Some(i.call_id.as_str()),
            _ => None,
        })
        .collect();
    entries
        .iter()
        .filter(|e| match &e.record {
            Record::Outcome(o) => calls.contains(o.call_id.as_str()),
            Record::Approval(a) => calls.contains(a.call_id.as_str()),
            r => r.run_id() == Some(run_id),
        })
        .cloned()
        .collect()
}

/// Whether `s` has the shape of an entry hash: 64 lower-case hex digits.
pub(crate) fn is_hash(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One row as stored, before any check: a column of the wrong type reads as `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRow {
    /// `seq` (the table's integer primary key).
    pub seq: i64,
    /// `prev`, if it is text.
    pub prev: Option<String>,
    /// `hash`, if it is text.
    pub hash: Option<String>,
    /// `at_ms`, if it is an integer.
    pub at_ms: Option<i64>,
    /// `body`, if it is text.
    pub body: Option<String>,
    /// The row's place in the store's index of call ids.
    pub call_id: CallIndex,
}

/// A stored row's `call_id` column: the index by which a call's entries are read without
/// scanning the ledger. It is not hashed, so verification checks it against the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CallIndex {
    /// The store keeps no such column (a memory ledger; a file no writer opened since the
    /// column was added).
    #[default]
    Absent,
    /// The column's value: the call the row is indexed under (`None`: NULL, or not text).
    Column(Option<String>),
}

/// The call id the record in `body` names, read without decoding the rest of it (what
/// [`crate::record::Record::call_id`] returns for a body that decodes); `None` for a record
/// that names none, or a body that is not a JSON object.
pub fn body_call_id(body: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        #[serde(default)]
        call_id: Option<String>,
    }
    serde_json::from_str::<Named>(body)
        .ok()
        .and_then(|n| n.call_id)
}

impl StoredRow {
    /// Decode into an [`Entry`], which keeps the body text as stored; a malformed column or
    /// body is [`LedgerError::Corrupt`].
    pub fn to_entry(&self) -> Result<Entry, LedgerError> {
        let seq = u64::try_from(self.seq).map_err(|_| LedgerError::Corrupt {
            seq: 0,
            why: format!("seq {} is negative", self.seq),
        })?;
        let corrupt = |why: &str| LedgerError::Corrupt {
            seq,
            why: why.to_string(),
        };
        let prev = self
            .prev
            .clone()
            .ok_or_else(|| corrupt("prev is not text"))?;
        let hash = self
            .hash
            .clone()
            .ok_or_else(|| corrupt("hash is not text"))?;
        let at_ms = self
            .at_ms
            .and_then(|t| u64::try_from(t).ok())
            .ok_or_else(|| corrupt("at_ms is not a non-negative integer"))?;
        let body = self
            .body
            .as_deref()
            .ok_or_else(|| corrupt("body is not text"))?;
        let record: Record = serde_json::from_str(body).map_err(|e| LedgerError::Corrupt {
            seq,
            why: format!("body is not a record: {e}"),
        })?;
        Ok(Entry {
            seq,
            prev,
            at_ms,
            record,
            hash,
            body: body.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::GENESIS_PREV as G;
    use super::*;
    use crate::record::Transition;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_recursively_and_whitespace_dropped() {
        let v: Value = serde_json::from_str(
            r#"{ "b": 1, "a": {"z": [3, {"y": 1, "x": 2}], "é": null, "Z": true} }"#,
        )
        .unwrap();
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"Z":true,"z":[3,{"x":2,"y":1}],"é":null},"b":1}"#
        );
    }

    #[test]
    fn strings_and_numbers_match_serde_json() {
        for s in [
            "plain",
            "quote\" back\\slash",
            "\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f} \u{7f}",
            "ünï\u{2028}😀",
            "",
        ] {
            let mut out = String::new();
            write_string(s, &mut out);
            assert_eq!(out, serde_json::to_string(s).unwrap());
        }
        for n in [
            json!(0),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.0),
            json!(0.1),
            json!(1e21),
            json!(-2.5e-7),
        ] {
            assert_eq!(canonical_json(&n), serde_json::to_string(&n).unwrap());
        }
    }

    #[test]
    fn the_hash_input_is_the_canonical_json_of_the_envelope() {
        let record = Record::Transition(Transition {
            run_id: "r\"1".into(),
            event: "run_started".into(),
            state: Some("read".into()),
            data: json!({"b": [1, 2.5], "a": "x"}),
        });
        let body = record_body(&record).unwrap();
        let envelope = json!({"seq": 7, "record": serde_json::from_str::<Value>(&body).unwrap(), "prev": G, "at_ms": 1234});
        assert_eq!(hash_input(7, G, 1234, &body), canonical_json(&envelope));
        let e = Entry::seal(7, G.into(), 1234, record).unwrap();
        assert_eq!(e.hash, sha256_hex(canonical_json(&envelope)));
        assert_eq!(e.computed_hash().unwrap(), e.hash);
    }

    #[test]
    fn the_worked_example_of_ledger_md() {
        let record = Record::Transition(Transition {
            run_id: "run-1".into(),
            event: "run_started".into(),
            state: Some("read".into()),
            data: Value::Null,
        });
        let e = Entry::seal(1, G.into(), 1_700_000_000_000, record).unwrap();
        assert_eq!(
            e.body(),
            r#"{"event":"run_started","kind":"transition","run_id":"run-1","state":"read"}"#
        );
        assert_eq!(
            e.hash,
            "d1f6cbc2284065c32e279c0d3d3c9b24b561f90f3ba8c337ff40a136c42bbad6"
        );
    }

    #[test]
    fn timestamps_are_utc_iso8601() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_735_689_599_999), "2024-12-31T23:59:59.999Z");
    }

    #[test]
    fn sha256_of_abc() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
