//! Where the time goes: a tracing layer timing every governed call.
//!
//! [`Runtime::call`](escepine_runtime::Runtime::call) runs each call inside an `execute_tool`
//! span, from resolution to the committed outcome. This layer measures each such span from its
//! creation to its close; the ledger's attempt durations (measured around the executor) give the
//! tools' share, and the difference is the governed path's own stages (gates, Cedar, the two
//! ledger commits, secret scrubbing).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Totals over every governed call of the process.
#[derive(Debug, Default)]
pub struct CallClock {
    calls: AtomicU64,
    total_us: AtomicU64,
}

impl CallClock {
    /// Calls timed.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Their total duration, microseconds.
    pub fn total_us(&self) -> u64 {
        self.total_us.load(Ordering::Relaxed)
    }
}

struct Started(Instant);

/// The layer feeding a [`CallClock`].
pub struct CallTimer(pub Arc<CallClock>);

impl<S> Layer<S> for CallTimer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() == "execute_tool" {
            if let Some(span) = ctx.span(id) {
                span.extensions_mut().insert(Started(Instant::now()));
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let ext = span.extensions();
        if let Some(Started(t)) = ext.get::<Started>() {
            let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.0.calls.fetch_add(1, Ordering::Relaxed);
            self.0.total_us.fetch_add(us, Ordering::Relaxed);
        }
    }
}

/// Install the timing layer, and the OTLP pipeline's when there is one, as the global
/// subscriber (nothing is printed).
pub fn install(telemetry: Option<&escepine_telemetry::Telemetry>) -> Arc<CallClock> {
    use tracing_subscriber::layer::SubscriberExt;
    let clock = Arc::new(CallClock::default());
    let subscriber = tracing_subscriber::registry()
        .with(CallTimer(Arc::clone(&clock)))
        .with(telemetry.and_then(|t| t.layer()));
    // Only fails when a subscriber is already set (not in this program).
    let _ = tracing::subscriber::set_global_default(subscriber);
    clock
}

/// The process's peak resident set size (`VmHWM`), in KiB, where `/proc` has it.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
