//! [`Recorded`]: one entry of a call, its record typed.

use std::sync::Arc;

use crate::entry::{Committed, Entry};
use crate::record::Record;

/// One entry of a call, its record typed: where it stands in the chain and what it records.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded<T> {
    /// Position in the chain.
    pub seq: u64,
    /// The previous entry's hash.
    pub prev: String,
    /// When it was committed, Unix milliseconds.
    pub at_ms: u64,
    /// Its hash.
    pub hash: String,
    /// What it records.
    pub record: T,
    body: Arc<str>,
}

impl<T> Recorded<T> {
    /// Its position and hash.
    pub fn committed(&self) -> Committed {
        Committed {
            seq: self.seq,
            hash: self.hash.clone(),
        }
    }
}

impl<T: Clone + Into<Record>> Recorded<T> {
    /// The entry it was read from (as [`crate::trust`] checks it).
    pub fn entry(&self) -> Entry {
        Entry::from_parts(
            self.seq,
            self.prev.clone(),
            self.at_ms,
            self.record.clone().into(),
            self.hash.clone(),
            Arc::clone(&self.body),
        )
    }
}

/// An entry's place in the chain and its body, its record taken out.
pub(crate) struct Parts {
    seq: u64,
    prev: String,
    at_ms: u64,
    hash: String,
    body: Arc<str>,
}

impl Parts {
    /// The recorded `record` at this place.
    pub(crate) fn with<T>(self, record: T) -> Recorded<T> {
        Recorded {
            seq: self.seq,
            prev: self.prev,
            at_ms: self.at_ms,
            hash: self.hash,
            record,
            body: self.body,
        }
    }
}

/// `entry`'s place and body, and its record.
pub(crate) fn split(entry: Entry) -> (Parts, Record) {
    let body = entry.shared_body();
    (
        Parts {
            seq: entry.seq,
            prev: entry.prev,
            at_ms: entry.at_ms,
            hash: entry.hash,
            body,
        },
        entry.record,
    )
}
