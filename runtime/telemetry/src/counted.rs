//! A span exporter that counts what it exported and what it dropped: a batch the collector did
//! not take (down, refusing, timed out, after the exporter's own retries) is dropped, and its
//! spans are counted in `escepine_telemetry_dropped_spans`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

/// How many spans reached the collector and how many were dropped.
#[derive(Debug, Default)]
pub struct SpanCounts {
    exported: AtomicU64,
    dropped: AtomicU64,
}

impl SpanCounts {
    /// Spans the collector took.
    pub fn exported(&self) -> u64 {
        self.exported.load(Ordering::Relaxed)
    }

    /// Spans that never reached the collector.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// `inner`, counting into `counts`.
#[derive(Debug)]
pub(crate) struct Counted<E> {
    pub(crate) inner: E,
    pub(crate) counts: Arc<SpanCounts>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len() as u64;
        let result = self.inner.export(batch).await;
        let counter = match result {
            Ok(()) => &self.counts.exported,
            Err(_) => &self.counts.dropped,
        };
        counter.fetch_add(n, Ordering::Relaxed);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
