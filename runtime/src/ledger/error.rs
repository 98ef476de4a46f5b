//! [`LedgerError`]: why the ledger could not commit or read.

/// Why the ledger could not commit or read.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The store failed (SQLite error, I/O error, closed writer).
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
    /// Another driver holds the lease of this SOP run (see [`lease`](super::lease)).
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
