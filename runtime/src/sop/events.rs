//! The SOP events the engine records in the ledger, as [`Transition`] records.
//!
//! Each event's `data` is one of the structures below, serialised with serde; [`Event::parse`]
//! reads them back, so the writer and the journal agree on one shape. The event names are the
//! `pub const`s of this module.

use escepine_contract::{FailureOutcome, SideEffectClass};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kind::CallKind;
use escepine_ledger::record::Transition;

/// A run began: the SOP, its version and the principal it runs for.
pub const RUN_STARTED: &str = "run_started";
/// A run was resumed from the ledger after an interruption.
pub const RUN_RESUMED: &str = "run_resumed";
/// An execution step began (before the planner was asked and before any call).
pub const STEP_STARTED: &str = "step_started";
/// An execution step's call completed; its outcome entry is named.
pub const STEP_SUCCEEDED: &str = "step_succeeded";
/// An execution step failed; its `on_failure` applies.
pub const STEP_FAILED: &str = "step_failed";
/// The run moved from one state to the next along a declared transition.
pub const TRANSITION: &str = "transition";
/// A decision state chose a branch (or `otherwise`).
pub const DECISION: &str = "decision";
/// Compensation began: the plan, in undo order.
pub const COMPENSATION_STARTED: &str = "compensation_started";
/// A compensatable step was undone by its declared inverse.
pub const COMPENSATED: &str = "compensated";
/// A supersede step's earlier result was marked superseded (nothing removed).
pub const SUPERSEDED: &str = "superseded";
/// An inverse failed (after its own retries) or was denied; the run escalates.
pub const COMPENSATION_FAILED: &str = "compensation_failed";
/// The run escalated: the structured [`Escalation`] record.
pub const ESCALATED: &str = "escalated";
/// The run ended, with its final status.
pub const RUN_ENDED: &str = "run_ended";

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A terminal state was reached.
    Completed,
    /// A step failed with `halt`.
    Halted,
    /// A step failed with `halt_and_escalate`, or a compensation could not finish.
    Escalated,
    /// A step failed with `compensate` and every completed step was undone by its class.
    Compensated,
    /// The run was cancelled and every completed step was undone by its class.
    Cancelled,
    /// Not an end: a call of the run waits for a person's approval (its intent is recorded
    /// `awaiting-approval`), and the run is paused until it is approved, rejected or expires.
    /// A run outcome only, never recorded in `run_ended`; [`super::Engine::resume`] continues
    /// the run.
    AwaitingApproval,
}

impl RunStatus {
    /// The spelling recorded in the ledger.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Halted => "halted",
            Self::Escalated => "escalated",
            Self::Compensated => "compensated",
            Self::Cancelled => "cancelled",
            Self::AwaitingApproval => "awaiting_approval",
        }
    }

    /// The exit status of `escepine run` / `escepine resume` for a run that ended so:
    /// 0 completed, 10 halted, 11 escalated, 12 compensated, 13 cancelled; 8 for a run that
    /// waits for an approval (the exit status of `escepine call` for a call that waits).
    pub const fn exit_code(self) -> i32 {
        match self {
            Self::Completed => 0,
            Self::Halted => 10,
            Self::Escalated => 11,
            Self::Compensated => 12,
            Self::Cancelled => 13,
            Self::AwaitingApproval => 8,
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `run_started`: what runs, for whom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStarted {
    /// The SOP's id.
    pub sop_id: String,
    /// The SOP's version.
    pub sop_version: String,
    /// The SOP file, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sop_source: Option<String>,
    /// SHA-256 (hex) of the SOP's canonical document (`Sop::to_json`), so a resume can tell the
    /// SOP was edited without a new version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sop_sha256: Option<String>,
    /// The principal every call of the run is made for (`Agent::"id"`).
    pub principal: String,
    /// What the embedding program chose to record with the run (the CLI records its proposals
    /// file here, so `escepine resume` can find it).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub meta: Value,
}

/// `run_resumed`: where the journal stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResumed {
    /// The sequence number of the run's last entry before the resume.
    pub after_seq: u64,
}

/// `step_started`: the step's identity; the idempotency key every call of it uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepStarted {
    /// The bound tool.
    pub tool: String,
    /// Which visit of the state this is (1 for the first).
    pub visit: u32,
    /// The idempotency key, derived from (run id, state, visit), so a resume reuses it.
    pub idempotency_key: String,
    /// Whether the step requires per-URL authorization.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_url_authorization: bool,
}

/// `step_succeeded`: the call that completed the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSucceeded {
    /// The call id (its intent and outcome entries carry it).
    pub call_id: String,
    /// The hash of the call's outcome entry.
    pub outcome: String,
}

/// What kind of failure ended a step (or an inverse): the SOP's own (no proposal, a
/// constraint, a compensation map), or the kind of the governed call that ended it.
///
/// Recorded as one snake-case word: `planner`, `constraint`, `compensation_map`, or the call
/// kind's own name ([`CallKind::as_str`]: `denied`, `failed`, `timed_out`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The planner produced no proposal.
    Planner,
    /// The proposal violated the step's SOP constraints; nothing ran.
    Constraint,
    /// An inverse's payload could not be built from the compensation map.
    CompensationMap,
    /// The step's governed call ended without an output, as this kind says (never `ok`,
    /// `awaiting_approval`, `ledger_unavailable` or `client_mismatch`: see
    /// [`FailureKind::of_call`]).
    Call(CallKind),
}

impl FailureKind {
    /// The failure kind of a call that ended with `kind`; `None` for a call that succeeded,
    /// could not be recorded (the run stops on a ledger that is unavailable) or waits for
    /// approval (the run pauses). A typed client's mismatch is a failure of the step.
    pub fn of_call(kind: CallKind) -> Option<Self> {
        match kind {
            CallKind::Ok | CallKind::LedgerUnavailable | CallKind::AwaitingApproval => None,
            CallKind::ClientMismatch => Some(Self::Call(CallKind::Failed)),
            other => Some(Self::Call(other)),
        }
    }

    /// The recorded word (see the type).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Planner => "planner",
            Self::Constraint => "constraint",
            Self::CompensationMap => "compensation_map",
            Self::Call(kind) => kind.as_str(),
        }
    }

    /// The kind recorded as `word`, if it is one.
    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Planner, Self::Constraint, Self::CompensationMap]
            .into_iter()
            .chain(CallKind::ALL.into_iter().filter_map(Self::of_call))
            .find(|k| k.as_str() == word)
    }
}

impl Serialize for FailureKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::from_word(&word)
            .ok_or_else(|| serde::de::Error::custom(format!("`{word}` is not a step failure kind")))
    }
}

/// Why a step or an inverse failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepFailure {
    /// The kind of failure.
    pub kind: FailureKind,
    /// What went wrong (scrubbed, as recorded).
    pub message: String,
    /// The call, when one was recorded (intent and outcome entries carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// For a DENY: the determining policies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_ids: Vec<String>,
    /// The hash of the call's outcome entry, for a call that got past its intent (denied,
    /// failed, timed out, output rejected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// `step_failed`: the failure and the `on_failure` that applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepFailed {
    /// The step's `on_failure`: what the failure does to the run.
    pub on_failure: FailureOutcome,
    /// What failed.
    pub failure: StepFailure,
}

/// `transition`: a move along a declared transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Moved {
    /// The state left.
    pub from: String,
    /// The state entered.
    pub to: String,
}

/// `decision`: the branch a decision state took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decided {
    /// The index of the branch taken, or `None` for `otherwise`.
    pub branch: Option<usize>,
    /// The state it leads to.
    pub next: String,
}

/// Why compensation began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompensationReason {
    /// A step whose `on_failure` is `compensate` failed.
    StepFailed,
    /// The run was cancelled.
    Cancelled,
}

/// How a completed step is undone, by its side-effect class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Undo {
    /// Compensatable: call the declared inverse.
    Inverse {
        /// The inverse tool.
        inverse: String,
    },
    /// Supersede: mark the earlier result superseded.
    Supersede,
    /// Read-only: nothing to undo.
    Nothing,
}

/// One completed step in the compensation plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// The step's state.
    pub state: String,
    /// The step's call.
    pub call_id: String,
    /// The step's tool.
    pub tool: String,
    /// The tool's side-effect class.
    pub class: SideEffectClass,
    /// How it is undone.
    #[serde(flatten)]
    pub undo: Undo,
}

/// `compensation_started`: the plan, completed steps in reverse order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompensationStarted {
    /// Why.
    pub reason: CompensationReason,
    /// Completed steps, most recent first.
    pub plan: Vec<PlanItem>,
}

/// `compensated`: a step undone by its inverse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compensated {
    /// The original call.
    pub call_id: String,
    /// The inverse tool.
    pub inverse: String,
    /// The inverse's call.
    pub inverse_call_id: String,
    /// The hash of the inverse's outcome entry.
    pub outcome: String,
}

/// `superseded`: an earlier result marked superseded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Superseded {
    /// The superseded call.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// The hash of its outcome entry (the result now superseded).
    pub outcome: String,
}

/// `compensation_failed`: an inverse that did not complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompensationFailed {
    /// The original call that could not be undone.
    pub call_id: String,
    /// Why.
    pub failure: StepFailure,
}

/// Why a run escalated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EscalationReason {
    /// A step whose `on_failure` is `halt_and_escalate` failed.
    StepFailed,
    /// An inverse failed (or was denied) during compensation.
    CompensationFailed,
}

/// `escalated`: the structured escalation record, also handed to every
/// [`super::EscalationHook`] and broadcast to subscribers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    /// The run.
    pub run_id: String,
    /// The SOP's id.
    pub sop_id: String,
    /// The SOP's version.
    pub sop_version: String,
    /// The principal of the run.
    pub principal: String,
    /// Why.
    pub reason: EscalationReason,
    /// The state whose failure escalated.
    pub state: Option<String>,
    /// The failure (of the step, or of the inverse).
    pub failure: Option<StepFailure>,
    /// Compensations that did not finish, in undo order (empty for a `halt_and_escalate`).
    #[serde(default)]
    pub unfinished: Vec<PlanItem>,
}

/// `run_ended`: the final status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEnded {
    /// The status.
    pub status: RunStatus,
}

/// A recorded SOP event with its typed data.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// See [`RUN_STARTED`].
    RunStarted(RunStarted),
    /// See [`RUN_RESUMED`].
    RunResumed(RunResumed),
    /// See [`STEP_STARTED`].
    StepStarted(StepStarted),
    /// See [`STEP_SUCCEEDED`].
    StepSucceeded(StepSucceeded),
    /// See [`STEP_FAILED`].
    StepFailed(StepFailed),
    /// See [`TRANSITION`].
    Transition(Moved),
    /// See [`DECISION`].
    Decision(Decided),
    /// See [`COMPENSATION_STARTED`].
    CompensationStarted(CompensationStarted),
    /// See [`COMPENSATED`].
    Compensated(Compensated),
    /// See [`SUPERSEDED`].
    Superseded(Superseded),
    /// See [`COMPENSATION_FAILED`].
    CompensationFailed(CompensationFailed),
    /// See [`ESCALATED`].
    Escalated(Escalation),
    /// See [`RUN_ENDED`].
    RunEnded(RunEnded),
}

impl Event {
    /// The event's name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::RunStarted(_) => RUN_STARTED,
            Self::RunResumed(_) => RUN_RESUMED,
            Self::StepStarted(_) => STEP_STARTED,
            Self::StepSucceeded(_) => STEP_SUCCEEDED,
            Self::StepFailed(_) => STEP_FAILED,
            Self::Transition(_) => TRANSITION,
            Self::Decision(_) => DECISION,
            Self::CompensationStarted(_) => COMPENSATION_STARTED,
            Self::Compensated(_) => COMPENSATED,
            Self::Superseded(_) => SUPERSEDED,
            Self::CompensationFailed(_) => COMPENSATION_FAILED,
            Self::Escalated(_) => ESCALATED,
            Self::RunEnded(_) => RUN_ENDED,
        }
    }

    /// The event's data as recorded.
    pub fn data(&self) -> Value {
        let v = match self {
            Self::RunStarted(d) => serde_json::to_value(d),
            Self::RunResumed(d) => serde_json::to_value(d),
            Self::StepStarted(d) => serde_json::to_value(d),
            Self::StepSucceeded(d) => serde_json::to_value(d),
            Self::StepFailed(d) => serde_json::to_value(d),
            Self::Transition(d) => serde_json::to_value(d),
            Self::Decision(d) => serde_json::to_value(d),
            Self::CompensationStarted(d) => serde_json::to_value(d),
            Self::Compensated(d) => serde_json::to_value(d),
            Self::Superseded(d) => serde_json::to_value(d),
            Self::CompensationFailed(d) => serde_json::to_value(d),
            Self::Escalated(d) => serde_json::to_value(d),
            Self::RunEnded(d) => serde_json::to_value(d),
        };
        // Every field is a string, number, list or map: serialisation cannot fail.
        v.unwrap_or(Value::Null)
    }

    /// The transition record of this event, in `run_id` at `state`.
    pub fn to_transition(&self, run_id: &str, state: Option<&str>) -> Transition {
        Transition {
            run_id: run_id.to_string(),
            event: self.name().to_string(),
            state: state.map(str::to_string),
            data: self.data(),
        }
    }

    /// Read a recorded transition. `Ok(None)` for an event name this engine does not know
    /// (written by a later version, say).
    ///
    /// # Errors
    /// The event is known but its data does not have the documented shape.
    pub fn parse(t: &Transition) -> Result<Option<Self>, serde_json::Error> {
        fn d<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, serde_json::Error> {
            T::deserialize(v)
        }
        let data = &t.data;
        Ok(Some(match t.event.as_str() {
            RUN_STARTED => Self::RunStarted(d(data)?),
            RUN_RESUMED => Self::RunResumed(d(data)?),
            STEP_STARTED => Self::StepStarted(d(data)?),
            STEP_SUCCEEDED => Self::StepSucceeded(d(data)?),
            STEP_FAILED => Self::StepFailed(d(data)?),
            TRANSITION => Self::Transition(d(data)?),
            DECISION => Self::Decision(d(data)?),
            COMPENSATION_STARTED => Self::CompensationStarted(d(data)?),
            COMPENSATED => Self::Compensated(d(data)?),
            SUPERSEDED => Self::Superseded(d(data)?),
            COMPENSATION_FAILED => Self::CompensationFailed(d(data)?),
            ESCALATED => Self::Escalated(d(data)?),
            RUN_ENDED => Self::RunEnded(d(data)?),
            _ => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_kind_is_recorded_as_one_word_and_read_back() {
        let words = [
            "planner",
            "constraint",
            "compensation_map",
            "unknown_tool",
            "input_rejected",
            "denied",
            "failed",
            "timed_out",
            "output_rejected",
            "budget_exceeded",
            "rejected",
            "expired",
        ];
        for word in words {
            let kind: FailureKind = serde_json::from_value(serde_json::json!(word)).expect(word);
            assert_eq!(serde_json::to_value(kind).expect("serialises"), word);
        }
        for word in [
            "ok",
            "awaiting_approval",
            "ledger_unavailable",
            "client_mismatch",
            "x",
        ] {
            let err = serde_json::from_value::<FailureKind>(serde_json::json!(word))
                .expect_err(word)
                .to_string();
            assert!(err.contains("not a step failure kind"), "{err}");
        }
    }

    #[test]
    fn a_calls_kind_is_the_steps_failure_kind_by_name() {
        for kind in CallKind::ALL {
            let failure = FailureKind::of_call(kind);
            match kind {
                CallKind::Ok | CallKind::LedgerUnavailable | CallKind::AwaitingApproval => {
                    assert_eq!(failure, None)
                }
                CallKind::ClientMismatch => {
                    assert_eq!(failure, Some(FailureKind::Call(CallKind::Failed)))
                }
                _ => {
                    let name = serde_json::to_value(failure).expect("serialises");
                    assert_eq!(name, kind.as_str(), "{kind}");
                }
            }
        }
    }

    #[test]
    fn events_round_trip_through_transitions() {
        let events = [
            Event::RunStarted(RunStarted {
                sop_id: "s".into(),
                sop_version: "1.0.0".into(),
                sop_source: None,
                sop_sha256: None,
                principal: "Agent::\"a\"".into(),
                meta: Value::Null,
            }),
            Event::CompensationStarted(CompensationStarted {
                reason: CompensationReason::Cancelled,
                plan: vec![PlanItem {
                    state: "w".into(),
                    call_id: "c".into(),
                    tool: "t".into(),
                    class: SideEffectClass::Compensatable,
                    undo: Undo::Inverse {
                        inverse: "u".into(),
                    },
                }],
            }),
            Event::RunEnded(RunEnded {
                status: RunStatus::Compensated,
            }),
        ];
        for e in events {
            let t = e.to_transition("r", Some("x"));
            assert_eq!(Event::parse(&t).unwrap(), Some(e));
        }
        let plan = serde_json::to_value(PlanItem {
            state: "w".into(),
            call_id: "c".into(),
            tool: "t".into(),
            class: SideEffectClass::Supersede,
            undo: Undo::Supersede,
        })
        .unwrap();
        assert_eq!(plan["action"], "supersede");
    }
}
