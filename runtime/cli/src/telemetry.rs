//! `--otlp-endpoint`, `--otlp-protocol` (and the standard `OTEL_*` variables) of every command
//! that builds a runtime: the telemetry pipeline started before the runtime is built, the
//! `tracing` subscriber that feeds it, and the flush when the command ends.

use std::os::fd::AsFd as _;
use std::sync::Arc;

use escepine_telemetry::{Telemetry, TelemetryConfig};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

use crate::error::CliError;
use crate::exit;

/// The telemetry flags.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TelemetryArgs {
    /// Export traces and metrics over OTLP to this collector (`http://host:4318` for
    /// `http/protobuf`, `http://host:4317` for `grpc`); else `OTEL_EXPORTER_OTLP_ENDPOINT`.
    /// Batched, never blocking a call; spans a collector that is down does not take are
    /// dropped and counted (`escepine_telemetry_dropped_spans`).
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// `grpc` or `http/protobuf`; else `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`.
    #[arg(long, value_name = "PROTOCOL")]
    pub(crate) otlp_protocol: Option<String>,
}

/// What a command watches itself with; flushed when dropped (before the command exits).
pub(crate) struct Watch {
    telemetry: Option<Arc<Telemetry>>,
}

impl Watch {
    /// The pipeline, when one was started.
    pub(crate) fn telemetry(&self) -> Option<&Arc<Telemetry>> {
        self.telemetry.as_ref()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(t) = &self.telemetry {
            // Bounded; what the collector does not take by then is dropped (and counted).
            if let Err(e) = t.shutdown() {
                tracing::debug!("{e}");
            }
        }
    }
}

/// What a command wants beside OTLP.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Wants {
    /// Logs (`RUST_LOG`) on standard error whatever the telemetry (`serve`).
    pub(crate) logs: bool,
    /// Metrics for Prometheus (`serve --metrics-listen`), even without a collector.
    pub(crate) prometheus: bool,
}

impl TelemetryArgs {
    /// Start what these flags, the `OTEL_*` variables and `wants` ask for, and the `tracing`
    /// subscriber: logs to standard error (filtered by `RUST_LOG`) when `wants.logs` or
    /// `RUST_LOG` is set, spans to the pipeline when there is one. Nothing at all when
    /// nothing is asked for.
    ///
    /// # Errors
    /// Exit 2 for a bad endpoint or protocol (naming the flag or variable); exit 1 when the
    /// pipeline cannot start.
    pub(crate) fn start(&self, wants: Wants) -> Result<Watch, CliError> {
        let config =
            TelemetryConfig::from_env(self.otlp_endpoint.as_deref(), self.otlp_protocol.as_deref())
                .map_err(|e| CliError::new(exit::USAGE, e))?;
        let telemetry = if config.otlp.is_some() || wants.prometheus {
            Some(Arc::new(
                Telemetry::start(config).map_err(|e| CliError::new(exit::INVALID, e))?,
            ))
        } else {
            None
        };
        let logs = wants.logs || std::env::var_os("RUST_LOG").is_some();
        let spans = telemetry.as_ref().and_then(|t| t.layer());
        if logs || spans.is_some() {
            // Logs never go to stdout: over stdio, stdout is the protocol. They go to a
            // duplicate of fd 2, not through `std::io::stderr()`, whose lock the caller may hold.
            let log = logs
                .then(|| std::io::stderr().as_fd().try_clone_to_owned().ok())
                .flatten()
                .map(|fd| {
                    tracing_subscriber::fmt::layer()
                        .with_writer(std::sync::Mutex::new(std::fs::File::from(fd)))
                        .with_filter(tracing_subscriber::EnvFilter::from_default_env())
                });
            // A subscriber set before (a test running commands in one process) stays.
            let _ = tracing_subscriber::registry()
                .with(log)
                .with(spans)
                .try_init();
        }
        Ok(Watch { telemetry })
    }
}
