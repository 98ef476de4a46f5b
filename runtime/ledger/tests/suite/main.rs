//! The ledger's integration tests: one test program, one module per subject.
//!
//! The crash tests re-run this program as a child with `--exact <module>::<child test>
//! --ignored`, so the child runs only its own test. The PostgreSQL tests (feature `postgres`)
//! need the machine's cluster (`.ci/postgres`).

#[cfg(feature = "sqlite")]
mod calls_index;
#[cfg(feature = "sqlite")]
mod crash;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
