//! What the governed path tells operators while it runs: `tracing` spans named after the
//! OpenTelemetry GenAI conventions, OpenTelemetry metrics, and the W3C trace context a call
//! continues and passes on. The ledger stays the evidence; this is how people watch it live.
//!
//! Nothing here exports: a process that wants spans and metrics somewhere installs a pipeline
//! (`escepine-telemetry`: OTLP and Prometheus) before it builds its [`crate::Runtime`]; without
//! one, spans go to whatever `tracing` subscriber there is and metrics nowhere.
//!
//! # Spans
//!
//! | span (OpenTelemetry name) | what | attributes |
//! |---|---|---|
//! | `execute_tool {tool}` | one governed call | `gen_ai.operation.name = execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id` (the ledger's call id), `gen_ai.tool.type = function`, `escepine.principal`, `escepine.decision`, `escepine.policy_ids`, `escepine.input.sha256`, `escepine.output.sha256`, `escepine.run.id`, `escepine.flow`, `error.type` (the call's kind, unless `ok`) |
//! | `input_gate` | the payload against the input schema | `error.type` |
//! | `authorize` | Cedar | `escepine.decision`, `escepine.policy_ids` (the determining policies) |
//! | `approval_wait` | a call allowed only with approval, recorded as waiting | `escepine.approval.expires_at_ms` |
//! | `budget` | the budgets' uses taken | `escepine.budget.result` (`taken`, `refused`, `unavailable`) |
//! | `attempt` | one attempt in its sandbox (or at the remote server) | `escepine.attempt`, `error.type` (the error class) |
//! | `sandbox_provision` | the attempt's sandbox, from the warm pool or made now | `escepine.sandbox.warm` |
//! | `output_gate` | the output scrubbed and checked | `error.type` |
//! | `ledger_append` | an intent or outcome committed | `escepine.ledger.entry`, `escepine.ledger.seq` |
//! | `sop_run {sop}` | an SOP run; its steps' calls are its children | `escepine.sop`, `escepine.run.id`, `error.type` |
//!
//! No attribute holds a payload, an output or a secret: payloads and outputs appear as their
//! SHA-256 only.
//!
//! # Metrics
//!
//! See [`metrics`]: the names there are the OpenTelemetry names; Prometheus adds `_total` to
//! counters and `_seconds` to the durations.

mod context;
pub mod metrics;
mod spans;

pub use context::{
    TraceContext, ENV_TRACEPARENT, ENV_TRACESTATE, META_TRACEPARENT, META_TRACESTATE,
};
pub(crate) use spans::{
    call_span, in_stage, in_stage_async, ledger_append, record_error, sop_span, Stage,
};
