//! The governed call path: its stages, one job each, and [`run`], the one place they are
//! composed.
//!
//! # The order
//!
//! Every call, no exceptions, in this order and no other:
//!
//! 1. [`resolve`]: the tool, by name (unknown → refused, nothing recorded). The
//!    [`CallContext`] is built from it: ids, principal, options, the tool, its secrets and
//!    their scrubber.
//! 2. [`input::gate`]: the payload against the input schema (deviation → refused).
//! 3. [`authorize::authorize`]: Cedar, with the state of the call's flow (`crate::flows`)
//!    as `context.flow`; a DENY is a decision, recorded, never retried.
//!    [`authorize::shadow`] evaluates the candidate policy set, if any, on the very same
//!    request; it is never enforced, and only a disagreement is kept, for the intent.
//!    [`authorize::egress`] then fixes what the call's sandbox may reach (for a profile with
//!    `authorized-urls`, the origins of the URLs Cedar allowed).
//! 4. [`intent::record`]: the intent is committed before anything can execute (a ledger that
//!    cannot commit → refused). From here on every call ends with a recorded outcome.
//!    A call allowed only with approval ([`wait`]) stops here, waiting: its intent says so, and
//!    its outcome is recorded once an approver decides (`crate::approval`, which takes an
//!    approved call through [`approved`]: the gate and Cedar again, then step 5 on).
//!    [`authorize::admit`] then lets an allowed call on; a denied one ends here.
//! 5. [`budget::reserve`]: an allowed call takes a use of every budget that applies to its
//!    principal and tool, counted in the ledger's store; a budget without room ends the call
//!    (`budget_exceeded`, nothing run, never retried). A denied call uses no budget.
//! 6. [`execute::execute`]: attempts in the executor, each bounded by the [`execute::Timeout`]
//!    wrapper, repeated as the [`retry::Retry`] policy decides, within the call's deadline.
//!    [`budget::release`] then ends the call's budget uses.
//! 7. [`output::gate`]: the output scrubbed, then checked against the output schema.
//! 8. [`outcome::record`]: the outcome is committed before control returns; for a call that
//!    ran, it records what the call brought into its flow.
//!
//! # One shape
//!
//! Each stage is a function of the call context, the runtime part it uses, and the previous
//! stage's product: `stage(cx, part, input) -> Result<output, stop>`. Before the intent a stop
//! is a [`CallError`] (nothing was recorded); after it, an [`Ended`] call, whose outcome the
//! last stage records.

pub(crate) mod authorize;
pub(crate) mod budget;
pub(crate) mod context;
pub(crate) mod ended;
pub(crate) mod execute;
pub(crate) mod input;
pub(crate) mod intent;
pub(crate) mod outcome;
pub(crate) mod output;
pub(crate) mod resolve;
pub(crate) mod retry;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod wait;

use std::collections::HashMap;
use std::time::Duration;

use escepine_contract::Principal;
use serde_json::Value;

use crate::budget::table::BudgetTable;
use crate::error::CallError;
use crate::executor::Executor;
use crate::report::CallReport;
use crate::secrets::SecretSource;
use crate::telemetry::{in_stage, Stage};
use escepine_ledger::entry::Committed;
use escepine_ledger::store::Ledger;
use escepine_ledger::trust::Trust;
use escepine_policy::authorize::Authorizer;
use escepine_policy::authorize::Decision;

pub use context::CallOptions;
pub(crate) use context::{CallContext, CallIds, LoadedTool};
pub(crate) use resolve::resolve;

/// The runtime's parts the stages use.
pub(crate) struct Parts<'a> {
    /// The registered tools.
    pub(crate) tools: &'a HashMap<String, LoadedTool>,
    /// Cedar.
    pub(crate) authorizer: &'a Authorizer,
    /// The shadow (candidate) policy set: evaluated beside the enforced one, never enforced.
    pub(crate) shadow: Option<&'a Authorizer>,
    /// The budgets, compiled per tool.
    pub(crate) budgets: &'a BudgetTable,
    /// The evidence ledger (and the store of budget uses).
    pub(crate) ledger: &'a dyn Ledger,
    /// What runs each attempt.
    pub(crate) executor: &'a dyn Executor,
    /// What runs each attempt of a remote (`mcp-http`) tool.
    pub(crate) remote: &'a dyn Executor,
    /// Where secret values come from.
    pub(crate) secrets: &'a dyn SecretSource,
    /// How long a call allowed only with approval waits.
    pub(crate) approval_ttl: Duration,
    /// What entries read back from the ledger are checked against before they are acted on.
    pub(crate) trust: &'a Trust,
    /// The flows folded from the ledger so far.
    pub(crate) flows: &'a crate::flows::FlowBook,
}

/// One governed call: the stages in the order above. The span of the call (see [`span`]) is
/// the caller's.
pub(crate) async fn run(
    parts: &Parts<'_>,
    principal: &Principal,
    name: &str,
    payload: Value,
    opts: &CallOptions,
    ids: CallIds,
) -> Result<CallReport, CallError> {
    let (mut cx, payload) = gated(parts, principal, name, payload, opts, ids)?; // 1, 2
    let decision = authorized(parts, &mut cx, &payload)?; // 3
    let shadow = authorize::shadow(&cx, parts.shadow, &payload, &decision);
    let waits = wait::request(&decision, parts.approval_ttl);
    let intent = intent::record(
        &cx,
        parts.ledger,
        &payload,
        &decision,
        shadow,
        waits.clone(),
    )
    .await?; // 4
    if let Some(request) = waits {
        return Ok(wait::waiting(&cx, intent, &decision, request));
    }
    finish(parts, &cx, &payload, &decision, intent).await
}

/// An approved call, from its recorded intent: the tool, the recorded payload through the
/// input gate and Cedar again (the registry or policies may have changed while it waited), then
/// the rest of the path under the call's own ids. A payload the gate now rejects is refused
/// with nothing recorded; a call Cedar now denies ends `denied`.
///
/// The caller checks the gate first ([`approvable`]) so that such a refusal comes before the
/// approval is recorded.
pub(crate) async fn approved(
    parts: &Parts<'_>,
    principal: &Principal,
    name: &str,
    payload: Value,
    opts: &CallOptions,
    ids: CallIds,
    intent: Committed,
) -> Result<CallReport, CallError> {
    let (mut cx, payload) = gated(parts, principal, name, payload, opts, ids)?;
    let decision = authorized(parts, &mut cx, &payload)?;
    finish(parts, &cx, &payload, &decision, intent).await
}

/// Whether a recorded call could still be taken through [`approved`]: its tool is registered
/// and its payload passes the input gate.
pub(crate) fn approvable(
    parts: &Parts<'_>,
    principal: &Principal,
    name: &str,
    payload: Value,
    opts: &CallOptions,
) -> Result<(), CallError> {
    gated(parts, principal, name, payload, opts, CallIds::new(None)).map(drop)
}

/// Steps 1 and 2: the tool resolved, the call's context, the payload through the input gate.
fn gated<'a>(
    parts: &Parts<'a>,
    principal: &'a Principal,
    name: &str,
    payload: Value,
    opts: &'a CallOptions,
    ids: CallIds,
) -> Result<(CallContext<'a>, Value), CallError> {
    let tool = resolve(parts.tools, name)?;
    let cx = CallContext::new(ids, principal, opts, tool, parts.secrets);
    let call = tracing::Span::current();
    call.record("escepine.principal", cx.principal.to_string().as_str());
    call.record("escepine.flow", cx.flow.as_str());
    if let Some(run) = &opts.run_id {
        call.record("escepine.run.id", run.as_str());
    }
    let payload = in_stage(Stage::InputGate, |span| {
        let gated = input::gate(&cx, payload);
        if let Err(e) = &gated {
            crate::telemetry::record_error(span, e.kind().as_str());
        }
        gated
    })?;
    Ok((cx, payload))
}

/// Step 3: the state of the call's flow read from the ledger (one that cannot be read refuses
/// the call), Cedar's decision on the gated payload in that flow, and the egress and the
/// origins it fixes for the call.
fn authorized(
    parts: &Parts<'_>,
    cx: &mut CallContext<'_>,
    payload: &Value,
) -> Result<Decision, CallError> {
    let decision = in_stage(Stage::Authorize, |span| {
        cx.flow_state = parts.flows.state(parts.ledger, &cx.flow)?;
        let decision = authorize::authorize(cx, parts.authorizer, payload);
        authorize::trace(span, &decision);
        Ok::<_, CallError>(decision)
    })?;
    authorize::trace(&tracing::Span::current(), &decision);
    cx.egress = authorize::egress(cx, &decision);
    cx.reached = decision.origins().iter().map(ToString::to_string).collect();
    Ok(decision)
}

/// Steps 5 to 8, after the intent: admission, budgets, execution, the output gate, the outcome.
async fn finish(
    parts: &Parts<'_>,
    cx: &CallContext<'_>,
    payload: &Value,
    decision: &Decision,
    intent: Committed,
) -> Result<CallReport, CallError> {
    let (attempts, ended) = match authorize::admit(cx, decision) {
        Err(denied) => (Vec::new(), denied),
        Ok(()) => {
            // The principal in the parents its token names, as Cedar saw it (the call was
            // allowed, so the store builds).
            let entities = parts
                .authorizer
                .entities_as(cx.principal, cx.parents())
                .unwrap_or(escepine_policy::authorize::Store::Base(
                    parts.authorizer.entities(),
                ));
            match budget::reserve(cx, parts.budgets, &entities, parts.ledger).await {
                // 5
                Err(exceeded) => (Vec::new(), exceeded),
                Ok(held) => {
                    let executor = match cx.tool.record.endpoint().transport {
                        escepine_contract::Transport::McpHttp => parts.remote,
                        _ => parts.executor,
                    };
                    let executed = execute::execute(cx, executor, payload).await; // 6
                    budget::release(cx, parts.ledger, held).await;
                    let ended = match executed.result {
                        Ok(output) => in_stage(Stage::OutputGate, |span| {
                            let ended = output::gate(cx, output); // 7
                            let kind = ended.outcome.kind();
                            if kind != crate::kind::CallKind::Ok {
                                crate::telemetry::record_error(span, kind.as_str());
                            }
                            ended
                        }),
                        Err(ended) => ended,
                    };
                    (executed.attempts, ended)
                }
            }
        }
    };
    let n = attempts.len() as u32;
    let entry = outcome::record(cx, parts.ledger, attempts, &ended).await?; // 8
    Ok(CallReport {
        call_id: cx.ids.call_id.clone(),
        idempotency_key: cx.ids.idempotency_key.clone(),
        outcome: ended.outcome,
        intent,
        outcome_entry: Some(entry),
        attempts: n,
    })
}

/// Records how the call ended, in its span and as an event inside it (for anything but `ok`,
/// the span's `error.type` is the call's [`crate::CallKind`]), and counts it in the metrics.
pub(crate) fn trace_end(
    span: &tracing::Span,
    tool: &str,
    started: std::time::Instant,
    result: &Result<CallReport, CallError>,
) {
    let _entered = span.enter();
    let kind = match result {
        Ok(r) => r.kind(),
        Err(e) => e.kind(),
    };
    // A name no tool is registered under is the caller's string: not a metric's label.
    let tool = if kind == crate::kind::CallKind::UnknownTool {
        ""
    } else {
        tool
    };
    crate::telemetry::metrics::metrics().call(tool, kind, started.elapsed());
    match result {
        Ok(r) if kind == crate::kind::CallKind::Ok => {
            tracing::info!(attempts = r.attempts(), "tool call completed");
        }
        _ => {
            crate::telemetry::record_error(span, kind.as_str());
            let why = match result {
                Ok(r) => r.to_string(),
                Err(e) => e.to_string(),
            };
            tracing::warn!(error.r#type = kind.as_str(), "tool call ended: {why}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Id, Record};
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::Layer;

    use super::*;
    use crate::report::CallOutcome;
    use escepine_ledger::entry::Committed;

    /// Keeps every `error.type` recorded on a span.
    #[derive(Clone, Default)]
    struct ErrorTypes(Arc<Mutex<Vec<String>>>);

    impl Visit for ErrorTypes {
        fn record_str(&mut self, field: &Field, value: &str) {
            if field.name() == "error.type" {
                self.0.lock().unwrap().push(value.to_string());
            }
        }
        fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
    }

    impl<S: tracing::Subscriber> Layer<S> for ErrorTypes {
        fn on_record(&self, _: &Id, values: &Record<'_>, _: Context<'_, S>) {
            values.record(&mut self.clone());
        }
    }

    fn report(outcome: CallOutcome) -> CallReport {
        let entry = Committed {
            seq: 1,
            hash: "h".into(),
        };
        CallReport {
            call_id: "c".into(),
            idempotency_key: "k".into(),
            outcome,
            intent: entry.clone(),
            outcome_entry: Some(entry),
            attempts: 2,
        }
    }

    #[test]
    fn the_span_names_the_calls_kind_unless_it_is_ok() {
        let seen = ErrorTypes::default();
        let subscriber = tracing_subscriber::registry().with(seen.clone());
        tracing::subscriber::with_default(subscriber, || {
            let ends: [Result<CallReport, CallError>; 4] = [
                Ok(report(CallOutcome::Ok(Value::Null))),
                Ok(report(CallOutcome::TimedOut { timeout_ms: 5 })),
                Ok(report(CallOutcome::Denied {
                    policy_ids: Vec::new(),
                    reasons: Vec::new(),
                })),
                Err(CallError::UnknownTool("t".into())),
            ];
            for end in &ends {
                let span = crate::telemetry::call_span("t", "c");
                trace_end(&span, "t", std::time::Instant::now(), end);
            }
        });
        let seen = seen.0.lock().unwrap().clone();
        assert_eq!(seen, ["timed_out", "denied", "unknown_tool"]);
    }
}
