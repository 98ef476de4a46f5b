//! The evidence ledger: hash-chained entries, committed before the caller continues.

pub mod entry;
pub mod lease;
pub mod memory;
pub mod record;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod verify;

use std::future::Future;
use std::pin::Pin;

pub use entry::{
    canonical_json, entry_hash, hash_input, record_body, sha256_hex, Entry, GENESIS_PREV,
};
pub use lease::{FileLeases, LocalLeases, RunLease};
pub use memory::MemoryLedger;
pub use record::{Attempt, CallResult, CredentialExemption, Intent, Outcome, Record, Transition};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteLedger, SqliteOptions};
pub use verify::{Tamper, TamperKind, VerifyError, VerifyReport};

/// A committed entry: its sequence number and hash (the evidence index cites the hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Position in the chain, from 1.
    pub seq: u64,
    /// The entry's hash (hex).
    pub hash: String,
}

/// Why the ledger could not commit or read.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The store failed (SQLite error, I/O error, closed writer).
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
    /// Another driver holds the lease of this SOP run (see [`lease`]).
    #[error("run `{0}` is being driven by another engine (its lease is held)")]
    RunLeased(String),
    /// A stored entry could not be decoded.
    #[error("ledger entry {seq} is corrupt: {why}")]
    Corrupt {
        /// The entry's sequence number.
        seq: u64,
        /// What is wrong.
        why: String,
    },
}

/// A boxed future, so [`Ledger`] stays object safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How durable a commit is before [`Ledger::append`] resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=FULL` in WAL mode: the entry survives power loss once acknowledged.
    #[default]
    Full,
    /// `synchronous=NORMAL` in WAL mode: survives a crash of the process, not of the machine.
    Normal,
}

/// An append-only, hash-chained evidence store.
pub trait Ledger: Send + Sync + 'static {
    /// Append a record; resolves once it is committed per the store's durability mode.
    fn append(&self, record: Record) -> BoxFuture<'_, Result<Committed, LedgerError>>;

    /// Every entry, in chain order.
    fn entries(&self) -> Result<Vec<Entry>, LedgerError>;

    /// The entries of one SOP run, in chain order: its transitions, the intents of its steps and
    /// the outcomes of those calls.
    fn entries_for_run(&self, run_id: &str) -> Result<Vec<Entry>, LedgerError> {
        Ok(entry::select_run(&self.entries()?, run_id))
    }

    /// Claim SOP run `run_id` for one driver until the lease is dropped (see [`lease`]). The
    /// default guards nothing; the ledgers of this crate override it.
    ///
    /// # Errors
    /// [`LedgerError::RunLeased`] while another driver holds it.
    fn lease_run(&self, run_id: &str) -> Result<RunLease, LedgerError> {
        let _ = run_id;
        Ok(RunLease::unguarded())
    }

    /// The last committed entry (`None` while the ledger is empty).
    fn head(&self) -> Result<Option<Committed>, LedgerError> {
        Ok(self.entries()?.last().map(Entry::committed))
    }
}
