//! The ledger is the journal: a run rebuilt from its entries.
//!
//! A run's entries ([`escepine_ledger::store::Ledger::entries_for_run`]) are its SOP events
//! ([`super::events`]) and the intents and outcomes of its calls. Folding them in chain order
//! gives the run's state — its data, the steps it completed, where it stands — with the same
//! transition function the live engine applies after each event it records, so a resumed run and
//! an uninterrupted one cannot disagree about what happened.
//!
//! Idempotency keys are derived, never random: a step's from (run id, state, visit), an
//! inverse's from (run id, the call it undoes). A step that has an intent but no outcome is run
//! again with the same key and the payload its intent recorded — unless its intent waits for
//! approval (`awaiting-approval`): such a call is never made again; the approval entries and
//! the outcome the approver's runtime records end it, and until then the run stays paused.

use std::collections::{HashMap, HashSet};

use escepine_contract::{Principal, SideEffectClass};
use escepine_ledger::calls::{self, Call};
use serde_json::{json, Map, Value};

use super::error::SopRunError;
use super::events::{
    CompensationReason, Escalation, Event, FailureKind, PlanItem, RunStarted, RunStatus,
    StepFailure, Undo,
};
use crate::kind::CallKind;
use crate::report::denied_message;
use escepine_ledger::entry::{sha256_hex, Entry};
use escepine_ledger::record::{CallResult, Record};
use escepine_ledger::store::Ledger;

/// The idempotency key of visit `visit` of `state` in `run_id`.
pub fn step_idempotency_key(run_id: &str, state: &str, visit: u32) -> String {
    derive_key(&["step", run_id, state, &visit.to_string()])
}

/// The idempotency key of the inverse that undoes `call_id` in `run_id`.
pub fn inverse_idempotency_key(run_id: &str, call_id: &str) -> String {
    derive_key(&["inverse", run_id, call_id])
}

fn derive_key(parts: &[&str]) -> String {
    // Length-prefixed, so no two part lists encode alike.
    let mut text = String::from("escepine/sop-idempotency/v1");
    for p in parts {
        text.push_str(&format!("\n{}:{p}", p.len()));
    }
    let mut hash = sha256_hex(text);
    hash.truncate(32);
    hash
}

/// A run's entries in the ledger, as read for a resume or an inspection.
#[derive(Debug, Clone)]
pub struct Journal {
    /// The run.
    pub run_id: String,
    /// The data of its `run_started` event.
    pub started: RunStarted,
    /// Its entries in chain order (events, intents of its calls, their outcomes).
    pub entries: Vec<Entry>,
}

impl Journal {
    /// Read run `run_id` from `ledger`.
    ///
    /// # Errors
    /// The ledger cannot be read, holds no such run, or the run does not begin with
    /// `run_started`.
    pub fn load(ledger: &dyn Ledger, run_id: &str) -> Result<Self, SopRunError> {
        Self::from_entries(run_id, ledger.entries_for_run(run_id)?)
    }

    /// A journal from the run's entries (as [`Ledger::entries_for_run`] returns them).
    ///
    /// # Errors
    /// No entries, or the first event is not a well-formed `run_started`.
    pub fn from_entries(run_id: &str, entries: Vec<Entry>) -> Result<Self, SopRunError> {
        let first = entries
            .iter()
            .find_map(|e| match &e.record {
                Record::Transition(t) => Some((e.seq, t)),
                _ => None,
            })
            .ok_or_else(|| SopRunError::UnknownRun(run_id.to_string()))?;
        let started = match Event::parse(first.1) {
            Ok(Some(Event::RunStarted(s))) => s,
            Ok(_) => {
                return Err(journal_err(
                    run_id,
                    first.0,
                    format!(
                        "the run's first event is `{}`, not `run_started`",
                        first.1.event
                    ),
                ))
            }
            Err(e) => return Err(journal_err(run_id, first.0, e.to_string())),
        };
        Ok(Self {
            run_id: run_id.to_string(),
            started,
            entries,
        })
    }

    /// The sequence number of the run's last entry.
    pub fn last_seq(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.seq)
    }

    /// The final status, when the run has ended.
    pub fn status(&self) -> Option<RunStatus> {
        self.entries.iter().rev().find_map(|e| match &e.record {
            Record::Transition(t) => match Event::parse(t) {
                Ok(Some(Event::RunEnded(r))) => Some(r.status),
                _ => None,
            },
            _ => None,
        })
    }
}

pub(crate) fn inconsistent(run_id: &str, why: impl Into<String>) -> SopRunError {
    SopRunError::Inconsistent {
        run_id: run_id.to_string(),
        why: why.into(),
    }
}

pub(crate) fn journal_err(run_id: &str, seq: u64, why: impl Into<String>) -> SopRunError {
    SopRunError::Journal {
        run_id: run_id.to_string(),
        seq,
        why: why.into(),
    }
}

/// One call of the run, as recorded (or as just made).
#[derive(Debug, Clone)]
pub(crate) struct CallInfo {
    pub call_id: String,
    pub key: String,
    pub tool: String,
    pub class: SideEffectClass,
    /// The payload (as recorded in the intent: scrubbed).
    pub input: Value,
    pub policy_ids: Vec<String>,
    pub reasons: Vec<String>,
    /// Whether the call's intent waits for approval (decision `awaiting-approval`): without an
    /// end it is never made again, its state is asked of the runtime.
    pub awaits_approval: bool,
    pub end: Option<CallEnd>,
}

/// How a call ended.
#[derive(Debug, Clone)]
pub(crate) struct CallEnd {
    pub result: CallResult,
    pub output: Option<Value>,
    pub error: Option<String>,
    /// The hash of the outcome entry.
    pub outcome_hash: Option<String>,
}

impl CallInfo {
    /// A call of run `run_id` as the ledger recorded it: its intent, whether it waited for
    /// approval (its intent says so, or a decision is recorded), and its end, if recorded.
    ///
    /// # Errors
    /// A decision or an outcome without an intent before it.
    fn recorded(run_id: &str, call: Call) -> Result<Self, SopRunError> {
        let intent_seq = call.intent.as_ref().map_or(u64::MAX, |i| i.seq);
        for (what, seq) in [
            ("approval", call.approval.as_ref().map(|a| a.seq)),
            ("outcome", call.outcome.as_ref().map(|o| o.seq)),
        ] {
            if let Some(seq) = seq.filter(|s| *s < intent_seq) {
                return Err(journal_err(
                    run_id,
                    seq,
                    format!("{what} of the unknown call `{}`", call.call_id),
                ));
            }
        }
        let Some(intent) = call.intent else {
            return Err(inconsistent(
                run_id,
                format!("the call `{}` has no intent", call.call_id),
            ));
        };
        let i = intent.record;
        Ok(Self {
            awaits_approval: i.approval.is_some() || call.approval.is_some(),
            call_id: i.call_id,
            key: i.idempotency_key,
            tool: i.tool_id,
            class: i.class,
            input: i.payload,
            policy_ids: i.policy_ids,
            reasons: i.reasons,
            end: call.outcome.map(|o| CallEnd {
                result: o.record.result,
                output: o.record.output,
                error: o.record.error,
                outcome_hash: Some(o.hash),
            }),
        })
    }

    /// The recorded end as a step result: the call id, or why it failed (with the hash of
    /// the outcome entry).
    pub(crate) fn result(&self) -> Option<Result<String, StepFailure>> {
        let end = self.end.as_ref()?;
        let kind = CallKind::of_result(end.result);
        let Some(kind) = FailureKind::of_call(kind) else {
            return Some(Ok(self.call_id.clone()));
        };
        let message = match kind {
            FailureKind::Call(CallKind::Denied) => denied_message(&self.policy_ids, &self.reasons),
            _ => end.error.clone().unwrap_or_default(),
        };
        Some(Err(StepFailure {
            kind,
            message,
            call_id: Some(self.call_id.clone()),
            policy_ids: if kind == FailureKind::Call(CallKind::Denied) {
                self.policy_ids.clone()
            } else {
                Vec::new()
            },
            outcome: end.outcome_hash.clone(),
        }))
    }
}

/// A step the run completed, as compensation needs it.
#[derive(Debug, Clone)]
pub(crate) struct DoneStep {
    pub state: String,
    pub call_id: String,
    pub tool: String,
    pub class: SideEffectClass,
    pub input: Value,
    pub output: Value,
    pub outcome_hash: String,
}

/// Where a run stands: what the engine does next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cursor {
    /// Nothing recorded yet (before `run_started`).
    New,
    /// About to enter this state.
    Enter(String),
    /// `step_started` recorded: plan (or reuse the recorded call) and call.
    InStep {
        state: String,
        visit: u32,
        key: String,
    },
    /// `step_succeeded` recorded: move to the step's `next`.
    Succeeded(String),
    /// `decision` recorded: move to the chosen state.
    Decided { from: String, to: String },
    /// `step_failed` recorded: apply the step's `on_failure`.
    Failed { state: String, failure: StepFailure },
    /// `compensation_started` recorded: undo the next item of the plan.
    Compensating,
    /// `compensation_failed` recorded: escalate with the unfinished items.
    CompensationFailed { state: String, failure: StepFailure },
    /// `escalated` recorded: notify, then end the run escalated.
    Escalated,
    /// `run_ended` recorded.
    Ended(RunStatus),
}

/// Compensation in progress.
#[derive(Debug, Clone)]
pub(crate) struct Compensation {
    pub reason: CompensationReason,
    pub plan: Vec<PlanItem>,
    pub done: HashSet<String>,
}

impl Compensation {
    /// The next item to undo (read-only items need nothing).
    pub(crate) fn next(&self) -> Option<&PlanItem> {
        self.plan
            .iter()
            .find(|i| i.undo != Undo::Nothing && !self.done.contains(&i.call_id))
    }

    /// The items not undone yet, in undo order.
    pub(crate) fn unfinished(&self) -> Vec<PlanItem> {
        self.plan
            .iter()
            .filter(|i| i.undo != Undo::Nothing && !self.done.contains(&i.call_id))
            .cloned()
            .collect()
    }
}

/// A run's state, folded from its events (live or recorded).
#[derive(Debug, Clone)]
pub(crate) struct RunState {
    pub run_id: String,
    pub started: Option<RunStarted>,
    pub principal: Principal,
    pub cursor: Cursor,
    /// The state the run is at (entered last).
    pub at: Option<String>,
    /// `{"<state>": {"input": …, "output": …}}` of the completed steps (latest visit).
    pub data: Map<String, Value>,
    visits: HashMap<String, u32>,
    pub completed: Vec<DoneStep>,
    calls: HashMap<String, CallInfo>,
    by_key: HashMap<String, Vec<String>>,
    pub compensation: Option<Compensation>,
    pub failure: Option<StepFailure>,
    pub escalation: Option<Escalation>,
    /// Whether the escalation hooks were told (in this process).
    pub notified: bool,
}

impl RunState {
    /// A run about to start.
    pub(crate) fn new(run_id: &str, principal: Principal) -> Self {
        Self {
            run_id: run_id.to_string(),
            started: None,
            principal,
            cursor: Cursor::New,
            at: None,
            data: Map::new(),
            visits: HashMap::new(),
            completed: Vec::new(),
            calls: HashMap::new(),
            by_key: HashMap::new(),
            compensation: None,
            failure: None,
            escalation: None,
            notified: false,
        }
    }

    /// The run rebuilt from its journal.
    pub(crate) fn replay(journal: &Journal) -> Result<Self, SopRunError> {
        let run_id = journal.run_id.as_str();
        let principal: Principal = journal.started.principal.parse().map_err(|e| {
            inconsistent(
                run_id,
                format!("the recorded principal does not parse: {e}"),
            )
        })?;
        let mut st = Self::new(run_id, principal);
        // The run's calls, as the ledger's call view folds their entries.
        for call in calls::fold(journal.entries.iter().cloned()) {
            st.add_call(CallInfo::recorded(run_id, call)?);
        }
        for entry in &journal.entries {
            let err = |why: String| journal_err(run_id, entry.seq, why);
            if let Record::Transition(t) = &entry.record {
                // An event this engine does not know (a later version's) changes nothing.
                if let Some(event) = Event::parse(t).map_err(|e| err(e.to_string()))? {
                    st.apply(t.state.as_deref(), &event).map_err(err)?;
                }
            }
        }
        Ok(st)
    }

    /// Record a call (made now, or read from the journal).
    pub(crate) fn add_call(&mut self, call: CallInfo) {
        self.by_key
            .entry(call.key.clone())
            .or_default()
            .push(call.call_id.clone());
        self.calls.insert(call.call_id.clone(), call);
    }

    /// The call that carries `key`: the last one that ended, else the last one begun.
    pub(crate) fn call_for_key(&self, key: &str) -> Option<&CallInfo> {
        let ids = self.by_key.get(key)?;
        let calls = ids.iter().rev().filter_map(|id| self.calls.get(id));
        let mut last = None;
        for c in calls {
            if c.end.is_some() {
                return Some(c);
            }
            last = last.or(Some(c));
        }
        last
    }

    /// A call by id.
    pub(crate) fn call(&self, call_id: &str) -> Option<&CallInfo> {
        self.calls.get(call_id)
    }

    /// Record how a remembered call ended (a call that waited for approval, ended since).
    pub(crate) fn end_call(&mut self, call_id: &str, end: CallEnd) {
        if let Some(call) = self.calls.get_mut(call_id) {
            call.end = Some(end);
        }
    }

    /// How many times `state` has been started.
    pub(crate) fn visits(&self, state: &str) -> u32 {
        self.visits.get(state).copied().unwrap_or(0)
    }

    /// The run's data as a JSON value.
    pub(crate) fn data_value(&self) -> Value {
        Value::Object(self.data.clone())
    }

    /// Advance by one recorded event. The one transition function of a run: the engine calls it
    /// after each event it commits, a resume for each event it reads.
    pub(crate) fn apply(&mut self, state: Option<&str>, event: &Event) -> Result<(), String> {
        let need_state = || state.map(str::to_string).ok_or("the event names no state");
        match event {
            Event::RunStarted(s) => {
                if self.cursor != Cursor::New {
                    return Err("a second `run_started`".into());
                }
                let start = need_state()?;
                self.started = Some(s.clone());
                self.at = Some(start.clone());
                self.cursor = Cursor::Enter(start);
            }
            Event::RunResumed(_) => {}
            Event::StepStarted(s) => {
                let st = need_state()?;
                self.visits.insert(st.clone(), s.visit);
                self.at = Some(st.clone());
                self.cursor = Cursor::InStep {
                    state: st,
                    visit: s.visit,
                    key: s.idempotency_key.clone(),
                };
            }
            Event::StepSucceeded(s) => {
                let Cursor::InStep { state: st, .. } = &self.cursor else {
                    return Err("`step_succeeded` outside a step".into());
                };
                let st = st.clone();
                let call = self.calls.get(&s.call_id).ok_or_else(|| {
                    format!("`step_succeeded` names the unknown call `{}`", s.call_id)
                })?;
                let output = call
                    .end
                    .as_ref()
                    .filter(|e| e.result == CallResult::Ok)
                    .and_then(|e| e.output.clone())
                    .ok_or_else(|| format!("the call `{}` has no successful outcome", s.call_id))?;
                self.data
                    .insert(st.clone(), json!({ "input": call.input, "output": output }));
                self.completed.push(DoneStep {
                    state: st.clone(),
                    call_id: s.call_id.clone(),
                    tool: call.tool.clone(),
                    class: call.class,
                    input: call.input.clone(),
                    output,
                    outcome_hash: s.outcome.clone(),
                });
                self.cursor = Cursor::Succeeded(st);
            }
            Event::StepFailed(f) => {
                let st = need_state()?;
                self.failure = Some(f.failure.clone());
                self.cursor = Cursor::Failed {
                    state: st,
                    failure: f.failure.clone(),
                };
            }
            Event::Transition(m) => {
                self.at = Some(m.to.clone());
                self.cursor = Cursor::Enter(m.to.clone());
            }
            Event::Decision(d) => {
                let from = need_state()?;
                self.cursor = Cursor::Decided {
                    from,
                    to: d.next.clone(),
                };
            }
            Event::CompensationStarted(c) => {
                self.compensation = Some(Compensation {
                    reason: c.reason,
                    plan: c.plan.clone(),
                    done: HashSet::new(),
                });
                self.cursor = Cursor::Compensating;
            }
            Event::Compensated(c) => self.mark_undone(&c.call_id)?,
            Event::Superseded(s) => self.mark_undone(&s.call_id)?,
            Event::CompensationFailed(f) => {
                self.cursor = Cursor::CompensationFailed {
                    state: need_state()?,
                    failure: f.failure.clone(),
                };
            }
            Event::Escalated(e) => {
                self.escalation = Some(e.clone());
                self.cursor = Cursor::Escalated;
            }
            Event::RunEnded(r) => self.cursor = Cursor::Ended(r.status),
        }
        Ok(())
    }

    fn mark_undone(&mut self, call_id: &str) -> Result<(), String> {
        let c = self
            .compensation
            .as_mut()
            .ok_or("an undo outside compensation")?;
        c.done.insert(call_id.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_deterministic_and_distinct() {
        let a = step_idempotency_key("r", "s", 1);
        assert_eq!(a, step_idempotency_key("r", "s", 1));
        assert_eq!(a.len(), 32);
        assert_ne!(a, step_idempotency_key("r", "s", 2));
        assert_ne!(a, step_idempotency_key("r", "t", 1));
        assert_ne!(
            step_idempotency_key("r\n1:x", "s", 1),
            step_idempotency_key("r", "x\n1:s", 1)
        );
        assert_ne!(inverse_idempotency_key("r", "c"), a);
    }
}
