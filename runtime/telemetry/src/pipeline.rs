//! The installed pipeline: providers, exporters, the `tracing` layer, `/metrics`, the flush.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::metrics::{MeterProvider as _, ObservableCounter};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing::Subscriber;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::config::{OtlpConfig, Protocol, TelemetryConfig, ENV_SERVICE_NAME};
use crate::counted::{Counted, SpanCounts};

/// The metric counting spans that never reached the collector (`_total` in Prometheus).
pub const DROPPED_SPANS: &str = "escepine_telemetry_dropped_spans";
/// The metric counting spans the collector took (`_total` in Prometheus).
pub const EXPORTED_SPANS: &str = "escepine_telemetry_exported_spans";

/// How long the flush before exit may take, per provider.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

/// A process's telemetry: see the crate's documentation.
///
/// Made by [`Telemetry::start`]; [`Telemetry::shutdown`] flushes it (a command calls it before
/// it exits).
pub struct Telemetry {
    config: TelemetryConfig,
    tracer: Option<SdkTracerProvider>,
    meter: SdkMeterProvider,
    registry: prometheus::Registry,
    counts: Arc<SpanCounts>,
    _observed: Vec<ObservableCounter<u64>>,
    /// The gRPC exporters' own runtime: exports never run on the calls' runtime, and work
    /// whatever runtime the command has (or has already shut down).
    exports: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("config", &self.config)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// The pipeline of `config`: spans to its collector (if any), metrics to its collector and to
    /// the Prometheus registry. The meter provider becomes the global one, which the governed
    /// path's instruments are made from: start telemetry before the runtime is built.
    ///
    /// With gRPC, the exporters get a runtime of their own (one thread).
    ///
    /// # Errors
    /// An exporter that cannot be built (a malformed endpoint the URL check let through), the
    /// exporters' runtime, or the Prometheus reader.
    pub fn start(config: TelemetryConfig) -> Result<Self, TelemetryError> {
        let exports = match &config.otlp {
            Some(otlp) if otlp.protocol == Protocol::Grpc => Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("escepine-otlp")
                    .enable_all()
                    .build()
                    .map_err(|e| TelemetryError::Exporter {
                        endpoint: otlp.traces_url(),
                        why: format!("cannot start the exporters' runtime: {e}"),
                    })?,
            ),
            _ => None,
        };
        let entered = exports.as_ref().map(tokio::runtime::Runtime::enter);
        let resource = resource(&config);
        let counts = Arc::new(SpanCounts::default());
        let tracer = match &config.otlp {
            Some(otlp) => {
                let exporter = Counted {
                    inner: span_exporter(otlp)?,
                    counts: Arc::clone(&counts),
                };
                let processor = BatchSpanProcessor::builder(exporter).build();
                Some(
                    SdkTracerProvider::builder()
                        .with_resource(resource.clone())
                        .with_span_processor(processor)
                        .build(),
                )
            }
            None => None,
        };
        let registry = prometheus::Registry::new();
        let prometheus = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .without_target_info()
            .scope_info_enabled(false)
            .build()
            .map_err(|e| TelemetryError::Prometheus(e.to_string()))?;
        let mut meter = SdkMeterProvider::builder()
            .with_resource(resource)
            .with_reader(prometheus);
        if let Some(otlp) = &config.otlp {
            meter = meter.with_reader(PeriodicReader::builder(metric_exporter(otlp)?).build());
        }
        let meter = meter.build();
        opentelemetry::global::set_meter_provider(meter.clone());
        let own = meter.meter("escepine-telemetry");
        let observe = |name: &'static str, what: &'static str, read: fn(&SpanCounts) -> u64| {
            let counts = Arc::clone(&counts);
            own.u64_observable_counter(name)
                .with_description(what)
                .with_callback(move |o| o.observe(read(&counts), &[]))
                .build()
        };
        let observed = vec![
            observe(
                DROPPED_SPANS,
                "Spans that never reached the OTLP collector (its batch was refused or failed).",
                SpanCounts::dropped,
            ),
            observe(
                EXPORTED_SPANS,
                "Spans the OTLP collector took.",
                SpanCounts::exported,
            ),
        ];
        drop(entered);
        Ok(Self {
            config,
            tracer,
            meter,
            registry,
            counts,
            _observed: observed,
            exports,
        })
    }

    /// What this pipeline was made from.
    pub fn config(&self) -> &TelemetryConfig {
        &self.config
    }

    /// The `tracing` layer that exports Escepine's spans (targets `escepine*`, INFO and above)
    /// as OpenTelemetry spans, with the attributes the spans declare and nothing else: no
    /// events (a log line may quote what an attribute never holds), no source locations or
    /// thread ids. `None` without a collector.
    pub fn layer<S>(&self) -> Option<Box<dyn Layer<S> + Send + Sync>>
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let tracer = self.tracer.as_ref()?.tracer("escepine");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.is_span()
                    && meta.target().starts_with("escepine")
                    && *meta.level() <= tracing::Level::INFO
            }));
        Some(Box::new(layer))
    }

    /// How many spans were exported and dropped so far.
    pub fn span_counts(&self) -> &SpanCounts {
        &self.counts
    }

    /// Every metric in the Prometheus text exposition format (`/metrics`).
    ///
    /// # Errors
    /// When the encoder fails (it does not for the metrics Escepine makes).
    pub fn prometheus_text(&self) -> Result<String, TelemetryError> {
        use prometheus::Encoder as _;
        let mut out = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .map_err(|e| TelemetryError::Prometheus(e.to_string()))?;
        String::from_utf8(out).map_err(|e| TelemetryError::Prometheus(e.to_string()))
    }

    /// Serve `GET /metrics` ([`Telemetry::prometheus_text`]) on `listener` until `stop`
    /// completes; any other path is 404.
    ///
    /// # Errors
    /// When the server fails.
    pub async fn serve_metrics(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let telemetry = Arc::clone(&self);
                async move { metrics_response(&telemetry) }
            }),
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await
    }

    /// Exports what is queued, then stops the exporters, each within a bound; spans the
    /// collector does not take by then are dropped (and counted).
    ///
    /// # Errors
    /// The first provider that failed to flush or shut down (the other is still shut down).
    pub fn shutdown(&self) -> Result<(), TelemetryError> {
        let traced = match &self.tracer {
            Some(t) => t
                .shutdown_with_timeout(SHUTDOWN_BOUND)
                .map_err(|e| TelemetryError::Shutdown(format!("spans: {e}"))),
            None => Ok(()),
        };
        let measured = self
            .meter
            .shutdown_with_timeout(SHUTDOWN_BOUND)
            .map_err(|e| TelemetryError::Shutdown(format!("metrics: {e}")));
        traced.and(measured)
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Dropping a runtime may not block inside another one's worker.
        if let Some(rt) = self.exports.take() {
            rt.shutdown_background();
        }
    }
}

fn resource(config: &TelemetryConfig) -> Resource {
    let builder = Resource::builder();
    // The SDK reads OTEL_SERVICE_NAME itself; only its absence is filled in.
    let builder = match std::env::var(ENV_SERVICE_NAME) {
        Ok(v) if !v.trim().is_empty() => builder,
        _ => builder.with_service_name(config.service_name.clone()),
    };
    builder
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build()
}

fn span_exporter(otlp: &OtlpConfig) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
    let built = match otlp.protocol {
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(otlp.traces_url())
            .build(),
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(otlp.traces_url())
            .build(),
    };
    built.map_err(|e| TelemetryError::Exporter {
        endpoint: otlp.traces_url(),
        why: e.to_string(),
    })
}

fn metric_exporter(
    otlp: &OtlpConfig,
) -> Result<opentelemetry_otlp::MetricExporter, TelemetryError> {
    let built = match otlp.protocol {
        Protocol::Grpc => opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_endpoint(otlp.metrics_url())
            .build(),
        Protocol::HttpProtobuf => opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(otlp.metrics_url())
            .build(),
    };
    built.map_err(|e| TelemetryError::Exporter {
        endpoint: otlp.metrics_url(),
        why: e.to_string(),
    })
}

/// `/metrics`: the text format, or 500 naming the encoder's failure.
fn metrics_response(telemetry: &Telemetry) -> axum::response::Response {
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse as _;
    match telemetry.prometheus_text() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Telemetry that cannot start or stop.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// An OTLP exporter cannot be built.
    #[error("cannot export to `{endpoint}`: {why}")]
    Exporter {
        /// Where it would have exported to.
        endpoint: String,
        /// Why not.
        why: String,
    },
    /// The Prometheus reader or encoder failed.
    #[error("prometheus: {0}")]
    Prometheus(String),
    /// The flush before exit failed.
    #[error("telemetry flush: {0}")]
    Shutdown(String),
}
