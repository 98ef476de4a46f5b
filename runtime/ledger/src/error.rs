//! [`LedgerError`]: why the ledger could not commit or read.

/// Why the ledger could not commit or read.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The store failed (SQLite error, I/O error, closed writer).
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
    /// Another driver holds the lease of this SOP run (see [`lease`](crate::lease)).
    #[error("run `{0}` is being driven by another engine (its lease is held)")]
    RunLeased(String),
    /// This driver's lease of the SOP run ended while it drove the run (its database connection
    /// was lost): another driver may hold it now, so nothing more is recorded for the run here.
    #[error("the lease of run `{0}` was lost (another engine may drive it now); this engine stops driving it")]
    LeaseLost(String),
    /// A stored entry could not be decoded.
    #[error("ledger entry {seq} is corrupt: {why}")]
    Corrupt {
        /// The entry's sequence number.
        seq: u64,
        /// What is wrong.
        why: String,
    },
}
