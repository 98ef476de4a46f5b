//! The evidence ledger: hash-chained entries, committed before the caller continues.

pub mod budget;
pub mod checkpoint;
pub mod entry;
mod error;
pub mod lease;
pub mod location;
pub mod memory;
pub mod merkle;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod proof;
pub mod record;
mod redact;
pub mod replay;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_budgets;
mod store;
pub mod trust;
pub mod verify;

pub use budget::{BudgetClaim, BudgetCount, BudgetLimit, Reservation};
pub use entry::{
    canonical_json, entry_hash, hash_input, record_body, sha256_hex, Committed, Entry, GENESIS_PREV,
};
pub use error::LedgerError;
pub use lease::{FileLeases, LocalLeases, RunLease};
pub use location::LedgerLocation;
pub use memory::MemoryLedger;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresLedger, PostgresOptions};
pub use record::{
    Approval, ApprovalRequest, ApprovalResult, Attempt, CallResult, CredentialExemption, Intent,
    Outcome, Record, ShadowDecision, Transition,
};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteLedger, SqliteOptions};
pub use store::{BoxFuture, Durability, Ledger};
pub use verify::{Tamper, TamperKind, VerifyError, VerifyReport};
