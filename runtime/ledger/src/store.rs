//! [`Ledger`]: the append-only, hash-chained evidence store every ledger implements.

use std::future::Future;
use std::pin::Pin;

use crate::budget::{BudgetClaim, Reservation};
use crate::entry::{self, Committed, Entry};
use crate::error::LedgerError;
use crate::lease::RunLease;
use crate::record::Record;

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

    /// Entry `seq` (from 1), if the chain holds it. The default reads every entry; the ledgers
    /// of this crate read the one row.
    fn entry(&self, seq: u64) -> Result<Option<Entry>, LedgerError> {
        let Some(index) = usize::try_from(seq).ok().and_then(|s| s.checked_sub(1)) else {
            return Ok(None);
        };
        Ok(self.entries()?.into_iter().nth(index))
    }

    /// The entries after entry `seq` (all of them for 0), in chain order: what a reader that has
    /// folded the chain up to `seq` has not seen. The default reads every entry; the ledgers of
    /// this crate read only those rows (by the `seq` key).
    fn entries_after(&self, seq: u64) -> Result<Vec<Entry>, LedgerError> {
        Ok(self
            .entries()?
            .into_iter()
            .filter(|e| e.seq > seq)
            .collect())
    }

    /// The entries that name call `call_id` (its intent, approval and outcome), in chain order.
    ///
    /// The default reads every entry; the ledgers of this crate read only the call's entries,
    /// through an index of the entries' call ids (a map in memory, the indexed `call_id`
    /// column of the `entries` table in SQLite and PostgreSQL). An entry the index names whose
    /// record names another call is left out. [`crate::calls::CallView`] folds them into a
    /// call.
    fn entries_for_call(&self, call_id: &str) -> Result<Vec<Entry>, LedgerError> {
        Ok(self
            .entries()?
            .into_iter()
            .filter(|e| e.record.call_id() == Some(call_id))
            .collect())
    }

    /// How many stored entries this ledger has read and decoded since it was opened, whatever
    /// asked for them (0 for a store that does not count them; the ledgers of this crate do).
    /// It shows what a read costs: one call's state read through the index touches that call's
    /// entries only.
    fn rows_read(&self) -> u64 {
        0
    }

    /// The entries of one SOP run, in chain order: its transitions, the intents of its steps and
    /// the outcomes of those calls.
    fn entries_for_run(&self, run_id: &str) -> Result<Vec<Entry>, LedgerError> {
        Ok(entry::select_run(&self.entries()?, run_id))
    }

    /// Claim SOP run `run_id` for one driver until the lease is dropped (see [`lease`](crate::lease)). The
    /// default guards nothing; the ledgers of this crate override it.
    ///
    /// # Errors
    /// [`LedgerError::RunLeased`] while another driver holds it.
    fn lease_run(&self, run_id: &str) -> Result<RunLease, LedgerError> {
        Ok(RunLease::unguarded(run_id))
    }

    /// Check every budget of `claim` and, when each has room, record a use of each for the
    /// call — atomically, so concurrent calls (in this process or, for a shared store, in
    /// others) never overrun a budget. A refused claim records nothing.
    ///
    /// The default keeps no counts and refuses to guess: the ledgers of this crate override
    /// it (in memory, in the SQLite file, in the PostgreSQL database).
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the uses cannot be read or written.
    fn reserve_budgets(
        &self,
        claim: BudgetClaim,
    ) -> BoxFuture<'_, Result<Reservation, LedgerError>> {
        let _ = claim;
        Box::pin(std::future::ready(Err(LedgerError::unavailable(
            "this ledger does not count budgets",
        ))))
    }

    /// Mark the budget uses of `call_id` ended: they stop counting as in flight.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the uses cannot be written.
    fn release_budgets(&self, call_id: &str) -> BoxFuture<'_, Result<(), LedgerError>> {
        let _ = call_id;
        Box::pin(std::future::ready(Ok(())))
    }

    /// Mark the waiting call `call_id` decided (approved, rejected or expired) — atomically,
    /// so that of concurrent deciders (in this process or, for a shared store, in others)
    /// exactly one gets `true`; every later claim gets `false`. The claim is store state
    /// beside the chain; the decision's evidence is the `approval` entry the claimer appends.
    ///
    /// The default keeps no claims and refuses to guess: the ledgers of this crate override
    /// it.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the claims cannot be read or written.
    fn claim_approval(&self, call_id: &str) -> BoxFuture<'_, Result<bool, LedgerError>> {
        let _ = call_id;
        Box::pin(std::future::ready(Err(LedgerError::unavailable(
            "this ledger does not keep approval claims",
        ))))
    }

    /// The last committed entry (`None` while the ledger is empty).
    fn head(&self) -> Result<Option<Committed>, LedgerError> {
        Ok(self.entries()?.last().map(Entry::committed))
    }
}
