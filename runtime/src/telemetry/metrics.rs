//! The governed path's metrics, made from the global meter provider the first time a call
//! records one (install a pipeline before the first call).
//!
//! | OpenTelemetry name | Prometheus | kind | attributes |
//! |---|---|---|---|
//! | [`CALLS`] | `escepine_calls_total` | counter | `tool`, `decision` (`allow`, `deny`, `approval`, `none`), `result` (the call's kind) |
//! | [`CALL_DURATION`] | `escepine_call_duration_seconds` | histogram | `tool`, `result` |
//! | [`STAGE_DURATION`] | `escepine_stage_duration_seconds` | histogram | `stage` (the span names of the stages) |
//! | [`SANDBOX_PROVISIONS`] | `escepine_sandbox_provisions_total` | counter | `warm` (`true`: from the warm pool) |
//! | [`BUDGET_USES`] | `escepine_budget_uses_total` | counter | `result` (`taken`, `refused`, `unavailable`) |
//! | [`APPROVALS_WAITING`] | `escepine_approvals_waiting` | up-down counter | — |
//! | [`LEDGER_APPEND_DURATION`] | `escepine_ledger_append_duration_seconds` | histogram | `entry` (`intent`, `outcome`) |
//!
//! `tool` is a registered tool's id, never a caller's string: a call naming no registered
//! tool is counted under `tool=""`.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};
use opentelemetry::KeyValue;

use crate::kind::CallKind;

/// Governed calls, by tool, decision and result.
pub const CALLS: &str = "escepine_calls";
/// How long a governed call took, by tool and result.
pub const CALL_DURATION: &str = "escepine_call_duration";
/// How long each stage of the governed path took.
pub const STAGE_DURATION: &str = "escepine_stage_duration";
/// Sandboxes provisioned for attempts, warm-pool hits or not.
pub const SANDBOX_PROVISIONS: &str = "escepine_sandbox_provisions";
/// Budget reservations, taken or refused.
pub const BUDGET_USES: &str = "escepine_budget_uses";
/// Calls recorded as waiting for approval by this process, not yet decided here.
pub const APPROVALS_WAITING: &str = "escepine_approvals_waiting";
/// How long committing a ledger entry took.
pub const LEDGER_APPEND_DURATION: &str = "escepine_ledger_append_duration";

/// Bucket bounds of the durations, in seconds: 100 µs to 30 s.
const SECONDS: [f64; 17] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// The instruments.
pub(crate) struct Metrics {
    calls: Counter<u64>,
    call_duration: Histogram<f64>,
    stage_duration: Histogram<f64>,
    provisions: Counter<u64>,
    budget_uses: Counter<u64>,
    approvals_waiting: UpDownCounter<i64>,
    ledger_append: Histogram<f64>,
}

/// The process's instruments.
pub(crate) fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Self {
        let meter = opentelemetry::global::meter("escepine");
        let seconds = |name: &'static str, what: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(what)
                .with_boundaries(SECONDS.to_vec())
                .build()
        };
        let metrics = Self {
            calls: meter
                .u64_counter(CALLS)
                .with_description("Governed calls, by tool, decision and result.")
                .build(),
            call_duration: seconds(CALL_DURATION, "How long a governed call took."),
            stage_duration: seconds(
                STAGE_DURATION,
                "How long a stage of the governed path took.",
            ),
            provisions: meter
                .u64_counter(SANDBOX_PROVISIONS)
                .with_description("Sandboxes provisioned for attempts (warm: from the pool).")
                .build(),
            budget_uses: meter
                .u64_counter(BUDGET_USES)
                .with_description("Budget reservations, taken or refused.")
                .build(),
            approvals_waiting: meter
                .i64_up_down_counter(APPROVALS_WAITING)
                .with_description("Calls waiting for approval, recorded by this process.")
                .build(),
            ledger_append: seconds(
                LEDGER_APPEND_DURATION,
                "How long committing a ledger entry took.",
            ),
        };
        // A gauge read before any approval is 0, not absent.
        metrics.approvals_waiting.add(0, &[]);
        metrics
    }

    /// A call ended as `kind` after `took`.
    pub(crate) fn call(&self, tool: &str, kind: CallKind, took: Duration) {
        let tool = KeyValue::new("tool", tool.to_string());
        let result = KeyValue::new("result", kind.as_str());
        self.calls.add(
            1,
            &[
                tool.clone(),
                KeyValue::new("decision", decision_of(kind)),
                result.clone(),
            ],
        );
        self.call_duration
            .record(took.as_secs_f64(), &[tool, result]);
    }

    /// A stage took `took`.
    pub(crate) fn stage(&self, stage: &'static str, took: Duration) {
        self.stage_duration
            .record(took.as_secs_f64(), &[KeyValue::new("stage", stage)]);
    }

    /// A sandbox was provisioned (`warm`: taken from the pool).
    pub(crate) fn provisioned(&self, warm: bool) {
        self.provisions.add(
            1,
            &[KeyValue::new("warm", if warm { "true" } else { "false" })],
        );
    }

    /// A budget reservation ended as `result`.
    pub(crate) fn budget(&self, result: &'static str) {
        self.budget_uses.add(1, &[KeyValue::new("result", result)]);
    }

    /// One more (`+1`) or one fewer (`-1`) call waiting for approval.
    pub(crate) fn approvals_waiting(&self, delta: i64) {
        self.approvals_waiting.add(delta, &[]);
    }

    /// A ledger entry (`intent` or `outcome`) was committed in `took`.
    pub(crate) fn ledger_append(&self, entry: &'static str, took: Duration) {
        self.ledger_append
            .record(took.as_secs_f64(), &[KeyValue::new("entry", entry)]);
    }
}

/// What Cedar decided for a call that ended as `kind`: `none` when it ended before Cedar.
pub(crate) fn decision_of(kind: CallKind) -> &'static str {
    match kind {
        CallKind::Denied => "deny",
        CallKind::AwaitingApproval | CallKind::Rejected | CallKind::Expired => "approval",
        CallKind::UnknownTool
        | CallKind::InputRejected
        | CallKind::LedgerUnavailable
        | CallKind::ClientMismatch => "none",
        CallKind::Ok
        | CallKind::Failed
        | CallKind::TimedOut
        | CallKind::OutputRejected
        | CallKind::BudgetExceeded => "allow",
    }
}
