//! The engine: drives one SOP's runs through the governed path, one recorded event at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use escepine_contract::{FailureOutcome, Principal};
use serde_json::Value;
use tokio::sync::{broadcast, Notify};
use tracing::Instrument as _;

use super::constraints::CompiledSop;
use super::error::SopRunError;
use super::events::{
    Compensated, CompensationFailed, CompensationReason, CompensationStarted, Decided, Escalation,
    EscalationReason, Event, FailureKind, Moved, RunEnded, RunResumed, RunStarted, RunStatus,
    StepFailed, StepFailure, StepStarted, StepSucceeded, Superseded, Undo,
};
use super::journal::{
    inconsistent, inverse_idempotency_key, journal_err, step_idempotency_key, CallEnd, CallInfo,
    Cursor, Journal, RunState,
};
use super::planner::{Planner, StepRequest};
use super::saga;
use crate::approval::ApprovalError;
use crate::error::CallError;
use crate::ids::random_id;
use crate::kind::CallKind;
use crate::report::{CallOutcome, CallReport};
use crate::runtime::Runtime;
use crate::stages::CallOptions;
use escepine_ledger::calls::{state::CallState, CallView};
use escepine_ledger::entry::Committed;
use escepine_ledger::lease::RunLease;
use escepine_ledger::record::{Record, Transition};
use escepine_registry::sop::ExecutionState;
use escepine_registry::sop::Sop;
use escepine_registry::sop::State;

/// Told of every escalation, as it is recorded (at least once: a run resumed after a crash
/// between recording the escalation and ending the run tells its hooks again).
pub trait EscalationHook: Send + Sync {
    /// A run escalated.
    fn escalated(&self, escalation: &Escalation);
}

/// Told of every SOP event as it is committed (the CLI prints them).
pub trait RunObserver: Send + Sync {
    /// `transition` was committed as `entry`.
    fn on_transition(&self, transition: &Transition, entry: &Committed);
}

/// Cancels a run: the engine stops before its next step (or while the planner thinks) and
/// compensates every completed step. A call already in flight finishes and is recorded first.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<CancelInner>);

#[derive(Debug, Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Request cancellation (idempotent).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Whether cancellation was requested.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Resolves once cancellation is requested.
    pub async fn cancelled(&self) {
        let notified = self.0.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.is_cancelled() {
            return;
        }
        notified.await;
    }
}

/// How a run is started.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The run id (a fresh random one when `None`); it must not exist in the ledger.
    pub run_id: Option<String>,
    /// Recorded with `run_started` (the CLI records its proposals file).
    pub meta: Value,
    /// Cancels the run.
    pub cancel: CancelToken,
    /// The caller's W3C trace context, which the run's span continues (its steps' calls are
    /// the span's children).
    pub trace: Option<crate::telemetry::TraceContext>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// The run.
    pub run_id: String,
    /// The final status.
    pub status: RunStatus,
    /// The state the run ended at (the terminal state, or the state that failed).
    pub state: Option<String>,
    /// `{"<state>": {"input": …, "output": …}}` of the completed steps.
    pub data: Value,
    /// The step failure that ended the run, if one did.
    pub failure: Option<StepFailure>,
    /// The escalation record, for an escalated run.
    pub escalation: Option<Escalation>,
    /// For a run that waits ([`RunStatus::AwaitingApproval`]): the call ids waiting for
    /// approval (`escepine approve CALL_ID`); empty otherwise.
    pub waiting: Vec<String>,
}

/// A run started in the background ([`Engine::start`]).
#[derive(Debug)]
pub struct RunHandle {
    run_id: String,
    cancel: CancelToken,
    task: tokio::task::JoinHandle<Result<RunOutcome, SopRunError>>,
}

impl RunHandle {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Cancel the run: it compensates its completed steps and ends `cancelled`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The run's cancel token (to cancel from elsewhere).
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }

    /// Wait for the run to end.
    ///
    /// # Errors
    /// What the run ended with, or [`SopRunError::Aborted`] if its task panicked.
    pub async fn wait(self) -> Result<RunOutcome, SopRunError> {
        self.task
            .await
            .map_err(|e| SopRunError::Aborted(e.to_string()))?
    }
}

/// Builds an [`Engine`].
pub struct EngineBuilder {
    runtime: Runtime,
    sop: Sop,
    planner: Arc<dyn Planner>,
    hooks: Vec<Arc<dyn EscalationHook>>,
    observers: Vec<Arc<dyn RunObserver>>,
}

impl EngineBuilder {
    /// Tell `hook` of every escalation.
    pub fn escalation_hook(mut self, hook: Arc<dyn EscalationHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Tell `observer` of every event as it is committed.
    pub fn observer(mut self, observer: Arc<dyn RunObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Check the SOP against the runtime's registry and compile its constraints and branches.
    ///
    /// # Errors
    /// [`SopRunError::InvalidSop`]: an undefined state, an unknown tool, an outcome the tool
    /// does not allow, a schema that does not compile.
    pub fn build(self) -> Result<Engine, SopRunError> {
        let compiled = CompiledSop::compile(&self.sop, self.runtime.registry())?;
        let (escalations, _) = broadcast::channel(64);
        Ok(Engine {
            inner: Arc::new(Inner {
                runtime: self.runtime,
                sop: self.sop,
                compiled,
                planner: self.planner,
                hooks: self.hooks,
                observers: self.observers,
                escalations,
            }),
        })
    }
}

struct Inner {
    runtime: Runtime,
    sop: Sop,
    compiled: CompiledSop,
    planner: Arc<dyn Planner>,
    hooks: Vec<Arc<dyn EscalationHook>>,
    observers: Vec<Arc<dyn RunObserver>>,
    escalations: broadcast::Sender<Escalation>,
}

/// Drives runs of one SOP over a [`Runtime`]: every step a governed call, every move a recorded
/// event, only along declared transitions. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Where a governed call of the run stands.
enum Called {
    /// It ended: the call id, or why the step (or inverse) failed.
    Ended(Result<String, StepFailure>),
    /// It waits for approval (this call id); the run pauses, nothing more is recorded.
    Waiting(String),
}

/// A proposal, or why there is none.
enum Proposal {
    Payload(Value),
    Failed(StepFailure),
    Cancelled,
}

impl Engine {
    /// Start building an engine for `sop` over `runtime`, its payloads proposed by `planner`.
    pub fn builder(runtime: Runtime, sop: Sop, planner: Arc<dyn Planner>) -> EngineBuilder {
        EngineBuilder {
            runtime,
            sop,
            planner,
            hooks: Vec::new(),
            observers: Vec::new(),
        }
    }

    /// An engine without hooks or observers.
    ///
    /// # Errors
    /// See [`EngineBuilder::build`].
    pub fn new(runtime: Runtime, sop: Sop, planner: Arc<dyn Planner>) -> Result<Self, SopRunError> {
        Self::builder(runtime, sop, planner).build()
    }

    /// The SOP this engine drives.
    pub fn sop(&self) -> &Sop {
        &self.inner.sop
    }

    /// The runtime every call goes through.
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// Receive every escalation recorded from now on.
    pub fn subscribe_escalations(&self) -> broadcast::Receiver<Escalation> {
        self.inner.escalations.subscribe()
    }

    /// Run the SOP to its end for `principal`.
    ///
    /// # Errors
    /// See [`SopRunError`]; a failing step is not an error but an outcome.
    pub async fn run(&self, principal: &Principal) -> Result<RunOutcome, SopRunError> {
        self.run_with(principal, RunOptions::default()).await
    }

    /// Run the SOP to its end for `principal`, with options.
    ///
    /// # Errors
    /// See [`SopRunError`].
    pub async fn run_with(
        &self,
        principal: &Principal,
        options: RunOptions,
    ) -> Result<RunOutcome, SopRunError> {
        // A fresh id is 128 random bits; only an id the caller chose can collide (and only then
        // is the ledger read).
        let run_id = match options.run_id.clone() {
            Some(id) => {
                let ledger = self.inner.runtime.ledger();
                if !ledger.entries_for_run(&id)?.is_empty() {
                    return Err(SopRunError::DuplicateRun(id));
                }
                id
            }
            None => random_id(),
        };
        // Held while this engine drives the run: nobody else drives it meanwhile.
        let lease = self.inner.runtime.ledger().lease_run(&run_id)?;
        let sop = &self.inner.sop;
        let source = sop.source.display().to_string();
        let started = RunStarted {
            sop_id: sop.sop_id.clone(),
            sop_version: sop.version.to_string(),
            sop_source: (!source.is_empty()).then_some(source),
            sop_sha256: Some(sop_digest(sop)),
            principal: principal.to_string(),
            meta: options.meta,
        };
        let span = crate::telemetry::sop_span(&sop.sop_id, &run_id);
        if let Some(trace) = &options.trace {
            trace.adopt(&span);
        }
        let mut st = RunState::new(&run_id, principal.clone());
        let run = async {
            self.record(&mut st, Some(&sop.start), Event::RunStarted(started))
                .await?;
            self.drive(&mut st, &options.cancel, &lease).await
        };
        traced_run(&span, run.instrument(span.clone()).await)
    }

    /// Start a run in the background (on the current tokio runtime).
    pub fn start(&self, principal: Principal, mut options: RunOptions) -> RunHandle {
        let run_id = options.run_id.clone().unwrap_or_else(random_id);
        options.run_id = Some(run_id.clone());
        let cancel = options.cancel.clone();
        let engine = self.clone();
        let task = tokio::spawn(async move { engine.run_with(&principal, options).await });
        RunHandle {
            run_id,
            cancel,
            task,
        }
    }

    /// Continue run `run_id` from its last recorded event (see [`super::journal`]).
    ///
    /// A step with a recorded outcome never runs again; a step with an intent but no outcome
    /// runs again with the same idempotency key and payload; compensation resumes where it
    /// stopped. A run that already ended returns its outcome and records nothing. A run another
    /// engine is driving (in this process, or in another one on the same ledger file) is
    /// refused: its lease is held (see [`escepine_ledger::lease`]).
    ///
    /// # Errors
    /// See [`SopRunError`].
    pub async fn resume(&self, run_id: &str) -> Result<RunOutcome, SopRunError> {
        self.resume_with(run_id, CancelToken::new()).await
    }

    /// [`Engine::resume`] with a cancel token.
    ///
    /// # Errors
    /// See [`SopRunError`].
    pub async fn resume_with(
        &self,
        run_id: &str,
        cancel: CancelToken,
    ) -> Result<RunOutcome, SopRunError> {
        // Taken before the journal is read, so that no other driver appends after the read.
        let lease = self.inner.runtime.ledger().lease_run(run_id)?;
        let journal = Journal::load(&**self.inner.runtime.ledger(), run_id)?;
        // Every entry the resume acts on (the payloads it re-runs, the events that say where the
        // run stands, the inputs and outputs compensation is built from) is what was committed.
        escepine_ledger::trust::check_all_in_ledger(
            &**self.inner.runtime.ledger(),
            &journal.entries,
            self.inner.runtime.trust(),
        )
        .map_err(|source| SopRunError::Untrusted {
            run_id: run_id.to_string(),
            source: Box::new(source),
        })?;
        let sop = &self.inner.sop;
        let recorded = format!("{}@{}", journal.started.sop_id, journal.started.sop_version);
        let engine = format!("{}@{}", sop.sop_id, sop.version);
        let digest = sop_digest(sop);
        let edited = journal
            .started
            .sop_sha256
            .as_ref()
            .is_some_and(|d| *d != digest);
        if recorded != engine || edited {
            let (recorded, engine) = if edited {
                (
                    format!(
                        "{recorded} (sha256 {})",
                        journal.started.sop_sha256.clone().unwrap_or_default()
                    ),
                    format!("{engine} (sha256 {digest}), edited since the run started"),
                )
            } else {
                (recorded, engine)
            };
            return Err(SopRunError::SopMismatch {
                run_id: run_id.to_string(),
                recorded,
                engine,
            });
        }
        let mut st = RunState::replay(&journal)?;
        if let Cursor::Ended(_) = st.cursor {
            return Ok(self.outcome(&st));
        }
        let span = crate::telemetry::sop_span(&sop.sop_id, run_id);
        let run = async {
            self.record(
                &mut st,
                None,
                Event::RunResumed(RunResumed {
                    after_seq: journal.last_seq(),
                }),
            )
            .await?;
            self.drive(&mut st, &cancel, &lease).await
        };
        traced_run(&span, run.instrument(span.clone()).await)
    }

    /// [`Engine::resume`] in the background.
    pub fn start_resume(&self, run_id: String, cancel: CancelToken) -> RunHandle {
        let engine = self.clone();
        let id = run_id.clone();
        let token = cancel.clone();
        let task = tokio::spawn(async move { engine.resume_with(&id, token).await });
        RunHandle {
            run_id,
            cancel,
            task,
        }
    }

    /// The loop: one recorded event per turn, chosen by where the run stands.
    ///
    /// The lease is checked before each turn: a driver whose lease ended (its database session
    /// lost while this process lives) stops with [`LedgerError::LeaseLost`](escepine_ledger::error::LedgerError::LeaseLost) before recording or
    /// running anything more; the store refuses such a driver's appends to the run as well.
    async fn drive(
        &self,
        st: &mut RunState,
        cancel: &CancelToken,
        lease: &RunLease,
    ) -> Result<RunOutcome, SopRunError> {
        loop {
            lease.check()?;
            let cursor = st.cursor.clone();
            let between_steps = matches!(
                cursor,
                Cursor::Enter(_) | Cursor::Succeeded(_) | Cursor::Decided { .. }
            );
            if between_steps && cancel.is_cancelled() {
                self.begin_compensation(st, CompensationReason::Cancelled)
                    .await?;
                continue;
            }
            match cursor {
                Cursor::New => {
                    return Err(inconsistent(&st.run_id, "the run has not started"));
                }
                Cursor::Enter(name) => self.enter(st, &name).await?,
                Cursor::InStep { state, visit, key } => {
                    if let Some(call_id) = self.step(st, &state, visit, key, cancel).await? {
                        return Ok(self.waiting(st, call_id));
                    }
                }
                Cursor::Succeeded(state) => {
                    let next = self.execution(st, &state)?.next.clone();
                    self.transition(st, state, next).await?;
                }
                Cursor::Decided { from, to } => self.transition(st, from, to).await?,
                Cursor::Failed { state, failure } => match self.execution(st, &state)?.on_failure {
                    FailureOutcome::Halt => {
                        self.end(st, RunStatus::Halted).await?;
                    }
                    FailureOutcome::HaltAndEscalate => {
                        self.escalate(st, EscalationReason::StepFailed, &state, failure)
                            .await?;
                    }
                    FailureOutcome::Compensate => {
                        self.begin_compensation(st, CompensationReason::StepFailed)
                            .await?;
                    }
                },
                Cursor::Compensating => {
                    if let Some(call_id) = self.compensate_next(st).await? {
                        return Ok(self.waiting(st, call_id));
                    }
                }
                Cursor::CompensationFailed { state, failure } => {
                    self.escalate(st, EscalationReason::CompensationFailed, &state, failure)
                        .await?;
                }
                Cursor::Escalated => {
                    if !st.notified {
                        if let Some(e) = &st.escalation {
                            self.notify(e);
                        }
                        st.notified = true;
                    }
                    self.end(st, RunStatus::Escalated).await?;
                }
                Cursor::Ended(_) => return Ok(self.outcome(st)),
            }
        }
    }

    /// Move along a declared transition (and only along one).
    async fn transition(
        &self,
        st: &mut RunState,
        from: String,
        to: String,
    ) -> Result<(), SopRunError> {
        if !self.inner.sop.is_transition(&from, &to) {
            return Err(inconsistent(
                &st.run_id,
                format!("`{from}` → `{to}` is not a declared transition"),
            ));
        }
        let at = to.clone();
        self.record(st, Some(&at), Event::Transition(Moved { from, to }))
            .await
    }

    /// Enter a state: end at a terminal, decide at a decision, start a step at an execution.
    async fn enter(&self, st: &mut RunState, name: &str) -> Result<(), SopRunError> {
        let sop = &self.inner.sop;
        let state = sop
            .states
            .get(name)
            .ok_or_else(|| inconsistent(&st.run_id, format!("undefined state `{name}`")))?;
        match state {
            State::Terminal => self.end(st, RunStatus::Completed).await,
            State::Decision(d) => {
                let (branch, next) = self.inner.compiled.decide(name, d, &st.data_value());
                self.record(st, Some(name), Event::Decision(Decided { branch, next }))
                    .await
            }
            State::Execution(e) => {
                let visit = st.visits(name) + 1;
                let started = StepStarted {
                    tool: e.tool.clone(),
                    visit,
                    idempotency_key: step_idempotency_key(&st.run_id, name, visit),
                    per_url_authorization: e.require_per_url_authorization,
                };
                self.record(st, Some(name), Event::StepStarted(started))
                    .await
            }
        }
    }

    /// Run a started step: reuse its recorded outcome, re-run its unfinished call with the same
    /// key and payload, or ask the planner and call. `Some(call id)` when the step's call waits
    /// for approval: nothing is recorded and the run pauses.
    async fn step(
        &self,
        st: &mut RunState,
        state: &str,
        visit: u32,
        key: String,
        cancel: &CancelToken,
    ) -> Result<Option<String>, SopRunError> {
        let exec = self.execution(st, state)?.clone();
        let prior = st.call_for_key(&key).cloned();
        let called = match prior {
            Some(call) => self.again(st, call, state, None).await?,
            None => {
                let proposal = if cancel.is_cancelled() {
                    Proposal::Cancelled
                } else {
                    self.propose(st, state, &exec, visit, cancel).await
                };
                match proposal {
                    Proposal::Cancelled => {
                        self.begin_compensation(st, CompensationReason::Cancelled)
                            .await?;
                        return Ok(None);
                    }
                    Proposal::Failed(f) => Called::Ended(Err(f)),
                    Proposal::Payload(p) => self.call(st, &exec.tool, p, key, state, None).await?,
                }
            }
        };
        let result = match called {
            Called::Ended(result) => result,
            Called::Waiting(call_id) => return Ok(Some(call_id)),
        };
        match result {
            Ok(call_id) => {
                let outcome = st
                    .call(&call_id)
                    .and_then(|c| c.end.as_ref())
                    .and_then(|e| e.outcome_hash.clone())
                    .unwrap_or_default();
                let ok = StepSucceeded { call_id, outcome };
                self.record(st, Some(state), Event::StepSucceeded(ok))
                    .await?;
            }
            Err(failure) => {
                let failed = StepFailed {
                    on_failure: exec.on_failure,
                    failure,
                };
                self.record(st, Some(state), Event::StepFailed(failed))
                    .await?;
            }
        }
        Ok(None)
    }

    /// A call of the run that has an intent already: its recorded end, or — for a call that
    /// waited for approval — its state now, or (any other call without an outcome) the call
    /// made again with the same key and recorded payload.
    async fn again(
        &self,
        st: &mut RunState,
        call: CallInfo,
        step: &str,
        compensates: Option<String>,
    ) -> Result<Called, SopRunError> {
        if let Some(recorded) = call.result() {
            return Ok(Called::Ended(recorded));
        }
        if call.awaits_approval {
            return self.approval_state(st, &call.call_id).await;
        }
        self.call(st, &call.tool, call.input, call.key, step, compensates)
            .await
    }

    /// A call that waited for approval and has no outcome in the journal: still waiting (or
    /// approved and running in the approver's runtime), past its expiry (recorded expired now),
    /// or ended since the journal was read.
    async fn approval_state(
        &self,
        st: &mut RunState,
        call_id: &str,
    ) -> Result<Called, SopRunError> {
        let runtime = &self.inner.runtime;
        let run_id = st.run_id.clone();
        let approval_err = |source| SopRunError::Approval {
            run_id: run_id.clone(),
            call_id: call_id.to_string(),
            source,
        };
        // Twice at most: an expiry raced by an approver's decision is read again.
        for _ in 0..2 {
            match runtime.call_state(call_id)? {
                // Decided without an outcome yet: an approved call runs in the approver's
                // runtime; the run waits for its outcome as for the decision.
                CallState::Waiting(_) | CallState::Decided(_) => {
                    return Ok(Called::Waiting(call_id.to_string()))
                }
                CallState::Expired(_) => match runtime.expire(call_id).await {
                    Ok(Some(report)) => {
                        if let Some(end) = call_end(&report) {
                            st.end_call(call_id, end);
                        }
                    }
                    Ok(None) => return Ok(Called::Waiting(call_id.to_string())),
                    Err(ApprovalError::AlreadyDecided { .. }) => continue,
                    Err(ApprovalError::Ledger(e)) => return Err(e.into()),
                    Err(e) => return Err(approval_err(e)),
                },
                CallState::Ended(_) => {
                    // Recorded after the journal was read: read the outcome entry for its hash.
                    let ledger = &**runtime.ledger();
                    let call = CallView::new(ledger).call(call_id)?;
                    let Some(outcome) = call.and_then(|c| c.outcome) else {
                        return Err(inconsistent(
                            &st.run_id,
                            format!(
                                "the call `{call_id}` ended, but the ledger holds no outcome of it"
                            ),
                        ));
                    };
                    escepine_ledger::trust::check_in_ledger(
                        ledger,
                        &outcome.entry(),
                        runtime.trust(),
                    )
                    .map_err(|source| SopRunError::Untrusted {
                        run_id: st.run_id.clone(),
                        source: Box::new(source),
                    })?;
                    let end = CallEnd {
                        result: outcome.record.result,
                        output: outcome.record.output,
                        error: outcome.record.error,
                        outcome_hash: Some(outcome.hash),
                    };
                    st.end_call(call_id, end);
                }
                CallState::Unknown | CallState::InFlight => {
                    return Err(inconsistent(
                        &st.run_id,
                        format!("the ledger holds no call `{call_id}` waiting for approval"),
                    ))
                }
            }
            let result = st.call(call_id).and_then(CallInfo::result);
            if let Some(result) = result {
                return Ok(Called::Ended(result));
            }
        }
        Err(inconsistent(
            &st.run_id,
            format!("the call `{call_id}` was decided, but its outcome cannot be read"),
        ))
    }

    /// Ask the planner (racing cancellation) and check the step's constraints.
    async fn propose(
        &self,
        st: &RunState,
        state: &str,
        exec: &ExecutionState,
        visit: u32,
        cancel: &CancelToken,
    ) -> Proposal {
        let inner = &*self.inner;
        let Some(tool) = inner.runtime.registry().get(&exec.tool) else {
            return Proposal::Failed(StepFailure {
                kind: FailureKind::Call(CallKind::UnknownTool),
                message: format!("unknown tool `{}`: not in the registry", exec.tool),
                call_id: None,
                policy_ids: Vec::new(),
                outcome: None,
            });
        };
        let data = st.data_value();
        let request = StepRequest {
            run_id: &st.run_id,
            sop: &inner.sop,
            state,
            step: exec,
            tool,
            visit,
            data: &data,
        };
        let proposed = tokio::select! {
            biased;
            () = cancel.cancelled() => return Proposal::Cancelled,
            p = inner.planner.propose(&request) => p,
        };
        let failure = |kind, message| {
            Proposal::Failed(StepFailure {
                kind,
                message,
                call_id: None,
                policy_ids: Vec::new(),
                outcome: None,
            })
        };
        match proposed {
            Err(e) => failure(FailureKind::Planner, e.to_string()),
            Ok(payload) => match inner.compiled.check(state, &payload) {
                Ok(()) => Proposal::Payload(payload),
                Err(v) => failure(
                    FailureKind::Constraint,
                    v.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            },
        }
    }

    /// One governed call of the run; the call is remembered in the run's state.
    async fn call(
        &self,
        st: &mut RunState,
        tool: &str,
        payload: Value,
        key: String,
        step: &str,
        compensates: Option<String>,
    ) -> Result<Called, SopRunError> {
        let runtime = &self.inner.runtime;
        let class = runtime
            .registry()
            .get(tool)
            .map(|r| r.side_effect_class())
            .unwrap_or(escepine_contract::SideEffectClass::ReadOnly);
        let opts = CallOptions {
            run_id: Some(st.run_id.clone()),
            step: Some(step.to_string()),
            idempotency_key: Some(key.clone()),
            compensates,
            ..CallOptions::default()
        };
        let report = match runtime
            .call(&st.principal, tool, payload.clone(), opts)
            .await
        {
            Ok(report) => report,
            Err(CallError::LedgerUnavailable(e)) => return Err(e.into()),
            Err(refused) => {
                // Refused before its intent: nothing recorded, no call to remember.
                return Ok(Called::Ended(Err(StepFailure {
                    kind: FailureKind::of_call(refused.kind())
                        .unwrap_or(FailureKind::Call(CallKind::Failed)),
                    message: refused.to_string(),
                    call_id: None,
                    policy_ids: Vec::new(),
                    outcome: None,
                })));
            }
        };
        let waits = matches!(report.outcome(), CallOutcome::AwaitingApproval { .. });
        let (policy_ids, reasons) = match report.outcome() {
            CallOutcome::Denied {
                policy_ids,
                reasons,
            } => (policy_ids.clone(), reasons.clone()),
            _ => (Vec::new(), Vec::new()),
        };
        let info = CallInfo {
            call_id: report.call_id().to_string(),
            key,
            tool: tool.to_string(),
            class,
            input: payload,
            policy_ids,
            reasons,
            awaits_approval: waits,
            end: call_end(&report),
        };
        // The step's result is read from the call as remembered, as on a resume.
        let result = info.result();
        st.add_call(info);
        let call_id = report.call_id().to_string();
        Ok(match result {
            Some(result) => Called::Ended(result),
            None if waits => Called::Waiting(call_id),
            None => Called::Ended(Ok(call_id)),
        })
    }

    /// Record the compensation plan (completed steps, most recent first).
    async fn begin_compensation(
        &self,
        st: &mut RunState,
        reason: CompensationReason,
    ) -> Result<(), SopRunError> {
        let plan = saga::plan(&st.completed, self.inner.runtime.registry());
        let at = st.at.clone();
        self.record(
            st,
            at.as_deref(),
            Event::CompensationStarted(CompensationStarted { reason, plan }),
        )
        .await
    }

    /// Undo the next item of the plan, or end the run when none is left. `Some(call id)` when
    /// the inverse's call waits for approval: nothing is recorded and the run pauses.
    async fn compensate_next(&self, st: &mut RunState) -> Result<Option<String>, SopRunError> {
        let Some(comp) = &st.compensation else {
            return Err(inconsistent(&st.run_id, "compensating without a plan"));
        };
        let reason = comp.reason;
        let Some(item) = comp.next().cloned() else {
            let status = match reason {
                CompensationReason::StepFailed => RunStatus::Compensated,
                CompensationReason::Cancelled => RunStatus::Cancelled,
            };
            self.end(st, status).await?;
            return Ok(None);
        };
        let done = st
            .completed
            .iter()
            .find(|d| d.call_id == item.call_id)
            .cloned()
            .ok_or_else(|| {
                inconsistent(
                    &st.run_id,
                    format!("the plan names the unknown step call `{}`", item.call_id),
                )
            })?;
        match &item.undo {
            Undo::Nothing => Ok(None),
            Undo::Supersede => {
                let s = Superseded {
                    call_id: done.call_id,
                    tool: done.tool,
                    outcome: done.outcome_hash,
                };
                self.record(st, Some(&item.state), Event::Superseded(s))
                    .await?;
                Ok(None)
            }
            Undo::Inverse { inverse } => {
                let key = inverse_idempotency_key(&st.run_id, &done.call_id);
                let prior = st.call_for_key(&key).cloned();
                let called = match prior {
                    Some(call) => {
                        self.again(st, call, &item.state, Some(done.call_id.clone()))
                            .await?
                    }
                    None => {
                        let spec = self
                            .inner
                            .runtime
                            .registry()
                            .get(&done.tool)
                            .and_then(|r| r.compensation())
                            .filter(|c| &c.tool == inverse);
                        let payload = match spec {
                            Some(spec) => saga::inverse_payload(spec, &done),
                            None => Err(format!(
                                "the tool `{}` no longer declares the inverse `{inverse}`",
                                done.tool
                            )),
                        };
                        match payload {
                            Ok(p) => {
                                self.call(
                                    st,
                                    inverse,
                                    p,
                                    key,
                                    &item.state,
                                    Some(done.call_id.clone()),
                                )
                                .await?
                            }
                            Err(message) => Called::Ended(Err(StepFailure {
                                kind: FailureKind::CompensationMap,
                                message,
                                call_id: None,
                                policy_ids: Vec::new(),
                                outcome: None,
                            })),
                        }
                    }
                };
                let result = match called {
                    Called::Ended(result) => result,
                    Called::Waiting(call_id) => return Ok(Some(call_id)),
                };
                match result {
                    Ok(inverse_call_id) => {
                        let outcome = st
                            .call(&inverse_call_id)
                            .and_then(|c| c.end.as_ref())
                            .and_then(|e| e.outcome_hash.clone())
                            .unwrap_or_default();
                        let c = Compensated {
                            call_id: done.call_id,
                            inverse: inverse.clone(),
                            inverse_call_id,
                            outcome,
                        };
                        self.record(st, Some(&item.state), Event::Compensated(c))
                            .await?;
                    }
                    Err(failure) => {
                        let f = CompensationFailed {
                            call_id: done.call_id,
                            failure,
                        };
                        self.record(st, Some(&item.state), Event::CompensationFailed(f))
                            .await?;
                    }
                }
                Ok(None)
            }
        }
    }

    /// Record the escalation and tell the hooks.
    async fn escalate(
        &self,
        st: &mut RunState,
        reason: EscalationReason,
        state: &str,
        failure: StepFailure,
    ) -> Result<(), SopRunError> {
        let sop = &self.inner.sop;
        let escalation = Escalation {
            run_id: st.run_id.clone(),
            sop_id: sop.sop_id.clone(),
            sop_version: sop.version.to_string(),
            principal: st.principal.to_string(),
            reason,
            state: Some(state.to_string()),
            failure: Some(failure),
            unfinished: st
                .compensation
                .as_ref()
                .map(|c| c.unfinished())
                .unwrap_or_default(),
        };
        self.record(st, Some(state), Event::Escalated(escalation.clone()))
            .await?;
        self.notify(&escalation);
        st.notified = true;
        Ok(())
    }

    fn notify(&self, escalation: &Escalation) {
        for hook in &self.inner.hooks {
            hook.escalated(escalation);
        }
        // No subscriber is not an error.
        let _ = self.inner.escalations.send(escalation.clone());
    }

    async fn end(&self, st: &mut RunState, status: RunStatus) -> Result<(), SopRunError> {
        let at = st.at.clone();
        self.record(st, at.as_deref(), Event::RunEnded(RunEnded { status }))
            .await
    }

    /// Commit one event, advance the run by it, tell the observers.
    async fn record(
        &self,
        st: &mut RunState,
        state: Option<&str>,
        event: Event,
    ) -> Result<(), SopRunError> {
        let transition = event.to_transition(&st.run_id, state);
        let committed = self
            .inner
            .runtime
            .ledger()
            .append(Record::Transition(transition.clone()))
            .await?;
        st.apply(state, &event)
            .map_err(|why| journal_err(&st.run_id, committed.seq, why))?;
        for o in &self.inner.observers {
            o.on_transition(&transition, &committed);
        }
        Ok(())
    }

    fn execution<'a>(
        &'a self,
        st: &RunState,
        state: &str,
    ) -> Result<&'a ExecutionState, SopRunError> {
        match self.inner.sop.states.get(state) {
            Some(State::Execution(e)) => Ok(e),
            _ => Err(inconsistent(
                &st.run_id,
                format!("`{state}` is not an execution state of the SOP"),
            )),
        }
    }

    fn outcome(&self, st: &RunState) -> RunOutcome {
        let status = match st.cursor {
            Cursor::Ended(s) => s,
            _ => RunStatus::Halted,
        };
        RunOutcome {
            run_id: st.run_id.clone(),
            status,
            state: st.at.clone(),
            data: st.data_value(),
            failure: st.failure.clone(),
            escalation: st.escalation.clone(),
            waiting: Vec::new(),
        }
    }

    /// The outcome of a run paused on `call_id`, which waits for approval.
    fn waiting(&self, st: &RunState, call_id: String) -> RunOutcome {
        RunOutcome {
            status: RunStatus::AwaitingApproval,
            waiting: vec![call_id],
            ..self.outcome(st)
        }
    }
}

/// How a call ended, from its report; `None` for a call that waits for approval.
fn call_end(report: &CallReport) -> Option<CallEnd> {
    Some(CallEnd {
        result: report.outcome().result()?,
        output: report.output().cloned(),
        error: (report.kind() != CallKind::Ok).then(|| report.to_string()),
        outcome_hash: report.outcome_entry().map(|c| c.hash.clone()),
    })
}

/// SHA-256 of the SOP's canonical document.
fn sop_digest(sop: &Sop) -> String {
    escepine_ledger::entry::sha256_hex(escepine_ledger::entry::canonical_json(&sop.to_json()))
}

/// How a run ended, in its span: `error.type` is its status unless it completed (or paused for
/// an approval), or the engine's error.
fn traced_run(
    span: &tracing::Span,
    ended: Result<RunOutcome, SopRunError>,
) -> Result<RunOutcome, SopRunError> {
    let error = match &ended {
        Ok(o) if matches!(o.status, RunStatus::Completed | RunStatus::AwaitingApproval) => None,
        Ok(o) => Some(o.status.as_str()),
        Err(_) => Some("sop_error"),
    };
    if let Some(error) = error {
        crate::telemetry::record_error(span, error);
    }
    ended
}
