//! Escepine's telemetry pipeline.
//!
//! The governed path (`escepine-runtime`) emits `tracing` spans named after the OpenTelemetry
//! GenAI conventions and records OpenTelemetry metrics through the global meter; this crate is
//! what a process installs to send them somewhere:
//!
//! - [`TelemetryConfig`]: the OTLP endpoint and protocol from a command's flags or the standard
//!   `OTEL_*` variables;
//! - [`Telemetry`]: the tracer provider (a batch span processor over an OTLP exporter, gRPC or
//!   HTTP/protobuf, whose failed batches are counted as dropped spans, never retried on a
//!   call's time), the meter provider (read by OTLP and by the Prometheus text of `/metrics`),
//!   the `tracing` layer that turns Escepine's spans into OpenTelemetry spans, and the flush
//!   a command runs before it exits.
//!
//! Nothing here blocks a call: spans are queued and exported on the SDK's own thread; a
//! collector that is down costs the spans of the batches it refused, counted in
//! `escepine_telemetry_dropped_spans`.

mod config;
mod counted;
mod pipeline;

pub use config::{
    ConfigError, OtlpConfig, Protocol, TelemetryConfig, DEFAULT_SERVICE_NAME, ENV_ENDPOINT,
    ENV_PROTOCOL, ENV_SDK_DISABLED, ENV_SERVICE_NAME, ENV_TRACES_ENDPOINT,
};
pub use counted::SpanCounts;
pub use pipeline::{Telemetry, TelemetryError, DROPPED_SPANS, EXPORTED_SPANS};
