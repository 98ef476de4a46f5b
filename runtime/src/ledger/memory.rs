//! An in-memory ledger, chained exactly like the durable one: for tests and benchmarks.

use std::sync::{Mutex, MutexGuard};

use super::budget::{BudgetClaim, MemoryBudgets, Reservation};
use super::entry::{entry_hash, now_ms, record_body, select_run, Committed, Entry, GENESIS_PREV};
use super::error::LedgerError;
use super::lease::{LocalLeases, RunLease};
use super::record::Record;
use super::store::{BoxFuture, Ledger};

/// A ledger held in a `Mutex<Vec<Entry>>`; nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    entries: Mutex<Vec<Entry>>,
    leases: LocalLeases,
    budgets: MemoryBudgets,
    approval_claims: Mutex<std::collections::HashSet<String>>,
}

impl MemoryLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.lock().map(|e| e.len()).unwrap_or(0)
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> Result<MutexGuard<'_, Vec<Entry>>, LedgerError> {
        self.entries
            .lock()
            .map_err(|_| LedgerError::Unavailable("the in-memory ledger is poisoned".into()))
    }

    fn append_now(&self, record: Record) -> Result<Committed, LedgerError> {
        // Encode outside the lock; only the chaining is serialised.
        let body = record_body(&record)?;
        let mut entries = self.lock()?;
        let (seq, prev) = match entries.last() {
            Some(last) => (last.seq + 1, last.hash.clone()),
            None => (1, GENESIS_PREV.to_string()),
        };
        let at_ms = now_ms();
        let hash = entry_hash(seq, &prev, at_ms, &body);
        entries.push(Entry {
            seq,
            prev,
            at_ms,
            record,
            hash: hash.clone(),
        });
        Ok(Committed { seq, hash })
    }
}

impl Ledger for MemoryLedger {
    fn append(&self, record: Record) -> BoxFuture<'_, Result<Committed, LedgerError>> {
        let result = self.append_now(record);
        Box::pin(std::future::ready(result))
    }

    fn entries(&self) -> Result<Vec<Entry>, LedgerError> {
        Ok(self.lock()?.clone())
    }

    fn entry(&self, seq: u64) -> Result<Option<Entry>, LedgerError> {
        let index = usize::try_from(seq).ok().and_then(|s| s.checked_sub(1));
        Ok(index.and_then(|i| self.lock().ok()?.get(i).cloned()))
    }

    fn entries_for_run(&self, run_id: &str) -> Result<Vec<Entry>, LedgerError> {
        Ok(select_run(&self.lock()?, run_id))
    }

    fn head(&self) -> Result<Option<Committed>, LedgerError> {
        Ok(self.lock()?.last().map(Entry::committed))
    }

    fn lease_run(&self, run_id: &str) -> Result<RunLease, LedgerError> {
        self.leases.acquire(run_id)
    }

    fn reserve_budgets(
        &self,
        claim: BudgetClaim,
    ) -> BoxFuture<'_, Result<Reservation, LedgerError>> {
        Box::pin(std::future::ready(self.budgets.reserve(&claim)))
    }

    fn release_budgets(&self, call_id: &str) -> BoxFuture<'_, Result<(), LedgerError>> {
        Box::pin(std::future::ready(self.budgets.release(call_id)))
    }

    fn claim_approval(&self, call_id: &str) -> BoxFuture<'_, Result<bool, LedgerError>> {
        let claimed = self
            .approval_claims
            .lock()
            .map(|mut claims| claims.insert(call_id.to_string()))
            .map_err(|_| LedgerError::Unavailable("the approval claims are poisoned".into()));
        Box::pin(std::future::ready(claimed))
    }
}
