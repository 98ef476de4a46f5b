//! Calls as the ledger tells them: the one place entries are folded into calls.
//!
//! A call's entries are its intent (written before anything runs), the approver's decision
//! (for a call that waited for approval, or its expiry) and its outcome. [`CallView`] reads one
//! call's entries through the store's index of call ids ([`Ledger::entries_for_call`]) — not
//! the whole chain — and folds them into a [`Call`]; [`fold`] folds entries already read (a
//! run's, a whole chain's) into every call they hold. A [`Call`] tells where the call stands
//! ([`Call::state`]).
//!
//! A chain written by the runtime holds at most one entry of each kind per call (the store's
//! claim admits one decider); should it hold more, the first of each kind counts and the others
//! are kept aside ([`Call::ignored`]), so that a reader can say so.

pub mod recorded;
pub mod state;

use std::collections::HashMap;

use crate::calls::recorded::Recorded;
use crate::calls::state::CallState;
use crate::entry::{Committed, Entry};
use crate::error::LedgerError;
use crate::record::{Approval, Attempt, Intent, Outcome, Record};
use crate::store::Ledger;

/// One call folded from its entries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Call {
    /// The call id.
    pub call_id: String,
    /// Its intent: who asked for what, and what Cedar decided.
    pub intent: Option<Recorded<Intent>>,
    /// The decision on a call that waited for approval: approved, rejected, or expired.
    pub approval: Option<Recorded<Approval>>,
    /// How it ended, with each attempt.
    pub outcome: Option<Recorded<Outcome>>,
    /// Entries of the call beyond the first of their kind (a second intent, decision or
    /// outcome), in chain order: they do not count, and their presence is an anomaly a writer
    /// of this runtime never makes.
    pub ignored: Vec<Ignored>,
}

/// An entry of a call beyond the first of its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// Its position and hash.
    pub entry: Committed,
    /// Its kind: `intent`, `approval` or `outcome`.
    pub kind: &'static str,
}

impl Call {
    /// An empty call (nothing recorded of it yet).
    fn new(call_id: &str) -> Self {
        Self {
            call_id: call_id.to_string(),
            ..Self::default()
        }
    }

    /// Take `entry` into the call, if it is one of its entries (the first of each kind counts;
    /// a later one is [`Call::ignored`]).
    fn take(&mut self, entry: Entry) {
        if entry.record.call_id() != Some(self.call_id.as_str()) {
            return;
        }
        let ignored = Ignored {
            entry: entry.committed(),
            kind: entry.record.kind(),
        };
        let (parts, record) = recorded::split(entry);
        let taken = match record {
            Record::Intent(i) => put(&mut self.intent, parts, i),
            Record::Approval(a) => put(&mut self.approval, parts, a),
            Record::Outcome(o) => put(&mut self.outcome, parts, o),
            Record::Transition(_) | Record::Declassification(_) => true,
        };
        if !taken {
            self.ignored.push(ignored);
        }
    }

    /// Where the call stands at `now_ms` (see [`CallState`]).
    pub fn state(&self, now_ms: u64) -> CallState {
        state::of(
            self.intent.as_ref(),
            self.approval.as_ref(),
            self.outcome.as_ref(),
            now_ms,
        )
    }

    /// The call's attempts, as its outcome records them (none before it ends).
    pub fn attempts(&self) -> &[Attempt] {
        self.outcome
            .as_ref()
            .map_or(&[], |o| o.record.attempts.as_slice())
    }

    /// The first sequence number among its entries.
    pub fn first_seq(&self) -> Option<u64> {
        [
            self.intent.as_ref().map(|r| r.seq),
            self.approval.as_ref().map(|r| r.seq),
            self.outcome.as_ref().map(|r| r.seq),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// When its last entry was committed (`None` while nothing is recorded of it).
    pub fn updated_ms(&self) -> Option<u64> {
        [
            self.intent.as_ref().map(|r| r.at_ms),
            self.approval.as_ref().map(|r| r.at_ms),
            self.outcome.as_ref().map(|r| r.at_ms),
        ]
        .into_iter()
        .flatten()
        .max()
    }
}

/// Put `record` in `slot` unless it holds one already; whether it was put.
fn put<T>(slot: &mut Option<Recorded<T>>, parts: recorded::Parts, record: T) -> bool {
    if slot.is_some() {
        return false;
    }
    *slot = Some(parts.with(record));
    true
}

/// Every call `entries` (in chain order) hold, in the order each first appears; the entries
/// of each call folded as [`CallView::call`] folds them.
pub fn fold(entries: impl IntoIterator<Item = Entry>) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for entry in entries {
        let Some(call_id) = entry.record.call_id() else {
            continue;
        };
        let at = match index.get(call_id) {
            Some(&at) => at,
            None => {
                calls.push(Call::new(call_id));
                index.insert(call_id.to_string(), calls.len() - 1);
                calls.len() - 1
            }
        };
        calls[at].take(entry);
    }
    calls
}

/// The calls of a ledger, read through its index of call ids.
#[derive(Clone, Copy)]
pub struct CallView<'a> {
    ledger: &'a dyn Ledger,
}

impl std::fmt::Debug for CallView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallView").finish_non_exhaustive()
    }
}

impl<'a> CallView<'a> {
    /// The calls of `ledger`.
    pub fn new(ledger: &'a dyn Ledger) -> Self {
        Self { ledger }
    }

    /// Call `call_id`, from its own entries only ([`Ledger::entries_for_call`]); `None` when no
    /// entry names it.
    ///
    /// # Errors
    /// The store cannot be read, or an entry of the call is corrupt.
    pub fn call(&self, call_id: &str) -> Result<Option<Call>, LedgerError> {
        let entries = self.ledger.entries_for_call(call_id)?;
        if entries.is_empty() {
            return Ok(None);
        }
        let mut call = Call::new(call_id);
        for entry in entries {
            call.take(entry);
        }
        Ok(Some(call))
    }

    /// Where call `call_id` stands at `now_ms` ([`CallState::Unknown`] when no intent names it).
    ///
    /// # Errors
    /// As [`CallView::call`].
    pub fn state(&self, call_id: &str, now_ms: u64) -> Result<CallState, LedgerError> {
        Ok(self
            .call(call_id)?
            .map_or(CallState::Unknown, |c| c.state(now_ms)))
    }

    /// Every call of the ledger, in the order each first appears (this reads the whole chain).
    ///
    /// # Errors
    /// The store cannot be read, or an entry is corrupt.
    pub fn calls(&self) -> Result<Vec<Call>, LedgerError> {
        Ok(fold(self.ledger.entries()?))
    }
}

#[cfg(test)]
mod tests;
