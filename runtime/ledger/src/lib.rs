//! The evidence ledger of Escepine: hash-chained entries, committed before the caller continues.
//!
//! Every item has one path, the module that defines it; this root declares the modules and
//! re-exports nothing.
//!
//! - [`record`]: what is recorded (intents, approvals, outcomes, SOP transitions), and
//!   [`entry`]: the chain link around a record, its canonical JSON and its hash.
//! - [`store`]: the [`Ledger`](store::Ledger) trait every store implements;
//!   [`memory`], [`sqlite`] (feature `sqlite`) and [`postgres`] (feature `postgres`) the stores.
//! - [`calls`]: one call folded from its entries (its intent, approval, attempts and outcome),
//!   read through the store's index of call ids, and where it stands.
//! - [`verify`]: the chain recomputed and the first tampered entry named; [`merkle`],
//!   [`proof`] and [`checkpoint`]: RFC 6962 trees, inclusion and consistency proofs, signed
//!   checkpoints; [`trust`]: an entry checked before a runtime acts on it.
//! - [`flows`]: flows folded from the chain (labels, origins, tools), kept incrementally.
//! - [`lease`]: one driver per SOP run; [`budget`]: budget uses kept beside the chain.
//! - [`location`]: a ledger named on a command line (a SQLite file or a PostgreSQL URL);
//!   [`redact`]: a URL's password hidden.
//!
//! # Features
//!
//! - `sqlite`: the SQLite ledger ([`sqlite`]), bundled SQLite.
//! - `postgres`: the PostgreSQL ledger ([`postgres`]) and run leases held in the database.
//!
//! Without any feature the crate holds the entries, the memory ledger, verification, proofs,
//! checkpoints, trust checks and the call view.

#![deny(missing_docs)]

pub mod budget;
pub mod calls;
pub mod checkpoint;
pub mod entry;
pub mod error;
pub mod flows;
pub mod lease;
pub mod location;
pub mod memory;
pub mod merkle;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod proof;
pub mod record;
pub mod redact;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_budgets;
pub mod store;
pub mod trust;
pub mod verify;
