//! An in-memory ledger, chained exactly like the durable one: for tests and benchmarks.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::budget::{BudgetClaim, MemoryBudgets, Reservation};
use crate::entry::{entry_hash, now_ms, record_body, select_run, Committed, Entry, GENESIS_PREV};
use crate::error::LedgerError;
use crate::lease::{LocalLeases, RunLease};
use crate::record::Record;
use crate::store::{BoxFuture, Ledger};

/// The chain and its index of call ids, under one lock.
#[derive(Debug, Default)]
struct Chain {
    entries: Vec<Entry>,
    /// For each call id, the positions in `entries` of the entries that name it.
    by_call: HashMap<String, Vec<usize>>,
}

/// A ledger held in memory; nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    chain: Mutex<Chain>,
    rows_read: AtomicU64,
    leases: LocalLeases,
    budgets: MemoryBudgets,
    approval_claims: Mutex<HashSet<String>>,
}

impl MemoryLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.lock().map(|c| c.entries.len()).unwrap_or(0)
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> Result<MutexGuard<'_, Chain>, LedgerError> {
        self.chain
            .lock()
            .map_err(|_| LedgerError::unavailable("the in-memory ledger is poisoned"))
    }

    /// Count `n` entries read out of the chain.
    fn read(&self, n: usize) {
        self.rows_read
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn append_now(&self, record: Record) -> Result<Committed, LedgerError> {
        // Encode outside the lock, once; only the chaining is serialised.
        let body: Arc<str> = record_body(&record)?.into();
        let call_id = record.call_id().map(str::to_owned);
        let mut chain = self.lock()?;
        let (seq, prev) = match chain.entries.last() {
            Some(last) => (last.seq + 1, last.hash.clone()),
            None => (1, GENESIS_PREV.to_string()),
        };
        let at_ms = now_ms();
        let hash = entry_hash(seq, &prev, at_ms, &body);
        let position = chain.entries.len();
        chain.entries.push(Entry::from_parts(
            seq,
            prev,
            at_ms,
            record,
            hash.clone(),
            body,
        ));
        if let Some(call_id) = call_id {
            chain.by_call.entry(call_id).or_default().push(position);
        }
        Ok(Committed { seq, hash })
    }
}

impl Ledger for MemoryLedger {
    fn append(&self, record: Record) -> BoxFuture<'_, Result<Committed, LedgerError>> {
        let result = self.append_now(record);
        Box::pin(std::future::ready(result))
    }

    fn entries(&self) -> Result<Vec<Entry>, LedgerError> {
        let entries = self.lock()?.entries.clone();
        self.read(entries.len());
        Ok(entries)
    }

    fn entry(&self, seq: u64) -> Result<Option<Entry>, LedgerError> {
        let index = usize::try_from(seq).ok().and_then(|s| s.checked_sub(1));
        let entry = match index {
            Some(i) => self.lock()?.entries.get(i).cloned(),
            None => None,
        };
        self.read(usize::from(entry.is_some()));
        Ok(entry)
    }

    fn entries_after(&self, seq: u64) -> Result<Vec<Entry>, LedgerError> {
        let chain = self.lock()?;
        let from = usize::try_from(seq)
            .unwrap_or(usize::MAX)
            .min(chain.entries.len());
        let entries: Vec<Entry> = chain.entries[from..].to_vec();
        drop(chain);
        self.read(entries.len());
        Ok(entries)
    }

    /// The entries the index names for `call_id`: nothing else is read.
    fn entries_for_call(&self, call_id: &str) -> Result<Vec<Entry>, LedgerError> {
        let chain = self.lock()?;
        let entries: Vec<Entry> = chain
            .by_call
            .get(call_id)
            .into_iter()
            .flatten()
            .filter_map(|&i| chain.entries.get(i).cloned())
            .collect();
        drop(chain);
        self.read(entries.len());
        Ok(entries)
    }

    fn entries_for_run(&self, run_id: &str) -> Result<Vec<Entry>, LedgerError> {
        let entries = select_run(&self.lock()?.entries, run_id);
        self.read(entries.len());
        Ok(entries)
    }

    fn rows_read(&self) -> u64 {
        self.rows_read.load(Ordering::Relaxed)
    }

    fn head(&self) -> Result<Option<Committed>, LedgerError> {
        Ok(self.lock()?.entries.last().map(Entry::committed))
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
            .map_err(|_| LedgerError::unavailable("the approval claims are poisoned"));
        Box::pin(std::future::ready(claimed))
    }
}
