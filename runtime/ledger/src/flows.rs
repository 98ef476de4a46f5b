//! Flows folded from the chain: the one fold of entries into [`FlowState`]s.
//!
//! A call that ran records in its outcome what it brought into its flow ([`FlowEntry`]: its
//! tool, its labels, the origins it reached); a [`Declassification`] removes a label. Folding
//! those entries in chain order gives every flow's state. [`FlowIndex`] keeps that fold and
//! extends it with the entries appended since ([`FlowIndex::refresh`]), so that reading a flow's
//! state costs the entries new since the last read, never the flow's length, and entries other
//! runtimes append to a shared store are seen at the next read. [`recompute`] folds a whole
//! chain at once: the reference the index is tested against.
//!
//! The index checks that each entry it folds links to the one before (its `prev` is the hash of
//! the entry folded last, its hash recomputes): a chain altered under a running runtime stops the
//! fold with an error rather than lowering a flow's labels.

use std::collections::{BTreeMap, HashMap};

use escepine_contract::{FlowId, FlowState};

use crate::entry::{Entry, GENESIS_PREV};
use crate::error::LedgerError;
use crate::record::{Declassification, FlowEntry, Record};
use crate::store::Ledger;

/// A call that brought a label into a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSource {
    /// The call's id.
    pub call_id: String,
    /// Its tool.
    pub tool_id: String,
    /// Its principal (`Agent::"id"`).
    pub principal: String,
    /// The outcome entry that recorded it.
    pub seq: u64,
}

/// One flow: its state, and for each label it holds the calls that brought it since it was
/// last declassified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flow {
    /// What Cedar sees as `context.flow`.
    pub state: FlowState,
    /// The calls that brought each label the flow holds.
    pub sources: BTreeMap<String, Vec<LabelSource>>,
    /// The declassifications recorded, in chain order (with their entries' numbers).
    pub declassified: Vec<(u64, Declassification)>,
}

impl Flow {
    fn enter(&mut self, seq: u64, call_id: &str, entry: &FlowEntry) {
        let state = &mut self.state;
        state.calls += 1;
        *state.tools.entry(entry.tool_id.clone()).or_insert(0) += 1;
        state.origins.extend(entry.origins.iter().cloned());
        for label in &entry.labels {
            state.labels.insert(label.clone());
            self.sources
                .entry(label.clone())
                .or_default()
                .push(LabelSource {
                    call_id: call_id.to_string(),
                    tool_id: entry.tool_id.clone(),
                    principal: entry.principal.clone(),
                    seq,
                });
        }
    }

    fn declassify(&mut self, seq: u64, d: &Declassification) {
        self.state.labels.remove(&d.label);
        self.sources.remove(&d.label);
        self.declassified.push((seq, d.clone()));
    }
}

/// Every flow of a chain, folded up to one entry.
#[derive(Debug, Clone, Default)]
pub struct FlowIndex {
    flows: HashMap<FlowId, Flow>,
    /// The last entry folded: its number and hash.
    seq: u64,
    hash: Option<String>,
}

impl FlowIndex {
    /// An index that has folded nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold the entries appended to `ledger` since the last refresh (each checked to link to
    /// the one before).
    ///
    /// # Errors
    /// The store cannot be read, or an entry does not link to the one folded before it.
    pub fn refresh(&mut self, ledger: &dyn Ledger) -> Result<(), LedgerError> {
        for entry in ledger.entries_after(self.seq)? {
            self.fold(&entry)?;
        }
        Ok(())
    }

    /// Fold one entry, the next in the chain.
    ///
    /// # Errors
    /// The entry is not the next one, does not link to the one before, or its hash does not
    /// recompute.
    pub fn fold(&mut self, entry: &Entry) -> Result<(), LedgerError> {
        let expected_prev = self.hash.as_deref().unwrap_or(GENESIS_PREV);
        if entry.seq != self.seq + 1 || entry.prev != expected_prev {
            return Err(LedgerError::unavailable(format!(
                "the flows cannot be read: entry {} does not follow entry {} of the chain \
                 folded so far",
                entry.seq, self.seq
            )));
        }
        if entry.computed_hash()? != entry.hash {
            return Err(LedgerError::unavailable(format!(
                "the flows cannot be read: entry {}'s hash does not recompute",
                entry.seq
            )));
        }
        match &entry.record {
            Record::Outcome(o) => {
                if let Some(entered) = &o.entered {
                    self.flows
                        .entry(entered.flow.clone())
                        .or_default()
                        .enter(entry.seq, &o.call_id, entered);
                }
            }
            Record::Declassification(d) => {
                self.flows
                    .entry(d.flow.clone())
                    .or_default()
                    .declassify(entry.seq, d);
            }
            Record::Intent(_) | Record::Approval(_) | Record::Transition(_) => {}
        }
        self.seq = entry.seq;
        self.hash = Some(entry.hash.clone());
        Ok(())
    }

    /// The flow `id` as folded so far (an empty one if nothing happened in it).
    pub fn flow(&self, id: &FlowId) -> Flow {
        self.flows.get(id).cloned().unwrap_or_default()
    }

    /// The state of flow `id` as folded so far (empty if nothing happened in it).
    pub fn state(&self, id: &FlowId) -> FlowState {
        self.flows
            .get(id)
            .map(|f| f.state.clone())
            .unwrap_or_default()
    }
}

/// Every flow of `entries` (a whole chain, in order), folded at once: the reference
/// [`FlowIndex`] is checked against.
///
/// # Errors
/// As [`FlowIndex::fold`].
pub fn recompute(entries: &[Entry]) -> Result<HashMap<FlowId, Flow>, LedgerError> {
    let mut index = FlowIndex::new();
    for e in entries {
        index.fold(e)?;
    }
    Ok(index.flows)
}
