//! Everything this test program logs, captured by one global tracing subscriber.
//!
//! A process has one global subscriber, and a thread-local default can miss span callsites another
//! test thread registered first, so the tests that search the logs (for spans that must be there,
//! for secrets that must not) share [`capture`]: it installs the subscriber on first use and
//! every test of the program logs into it from then on, so each search covers them all.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// A tracing writer that keeps everything logged.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The capture of every trace-level event and span of this program, installed on first use.
pub fn capture() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("the one global subscriber of this program");
        logs
    })
}
