//! Budget uses: what a budgets file counts, kept in the ledger's store beside the chain.
//!
//! A use is one allowed call counted against one budget: its call id, its start, its expiry
//! (the start plus the call's overall deadline: past it the call can no longer run, so a use
//! a crashed runtime left open stops counting) and whether it ended. Uses are store state, not
//! evidence: they are not entries and are not chained (see `runtime/LEDGER.md`).

use std::sync::Mutex;

use crate::error::LedgerError;

/// One budget's limits, as [`crate::store::Ledger::reserve_budgets`] checks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetLimit {
    /// The budget's id (what a refusal names).
    pub budget: String,
    /// At most this many calls: for ever, or within the window.
    pub calls: Option<u64>,
    /// The length of the sliding window `calls` counts in, in milliseconds.
    pub window_ms: Option<u64>,
    /// At most this many calls in flight.
    pub concurrent: Option<u64>,
}

/// What a budget holds when a call asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BudgetCount {
    /// Uses `calls` counts: every use, or those started inside the window.
    pub calls: u64,
    /// Uses not ended whose expiry is still ahead.
    pub in_flight: u64,
}

impl BudgetLimit {
    /// Whether one more call would exceed this budget, given what it holds: the one rule
    /// every store applies.
    pub fn refuses(&self, count: BudgetCount) -> bool {
        self.calls.is_some_and(|n| count.calls >= n)
            || self.concurrent.is_some_and(|n| count.in_flight >= n)
    }

    /// The earliest start `calls` counts at `now_ms` (0: every use).
    pub fn counted_from(&self, now_ms: u64) -> u64 {
        self.window_ms.map_or(0, |w| now_ms.saturating_sub(w))
    }
}

/// One call asking for every budget that applies to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetClaim {
    /// The call.
    pub call_id: String,
    /// Now, Unix milliseconds: the use's start.
    pub start_ms: u64,
    /// When the use stops counting as in flight if it is never ended.
    pub expiry_ms: u64,
    /// The budgets that apply, each checked; all are used, or none.
    pub limits: Vec<BudgetLimit>,
}

/// The answer to a [`BudgetClaim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// Every budget had room; a use of each is recorded.
    Granted,
    /// This budget (the first, in the claim's order, without room) refused; nothing is
    /// recorded.
    Exceeded(String),
}

/// A recorded use.
#[derive(Debug, Clone)]
struct Use {
    budget: String,
    call_id: String,
    start_ms: u64,
    expiry_ms: u64,
    ended: bool,
}

/// Budget uses held in memory (for the in-memory ledger): nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryBudgets {
    uses: Mutex<Vec<Use>>,
}

impl MemoryBudgets {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Vec<Use>>, LedgerError> {
        self.uses
            .lock()
            .map_err(|_| LedgerError::unavailable("the in-memory budget uses are poisoned"))
    }

    /// Check every budget of `claim` and record a use of each, atomically.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the store is poisoned.
    pub fn reserve(&self, claim: &BudgetClaim) -> Result<Reservation, LedgerError> {
        let mut uses = self.lock()?;
        let now = claim.start_ms;
        for limit in &claim.limits {
            let from = limit.counted_from(now);
            let mut count = BudgetCount::default();
            for u in uses.iter().filter(|u| u.budget == limit.budget) {
                count.calls += u64::from(u.start_ms >= from);
                count.in_flight += u64::from(!u.ended && u.expiry_ms > now);
            }
            if limit.refuses(count) {
                return Ok(Reservation::Exceeded(limit.budget.clone()));
            }
        }
        uses.extend(claim.limits.iter().map(|l| Use {
            budget: l.budget.clone(),
            call_id: claim.call_id.clone(),
            start_ms: claim.start_ms,
            expiry_ms: claim.expiry_ms,
            ended: false,
        }));
        Ok(Reservation::Granted)
    }

    /// Mark the uses of `call_id` ended.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the store is poisoned.
    pub fn release(&self, call_id: &str) -> Result<(), LedgerError> {
        for u in self.lock()?.iter_mut().filter(|u| u.call_id == call_id) {
            u.ended = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(call: &str, at: u64, limit: &BudgetLimit) -> BudgetClaim {
        BudgetClaim {
            call_id: call.into(),
            start_ms: at,
            expiry_ms: at + 1_000,
            limits: vec![limit.clone()],
        }
    }

    #[test]
    fn calls_in_a_window_and_in_flight_are_capped() {
        let store = MemoryBudgets::default();
        let windowed = BudgetLimit {
            budget: "b".into(),
            calls: Some(2),
            window_ms: Some(100),
            concurrent: None,
        };
        assert_eq!(
            store.reserve(&claim("1", 0, &windowed)).unwrap(),
            Reservation::Granted
        );
        assert_eq!(
            store.reserve(&claim("2", 50, &windowed)).unwrap(),
            Reservation::Granted
        );
        assert_eq!(
            store.reserve(&claim("3", 99, &windowed)).unwrap(),
            Reservation::Exceeded("b".into())
        );
        // The first use left the window.
        assert_eq!(
            store.reserve(&claim("4", 101, &windowed)).unwrap(),
            Reservation::Granted
        );

        let concurrent = BudgetLimit {
            budget: "c".into(),
            calls: None,
            window_ms: None,
            concurrent: Some(1),
        };
        assert_eq!(
            store.reserve(&claim("5", 0, &concurrent)).unwrap(),
            Reservation::Granted
        );
        assert_eq!(
            store.reserve(&claim("6", 10, &concurrent)).unwrap(),
            Reservation::Exceeded("c".into())
        );
        store.release("5").unwrap();
        assert_eq!(
            store.reserve(&claim("7", 20, &concurrent)).unwrap(),
            Reservation::Granted
        );
        // A use never ended stops counting at its expiry.
        assert_eq!(
            store.reserve(&claim("8", 1_021, &concurrent)).unwrap(),
            Reservation::Granted
        );
    }

    #[test]
    fn a_refused_claim_uses_no_budget() {
        let store = MemoryBudgets::default();
        let open = BudgetLimit {
            budget: "open".into(),
            calls: Some(10),
            window_ms: None,
            concurrent: None,
        };
        let shut = BudgetLimit {
            budget: "shut".into(),
            calls: Some(0),
            window_ms: None,
            concurrent: None,
        };
        let both = BudgetClaim {
            call_id: "1".into(),
            start_ms: 0,
            expiry_ms: 10,
            limits: vec![open.clone(), shut],
        };
        assert_eq!(
            store.reserve(&both).unwrap(),
            Reservation::Exceeded("shut".into())
        );
        assert_eq!(store.lock().unwrap().len(), 0);
    }
}
