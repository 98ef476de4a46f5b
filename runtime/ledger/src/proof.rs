//! The ledger's entries as the leaves of an RFC 9162 Merkle tree: checkpoints of a stored chain,
//! inclusion proofs of a call's entries, and a chain verified against signed checkpoints.
//!
//! Leaf `i` (0-based) is entry `seq = i + 1`, and its leaf data is the entry's hash input (see
//! [`hash_input`]): `SHA-256(0x00 ‖ {"at_ms":…,"prev":…,"record":<body>,"seq":…})`, computed from
//! the stored text, never from a re-encoded body. Nothing here is stored: the tree is rebuilt
//! from the rows whenever it is needed.

#[cfg(feature = "sqlite")]
use std::path::Path;

use serde::Serialize;

use crate::checkpoint::Checkpoint;
use crate::entry::{canonical_json, hash_input, Entry, StoredRow};
use crate::error::LedgerError;
use crate::merkle::{b64, leaf_hash, verify_consistency, Hash, MerkleTree, ProofError};
use crate::record::Record;
#[cfg(feature = "sqlite")]
use crate::sqlite;
use crate::verify::{verify_rows, Tamper, VerifyError, VerifyReport};

/// The leaf hash of the entry `seq` after `prev`, committed at `at_ms`, whose stored body is
/// `body`.
pub fn entry_leaf(seq: u64, prev: &str, at_ms: u64, body: &str) -> Hash {
    leaf_hash(hash_input(seq, prev, at_ms, body).as_bytes())
}

/// An intact chain and its Merkle tree.
#[derive(Debug, Clone)]
pub struct LedgerTree {
    report: VerifyReport,
    rows: Vec<StoredRow>,
    tree: MerkleTree,
}

/// What a chain shows against a checkpoint, or two checkpoints against each other.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointTamper {
    /// The chain itself is broken.
    #[error(transparent)]
    Chain(#[from] Tamper),
    /// The chain is shorter than the checkpoint.
    #[error(
        "entry {} removed: the checkpoint covers {covered} entries, but the chain ends at entry \
         {entries}: entries were removed from its end",
        entries + 1
    )]
    Truncated {
        /// The checkpoint's tree size.
        covered: u64,
        /// How many entries the chain holds.
        entries: u64,
    },
    /// The first entries do not hash to the checkpoint's root.
    #[error(
        "entries 1 to {size} rewritten: they hash to root {computed}, not to the checkpoint's \
         root {expected}: the history the checkpoint covers was changed and re-chained"
    )]
    Rewritten {
        /// The checkpoint's tree size.
        size: u64,
        /// The root of the chain's first `size` entries (base64).
        computed: String,
        /// The checkpoint's root (base64).
        expected: String,
    },
    /// The later checkpoint is not an extension of the earlier one.
    #[error(
        "the checkpoint of {new} entries is not consistent with the checkpoint of {old}: {why}: \
         the history was rewritten between them"
    )]
    Inconsistent {
        /// The earlier checkpoint's size.
        old: u64,
        /// The later checkpoint's size.
        new: u64,
        /// Why the consistency proof fails.
        why: ProofError,
    },
}

/// How the chain stood against the checkpoints it was verified with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Each checkpoint's size, in the order given: the latest matched by the chain, an earlier one
    /// proven its prefix.
    pub matched: Vec<u64>,
    /// With two checkpoints: the sizes `(old, new)` and the length of the verified consistency
    /// proof.
    pub consistent: Option<(u64, u64, usize)>,
}

/// One entry's inclusion proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryProof {
    /// The entry's `seq`.
    pub seq: u64,
    /// Its leaf index, `seq - 1`.
    pub leaf_index: u64,
    /// The leaf data: the entry's hash input text.
    pub leaf_input: String,
    /// `SHA-256(0x00 ‖ leaf_input)`, base64.
    pub leaf_hash: String,
    /// The audit path, bottom-up, base64.
    pub audit_path: Vec<String>,
}

/// The inclusion proofs of one call's entries in the tree of `tree_size` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallProof {
    /// The call.
    pub call_id: String,
    /// The size of the tree the proofs are for.
    pub tree_size: u64,
    /// Its root, base64 (the checkpoint's third line).
    pub root: String,
    /// The call's intent and outcome entries within the tree, in chain order.
    pub entries: Vec<EntryProof>,
}

/// The consistency proof of the tree of the first `old_size` entries with the tree of the first
/// `new_size` (RFC 9162 §2.1.4): that the later tree extends the earlier one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsistencyProof {
    /// The earlier tree's size (an earlier checkpoint's).
    pub old_size: u64,
    /// Its root, base64.
    pub old_root: String,
    /// The later tree's size.
    pub new_size: u64,
    /// Its root, base64.
    pub new_root: String,
    /// `PROOF(old_size, D[new_size])`, base64, in the order §2.1.4.1 produces it.
    pub proof: Vec<String>,
}

/// Why no proof of a call could be made.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// No entry of the tree records that call.
    #[error("no entry records call `{call_id}` in the first {size} entries")]
    UnknownCall {
        /// The call id asked for.
        call_id: String,
        /// The tree size searched.
        size: u64,
    },
    /// The tree asked for is larger than the chain.
    #[error(transparent)]
    Proof(#[from] ProofError),
    /// An entry's body is not a record.
    #[error(transparent)]
    Corrupt(#[from] LedgerError),
}

impl LedgerTree {
    /// The tree of the SQLite ledger at `path` (opened read-only), once its chain verifies.
    ///
    /// # Errors
    /// [`VerifyError::Tampered`] naming the first entry that does not fit;
    /// [`VerifyError::Unreadable`] when the file is not a ledger.
    #[cfg(feature = "sqlite")]
    pub fn of_path(path: &Path) -> Result<Self, VerifyError> {
        Ok(Self::of_rows(sqlite::read_rows(path)?)?)
    }

    /// The tree of the ledger at `location` (a SQLite file or a PostgreSQL database), once its
    /// chain verifies.
    ///
    /// # Errors
    /// [`VerifyError::Unreadable`] when the ledger cannot be read; [`VerifyError::Tampered`]
    /// when its chain does not verify.
    pub fn of_location(location: &crate::location::LedgerLocation) -> Result<Self, VerifyError> {
        Ok(Self::of_rows(location.rows()?)?)
    }

    /// The tree of entries held in memory (a [`MemoryLedger`](crate::memory::MemoryLedger)'s), once
    /// their chain verifies.
    ///
    /// # Errors
    /// As [`LedgerTree::of_path`].
    pub fn of_entries(entries: &[Entry]) -> Result<Self, VerifyError> {
        Ok(Self::of_rows(
            entries.iter().map(Entry::stored_row).collect(),
        )?)
    }

    /// The tree of stored rows in chain order, once their chain verifies.
    ///
    /// # Errors
    /// The first entry that does not fit the chain.
    pub fn of_rows(rows: Vec<StoredRow>) -> Result<Self, Tamper> {
        let report = verify_rows(&rows, None)?;
        let leaves = rows
            .iter()
            .map(|r| {
                let seq = r.seq.unsigned_abs();
                entry_leaf(
                    seq,
                    r.prev.as_deref().unwrap_or_default(),
                    r.at_ms.unwrap_or_default().unsigned_abs(),
                    r.body.as_deref().unwrap_or_default(),
                )
            })
            .collect();
        Ok(Self {
            report,
            rows,
            tree: MerkleTree::from_leaves(leaves),
        })
    }

    /// The chain's verification: its length and head.
    pub fn report(&self) -> &VerifyReport {
        &self.report
    }

    /// The Merkle tree over every entry.
    pub fn tree(&self) -> &MerkleTree {
        &self.tree
    }

    /// The checkpoint of the whole chain, for a log named `origin`.
    pub fn checkpoint(&self, origin: &str) -> Checkpoint {
        Checkpoint {
            origin: origin.to_string(),
            size: self.tree.size(),
            root: self.tree.root(),
        }
    }

    /// Check the chain against checkpoints (already opened, their signatures verified): the
    /// latest (by size) must cover a prefix of the chain with its root; with two, it must be
    /// proven consistent with the earlier by the consistency proof between them, made from the
    /// chain.
    ///
    /// # Errors
    /// The first finding: entries cut from the end, a rewritten history, inconsistent
    /// checkpoints.
    pub fn check(&self, checkpoints: &[Checkpoint]) -> Result<CheckpointReport, CheckpointTamper> {
        let mut by_size: Vec<&Checkpoint> = checkpoints.iter().collect();
        by_size.sort_by_key(|c| std::cmp::Reverse(c.size));
        // The latest against the chain (so a ledger rewritten under both is named as
        // rewritten); the earlier through the consistency proof from it to the latest.
        if let Some(latest) = by_size.first() {
            self.matches(latest)?;
        }
        let consistent = match by_size.as_slice() {
            [new, old, ..] => {
                let proof = self
                    .tree
                    .consistency_proof(old.size, new.size)
                    .map_err(|why| CheckpointTamper::Inconsistent {
                        old: old.size,
                        new: new.size,
                        why,
                    })?;
                verify_consistency(old.size, new.size, &old.root, &new.root, &proof).map_err(
                    |why| CheckpointTamper::Inconsistent {
                        old: old.size,
                        new: new.size,
                        why,
                    },
                )?;
                Some((old.size, new.size, proof.len()))
            }
            _ => None,
        };
        Ok(CheckpointReport {
            matched: checkpoints.iter().map(|c| c.size).collect(),
            consistent,
        })
    }

    fn matches(&self, c: &Checkpoint) -> Result<(), CheckpointTamper> {
        let entries = self.tree.size();
        if c.size > entries {
            return Err(CheckpointTamper::Truncated {
                covered: c.size,
                entries,
            });
        }
        let root = self
            .tree
            .root_at(c.size)
            .map_err(|_| CheckpointTamper::Truncated {
                covered: c.size,
                entries,
            })?;
        if root != c.root {
            return Err(CheckpointTamper::Rewritten {
                size: c.size,
                computed: b64(&root),
                expected: b64(&c.root),
            });
        }
        Ok(())
    }

    /// The inclusion proofs of call `call_id`'s entries (its intent and outcome) in the tree of
    /// the first `size` entries (all of them without `size`).
    ///
    /// # Errors
    /// No entry records the call there; `size` exceeds the chain.
    pub fn prove_call(&self, call_id: &str, size: Option<u64>) -> Result<CallProof, ProveError> {
        let size = size.unwrap_or(self.tree.size());
        let root = self.tree.root_at(size)?;
        // Bodies are canonical JSON, so a body recording the call holds its id as encoded
        // there: only those are decoded.
        let needle = canonical_json(&serde_json::Value::String(call_id.to_string()));
        let mut entries = Vec::new();
        for row in self
            .rows
            .iter()
            .take(usize::try_from(size).unwrap_or(usize::MAX))
        {
            if !row.body.as_deref().is_some_and(|b| b.contains(&needle)) {
                continue;
            }
            let entry = row.to_entry()?;
            let of_call = match &entry.record {
                Record::Intent(i) => i.call_id == call_id,
                Record::Outcome(o) => o.call_id == call_id,
                Record::Approval(a) => a.call_id == call_id,
                Record::Transition(_) | Record::Declassification(_) => false,
            };
            if !of_call {
                continue;
            }
            let index = entry.seq - 1;
            let path = self.tree.inclusion_proof(index, size)?;
            let leaf = self.tree.leaf(index).copied().unwrap_or_default();
            entries.push(EntryProof {
                seq: entry.seq,
                leaf_index: index,
                leaf_input: hash_input(
                    entry.seq,
                    &entry.prev,
                    entry.at_ms,
                    row.body.as_deref().unwrap_or_default(),
                ),
                leaf_hash: b64(&leaf),
                audit_path: path.iter().map(b64).collect(),
            });
        }
        if entries.is_empty() {
            return Err(ProveError::UnknownCall {
                call_id: call_id.to_string(),
                size,
            });
        }
        Ok(CallProof {
            call_id: call_id.to_string(),
            tree_size: size,
            root: b64(&root),
            entries,
        })
    }

    /// The consistency proof of the tree of the first `old` entries with the tree of the first
    /// `new` (all of them without `new`).
    ///
    /// # Errors
    /// [`ProofError::SizeOutOfRange`] unless `old ≤ new ≤` the chain's length.
    pub fn prove_consistency(
        &self,
        old: u64,
        new: Option<u64>,
    ) -> Result<ConsistencyProof, ProofError> {
        let new = new.unwrap_or(self.tree.size());
        let proof = self.tree.consistency_proof(old, new)?;
        Ok(ConsistencyProof {
            old_size: old,
            old_root: b64(&self.tree.root_at(old)?),
            new_size: new,
            new_root: b64(&self.tree.root_at(new)?),
            proof: proof.iter().map(b64).collect(),
        })
    }
}

#[cfg(test)]
mod tests;
