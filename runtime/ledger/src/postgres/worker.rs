//! [`Worker`]: a thread of the store's own that runs its connections.
//!
//! The [`Ledger`](crate::store::Ledger) trait reads and leases synchronously, from any thread,
//! async or not. The store's connections therefore live on a single-threaded async runtime of
//! their own, on a dedicated thread; [`Worker::block`] runs a future there and waits for its
//! result on a plain channel (which may block an async task's thread briefly, as a SQLite read
//! does, but never starts a runtime inside another).

use std::future::Future;
use std::thread::JoinHandle;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::error::PgError;

/// The connection thread and a handle to spawn on it.
#[derive(Debug)]
pub struct Worker {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Start the thread.
    pub fn start() -> Result<Self, PgError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(PgError::Thread)?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("escepine-ledger-pg".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(PgError::Thread)?;
        Ok(Self {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The handle to spawn the store's tasks on.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Run `future` on the thread and wait for its result.
    pub fn block<T: Send + 'static>(
        &self,
        future: impl Future<Output = Result<T, PgError>> + Send + 'static,
    ) -> Result<T, PgError> {
        block_on(&self.handle, future)
    }
}

/// Run `future` on `handle`'s runtime and wait for its result on this thread.
pub fn block_on<T: Send + 'static>(
    handle: &Handle,
    future: impl Future<Output = Result<T, PgError>> + Send + 'static,
) -> Result<T, PgError> {
    let (done, result) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let _ = done.send(future.await);
    });
    result.recv().map_err(|_| PgError::Stopped)?
}

impl Drop for Worker {
    /// Stops the runtime (closing the connections still open) and joins the thread.
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
