//! SOP runs: a checked SOP driven through the governed path, every move recorded, runs that
//! survive a crash.
//!
//! An [`Engine`] drives one SOP (the typed model `registry-build` loads and checks) over a
//! [`crate::Runtime`]:
//!
//! - each execution step's payload comes from a [`Planner`] (a closure, a script, an LLM
//!   adapter), is checked against the step's constraints, and goes through
//!   [`crate::Runtime::call`] with the run id, the state and an idempotency key derived from
//!   (run id, state, visit);
//! - every move is an event in the ledger ([`events`]): `run_started`, `step_started`,
//!   `step_succeeded`/`step_failed`, `decision`, `transition`, compensation events, `escalated`,
//!   `run_ended`; the run moves only along declared transitions;
//! - a failing step ends the run by its `on_failure`: `halt` (status `halted`),
//!   `halt_and_escalate` (`escalated`, with an [`Escalation`] record, [`EscalationHook`]s and a
//!   broadcast channel), `compensate` (the saga: completed steps undone in reverse order by their
//!   class, status `compensated`; a failing inverse ends the run `escalated`, listing the
//!   unfinished compensations). A DENY fails the step like any failure — never retried — with
//!   the denying policy ids recorded. Cancelling a run ([`RunHandle::cancel`]) compensates it;
//! - [`Engine::resume`] rebuilds a run from its ledger entries ([`journal`]) and continues from
//!   the last recorded event: a recorded outcome is reused, never re-run; an intent without an
//!   outcome is re-run with the same idempotency key and payload;
//! - a step (or inverse) whose call waits for approval pauses the run: nothing more is recorded,
//!   and the outcome's status is [`RunStatus::AwaitingApproval`] with the call id in
//!   [`RunOutcome::waiting`]. A resume never makes that call again: it asks
//!   [`crate::Runtime::call_state`] — still waiting pauses again, past its expiry it is recorded
//!   expired ([`crate::Runtime::expire`]) and the step fails `expired`, and once an approver
//!   approved or rejected it the recorded outcome is the step's result (`rejected` fails it).
//!
//! Limits, by design:
//! - a resumed step re-runs with the payload its intent recorded, which is scrubbed of secret
//!   values (a payload that contained one would be re-sent with `[REDACTED]` in its place; agents
//!   never hold secrets, so proposals should not either); a step with no intent yet is proposed
//!   again by the planner (nothing ran under its key);
//! - a step whose call timed out or whose output was rejected is not compensated (no output to
//!   build the inverse from); the steps completed before it are;
//! - cancellation stops between steps and while the planner is asked; a call in flight finishes
//!   and is recorded first, then compensated with the rest;
//! - escalation hooks are told at least once (again after a crash between the `escalated` event
//!   and the end of the run);
//! - two processes must not resume the same run at once (keys make a doubled call harmless for
//!   tools that honour them, but the events would be recorded twice).
//!
//! ```no_run
//! # async fn demo(runtime: escepine_runtime::Runtime, sop: escepine_registry::sop::Sop)
//! # -> Result<(), escepine_runtime::sop::SopRunError> {
//! use std::sync::Arc;
//! use escepine_runtime::sop::{Engine, ScriptedPlanner};
//! use serde_json::json;
//!
//! let planner = ScriptedPlanner::new().every("read", json!({ "url": "https://example.com" }));
//! let engine = Engine::new(runtime, sop, Arc::new(planner))?;
//! let outcome = engine.run(&escepine_contract::Principal::agent("researcher")).await?;
//! println!("{} ended {}", outcome.run_id, outcome.status);
//! # Ok(()) }
//! ```

mod constraints;
mod engine;
mod error;
pub mod events;
pub mod journal;
mod planner;
mod saga;

pub use engine::{
    CancelToken, Engine, EngineBuilder, EscalationHook, RunHandle, RunObserver, RunOptions,
    RunOutcome,
};
pub use error::SopRunError;
pub use events::{Escalation, EscalationReason, RunStatus, StepFailure};
pub use journal::Journal;
pub use planner::{FnPlanner, Planner, PlannerError, ScriptedPlanner, StepRequest, TypedPlanner};
