//! The spans of the governed path (see the module's table): one per call, one per stage, one
//! per SOP run. A stage's span also times the stage into `escepine_stage_duration`.

use std::future::Future;
use std::time::Instant;

use tracing::field::Empty;
use tracing::Instrument as _;

use super::metrics::metrics;

/// A stage of the governed path, named as its span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    InputGate,
    Authorize,
    ApprovalWait,
    Budget,
    Attempt,
    SandboxProvision,
    OutputGate,
    LedgerAppend,
}

impl Stage {
    /// The span's (and the `stage` attribute's) name.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::InputGate => "input_gate",
            Self::Authorize => "authorize",
            Self::ApprovalWait => "approval_wait",
            Self::Budget => "budget",
            Self::Attempt => "attempt",
            Self::SandboxProvision => "sandbox_provision",
            Self::OutputGate => "output_gate",
            Self::LedgerAppend => "ledger_append",
        }
    }

    /// The stage's span, a child of the current one. Every attribute a stage may set is
    /// declared here; those a stage does not set are not exported.
    pub(crate) fn span(self) -> tracing::Span {
        tracing::info_span!(
            "stage",
            otel.name = self.as_str(),
            otel.status_code = Empty,
            error.r#type = Empty,
            escepine.decision = Empty,
            escepine.policy_ids = Empty,
            escepine.approval.expires_at_ms = Empty,
            escepine.budget.result = Empty,
            escepine.attempt = Empty,
            escepine.sandbox.warm = Empty,
            escepine.ledger.entry = Empty,
            escepine.ledger.seq = Empty,
        )
    }
}

/// `f` in the span of `stage`, timed.
pub(crate) fn in_stage<T>(stage: Stage, f: impl FnOnce(&tracing::Span) -> T) -> T {
    let span = stage.span();
    let start = Instant::now();
    let out = span.in_scope(|| f(&span));
    metrics().stage(stage.as_str(), start.elapsed());
    out
}

/// The future `f` makes, in the span of `stage`, timed.
pub(crate) async fn in_stage_async<F: Future>(
    stage: Stage,
    f: impl FnOnce(tracing::Span) -> F,
) -> F::Output {
    let span = stage.span();
    let start = Instant::now();
    let out = f(span.clone()).instrument(span).await;
    metrics().stage(stage.as_str(), start.elapsed());
    out
}

/// The span of one governed call, per the OpenTelemetry GenAI conventions; `error.type` is the
/// [`crate::CallKind`] of a call that did not end `ok`.
pub(crate) fn call_span(tool_id: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = %format!("execute_tool {tool_id}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool_id,
        gen_ai.tool.call.id = %call_id,
        gen_ai.tool.type = "function",
        otel.status_code = Empty,
        error.r#type = Empty,
        escepine.principal = Empty,
        escepine.decision = Empty,
        escepine.policy_ids = Empty,
        escepine.input.sha256 = Empty,
        escepine.output.sha256 = Empty,
        escepine.run.id = Empty,
        escepine.flow = Empty,
    )
}

/// The span of an SOP run; its steps' calls are its children.
pub(crate) fn sop_span(sop: &str, run_id: &str) -> tracing::Span {
    tracing::info_span!(
        "sop_run",
        otel.name = %format!("sop_run {sop}"),
        escepine.sop = %sop,
        escepine.run.id = %run_id,
        otel.status_code = Empty,
        error.r#type = Empty,
    )
}

/// `span` ended in error: `error.type` is `error_type` (a call's kind, an attempt's error
/// class, a run's status) and its OpenTelemetry status is `ERROR`.
pub(crate) fn record_error(span: &tracing::Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// Commit `append` (an `intent` or `outcome` entry) in the `ledger_append` span, timed into
/// `escepine_ledger_append_duration` too.
pub(crate) async fn ledger_append<E>(
    entry: &'static str,
    append: impl Future<Output = Result<escepine_ledger::entry::Committed, E>>,
) -> Result<escepine_ledger::entry::Committed, E> {
    in_stage_async(Stage::LedgerAppend, |span| async move {
        span.record("escepine.ledger.entry", entry);
        let start = Instant::now();
        let committed = append.await;
        metrics().ledger_append(entry, start.elapsed());
        if let Ok(c) = &committed {
            span.record("escepine.ledger.seq", c.seq);
        }
        committed
    })
    .await
}
