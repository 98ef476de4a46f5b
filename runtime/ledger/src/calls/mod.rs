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
//! claim admits one decider); should it hold more, the first of each kind counts.

pub mod recorded;
pub mod state;

use std::collections::HashMap;

use crate::calls::recorded::Recorded;
use crate::calls::state::CallState;
use crate::entry::Entry;
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
}

impl Call {
    /// An empty call (nothing recorded of it yet).
    fn new(call_id: &str) -> Self {
        Self {
            call_id: call_id.to_string(),
            ..Self::default()
        }
    }

    /// Take `entry` into the call, if it is one of its entries (the first of each kind counts).
    fn take(&mut self, entry: Entry) {
        let (parts, record) = recorded::split(entry);
        match record {
            Record::Intent(i) if i.call_id == self.call_id && self.intent.is_none() => {
                self.intent = Some(parts.with(i));
            }
            Record::Approval(a) if a.call_id == self.call_id && self.approval.is_none() => {
                self.approval = Some(parts.with(a));
            }
            Record::Outcome(o) if o.call_id == self.call_id && self.outcome.is_none() => {
                self.outcome = Some(parts.with(o));
            }
            _ => {}
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
