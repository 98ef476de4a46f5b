//! The stages of the governed call path, one job each. [`crate::Runtime::call`] composes them
//! in the one order the design allows; each is testable alone.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use escepine_contract::Principal;
use registry_build::{EgressEntry, ToolRecord};
use serde_json::Value;
use tracing::Instrument;

use crate::authorize::{Authorizer, Decision};
use crate::error::CallError;
use crate::executor::{ExecError, Executor, Invocation};
use crate::gate::{self, SchemaGate};
use crate::ledger::{
    canonical_json, sha256_hex, Attempt, CallResult, Committed, CredentialExemption, Intent,
    Ledger, Outcome, Record,
};
use crate::retry;
use crate::scrub::Scrubber;

/// A registered tool with everything compiled once at start-up.
pub struct LoadedTool {
    /// The registered record.
    pub record: ToolRecord,
    /// The input gate (the record's input schema, compiled).
    pub input_gate: SchemaGate,
    /// The output gate (the record's output schema, compiled).
    pub output_gate: SchemaGate,
    /// Profile egress plus overlay entries.
    pub egress: Vec<EgressEntry>,
    /// The overlay entries in force, as recorded in intents.
    pub overlay: Vec<String>,
}

/// What the caller asked for, beyond the tool and payload.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// The SOP run this call is a step of.
    pub run_id: Option<String>,
    /// The SOP state.
    pub step: Option<String>,
    /// Reuse this idempotency key (a resumed step); a fresh one otherwise.
    pub idempotency_key: Option<String>,
    /// The call this one compensates.
    pub compensates: Option<String>,
    /// Accept the OpenAI-strict dialect: `null` for an optional field means absent.
    pub openai_strict_nulls: bool,
}

/// A call that completed: the gated output and where its evidence is.
#[derive(Debug, Clone)]
pub struct CallReport {
    /// The call id.
    pub call_id: String,
    /// The idempotency key used.
    pub idempotency_key: String,
    /// The output, scrubbed and passed through the output gate.
    pub output: Value,
    /// The intent entry.
    pub intent: Committed,
    /// The outcome entry.
    pub outcome: Committed,
    /// Attempts made.
    pub attempts: u32,
}

/// Stage 1: resolve the tool; an unknown name halts with no call.
pub fn resolve<'a>(
    tools: &'a HashMap<String, LoadedTool>,
    name: &str,
) -> Result<&'a LoadedTool, CallError> {
    tools
        .get(name)
        .ok_or_else(|| CallError::UnknownTool(name.to_string()))
}

/// Stage 2: the input gate. The returned value is the one payload authorization and
/// execution both see.
pub fn input_gate(
    tool: &LoadedTool,
    mut payload: Value,
    opts: &CallOptions,
) -> Result<Value, CallError> {
    if opts.openai_strict_nulls {
        gate::drop_null_optionals(&tool.record.input_schema, &mut payload);
    }
    tool.input_gate
        .check(&payload)
        .map_err(CallError::InputRejected)?;
    Ok(payload)
}

/// Stage 3: Cedar authorization (any evaluation error is a DENY).
pub fn authorize(
    authorizer: &Authorizer,
    principal: &Principal,
    tool: &LoadedTool,
    payload: &Value,
) -> Decision {
    authorizer.authorize(principal, &tool.record.tool_id, payload)
}

/// Identity of one call.
#[derive(Debug, Clone)]
pub struct CallIds {
    /// Unique per call.
    pub call_id: String,
    /// The same across attempts (and across a resume).
    pub idempotency_key: String,
}

impl CallIds {
    /// Fresh ids (random 128-bit hex), reusing a given idempotency key.
    pub fn new(idempotency_key: Option<String>) -> Self {
        let call_id = random_id();
        let idempotency_key = idempotency_key.unwrap_or_else(random_id);
        Self {
            call_id,
            idempotency_key,
        }
    }
}

fn random_id() -> String {
    let bytes: [u8; 16] = rand::random();
    hex::encode(bytes)
}

/// Stage 4: record the intent — committed before anything can execute.
#[allow(clippy::too_many_arguments)]
pub async fn record_intent(
    ledger: &dyn Ledger,
    ids: &CallIds,
    principal: &Principal,
    tool: &LoadedTool,
    payload: &Value,
    decision: &Decision,
    opts: &CallOptions,
    scrubber: &Scrubber,
) -> Result<Committed, CallError> {
    let mut recorded = payload.clone();
    scrubber.value(&mut recorded);
    let canonical = canonical_json(&recorded);
    let intent = Intent {
        call_id: ids.call_id.clone(),
        idempotency_key: ids.idempotency_key.clone(),
        run_id: opts.run_id.clone(),
        step: opts.step.clone(),
        compensates: opts.compensates.clone(),
        tool_id: tool.record.tool_id.clone(),
        tool_version: tool.record.version.to_string(),
        class: tool.record.side_effect_class.as_str().to_string(),
        principal: principal.to_string(),
        payload: recorded,
        payload_hash: sha256_hex(canonical.as_bytes()),
        decision: if decision.allowed { "allow" } else { "deny" }.to_string(),
        policy_ids: decision.policy_ids.clone(),
        reasons: decision.reasons.iter().map(|r| scrubber.text(r)).collect(),
        overlay: tool.overlay.clone(),
        deadline_ms: Some(deadline(&tool.record).as_millis() as u64),
        credential_exemptions: tool
            .record
            .credential_exemptions()
            .into_iter()
            .map(|e| CredentialExemption {
                pointer: e.pointer,
                reason: e.reason,
            })
            .collect(),
    };
    Ok(ledger.append(Record::Intent(intent)).await?)
}

/// The result of stage 5: every attempt, and the last one's output or error.
pub struct Executed {
    /// Each attempt as recorded.
    pub attempts: Vec<Attempt>,
    /// The last attempt's output, or its error.
    pub result: Result<Value, ExecError>,
}

/// The call's overall deadline: every attempt at the tool's timeout plus every retry delay at
/// its longest. Recorded in the intent and enforced by [`execute`].
pub fn deadline(record: &ToolRecord) -> Duration {
    Duration::from_millis(record.retry.deadline_ms(record.timeout_ms))
}

/// The executor bounds each attempt itself (it knows how to kill what it started); the outer
/// bound around an attempt is a backstop this much later.
const BACKSTOP: Duration = Duration::from_millis(500);

/// Stage 5: execute with the per-attempt timeout and the retry budget, within the call's
/// [`deadline`]: no attempt is given more time than the deadline leaves, no retry starts once
/// its delay would reach the deadline, and an attempt running past it is cut off.
#[allow(clippy::too_many_arguments)]
pub async fn execute(
    executor: &dyn Executor,
    tool: &LoadedTool,
    payload: &Value,
    ids: &CallIds,
    secrets: &BTreeMap<String, String>,
    scrubber: &Scrubber,
) -> Executed {
    let record = &tool.record;
    let per_attempt = Duration::from_millis(record.timeout_ms);
    let call_started = Instant::now();
    let deadline = deadline(record);
    let mut attempts = Vec::new();
    let mut attempt = 1u32;
    loop {
        let left = deadline.saturating_sub(call_started.elapsed());
        let timeout = per_attempt.min(left);
        let start_ms = unix_ms();
        let started = Instant::now();
        let inv = Invocation {
            tool: record,
            payload,
            call_id: &ids.call_id,
            idempotency_key: &ids.idempotency_key,
            attempt,
            timeout,
            secrets,
            scrubber,
            egress: &tool.egress,
        };
        let result = match tokio::time::timeout(timeout + BACKSTOP, executor.execute(inv)).await {
            Ok(r) => r,
            Err(_) => Err(ExecError::TimedOut(timeout)),
        };
        let duration_us = started.elapsed().as_micros() as u64;
        let (stderr, refusals) = match &result {
            Ok(e) => (e.stderr.clone(), e.egress_refusals.clone()),
            Err(e) => (e.stderr().to_string(), Vec::new()),
        };
        attempts.push(Attempt {
            start_ms,
            duration_us,
            error_class: result.as_ref().err().map(|e| e.class().to_string()),
            error: result.as_ref().err().map(|e| scrubber.text(&e.to_string())),
            stderr: (!stderr.is_empty()).then(|| scrubber.text(&stderr)),
            egress_refusals: refusals.iter().map(|r| scrubber.text(r)).collect(),
        });
        match result {
            Ok(e) => {
                return Executed {
                    attempts,
                    result: Ok(e.output),
                }
            }
            Err(err) => match retry::next_delay(&record.retry, attempt, &err) {
                Some(delay) if call_started.elapsed() + delay < deadline => {
                    tracing::debug!(attempt, ?delay, error = %scrubber.text(&err.to_string()), "retrying");
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                _ => {
                    return Executed {
                        attempts,
                        result: Err(err),
                    }
                }
            },
        }
    }
}

/// Stage 6: scrub the output, then the output gate — before anything is committed or returned.
pub fn output_gate(
    tool: &LoadedTool,
    executed: Result<Value, ExecError>,
    scrubber: &Scrubber,
) -> Gated {
    match executed {
        Ok(mut output) => {
            scrubber.value(&mut output);
            match tool.output_gate.check(&output) {
                Ok(()) => Gated::Ok(output),
                Err(v) => Gated::Rejected(output, v),
            }
        }
        Err(e) => Gated::Failed(e),
    }
}

/// The output gate's verdict.
pub enum Gated {
    /// The output conforms.
    Ok(Value),
    /// The output violates the schema (kept for its hash, never returned).
    Rejected(Value, Vec<gate::Violation>),
    /// Execution failed.
    Failed(ExecError),
}

/// Stage 7: record the outcome — committed before control returns.
pub async fn record_outcome(
    ledger: &dyn Ledger,
    ids: &CallIds,
    tool: &LoadedTool,
    executed: Executed,
    scrubber: &Scrubber,
) -> Result<(Committed, Result<Value, CallError>, u32), CallError> {
    let attempts = executed.attempts;
    let n = attempts.len() as u32;
    let gated = output_gate(tool, executed.result, scrubber);
    let (result, output_hash, output, error, ret) = match gated {
        Gated::Ok(v) => {
            let hash = sha256_hex(canonical_json(&v).as_bytes());
            (CallResult::Ok, Some(hash), Some(v.clone()), None, Ok(v))
        }
        Gated::Rejected(v, violations) => {
            let hash = sha256_hex(canonical_json(&v).as_bytes());
            let msg = violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            (
                CallResult::OutputRejected,
                Some(hash),
                None,
                Some(format!("output rejected: {msg}")),
                Err(CallError::OutputRejected {
                    call_id: ids.call_id.clone(),
                    violations,
                }),
            )
        }
        Gated::Failed(e) => {
            let msg = scrubber.text(&e.to_string());
            let (res, err) = match e {
                ExecError::TimedOut(_) => (
                    CallResult::TimedOut,
                    CallError::TimedOut {
                        call_id: ids.call_id.clone(),
                        attempts: n,
                        timeout_ms: tool.record.timeout_ms,
                    },
                ),
                _ => (
                    CallResult::Failed,
                    CallError::Failed {
                        call_id: ids.call_id.clone(),
                        attempts: n,
                        last_error: msg.clone(),
                    },
                ),
            };
            (res, None, None, Some(msg), Err(err))
        }
    };
    let outcome = Outcome {
        call_id: ids.call_id.clone(),
        result,
        attempts,
        output_hash,
        output,
        error,
    };
    let committed = ledger.append(Record::Outcome(outcome)).await?;
    Ok((committed, ret, n))
}

/// The outcome of a denied call (nothing ran).
pub async fn record_denied(ledger: &dyn Ledger, ids: &CallIds) -> Result<Committed, CallError> {
    let outcome = Outcome {
        call_id: ids.call_id.clone(),
        result: CallResult::Denied,
        attempts: Vec::new(),
        output_hash: None,
        output: None,
        error: None,
    };
    Ok(ledger.append(Record::Outcome(outcome)).await?)
}

/// Current time in Unix milliseconds.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The tracing span of one call, per the OpenTelemetry GenAI conventions.
pub fn span(tool_id: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = %format!("execute_tool {tool_id}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool_id,
        gen_ai.tool.call.id = %call_id,
        error.r#type = tracing::field::Empty,
        escepine.decision = tracing::field::Empty,
        escepine.policy_ids = tracing::field::Empty,
    )
}

/// Run a future inside a span.
pub fn in_span<F: std::future::Future>(
    span: tracing::Span,
    f: F,
) -> tracing::instrument::Instrumented<F> {
    f.instrument(span)
}
