//! The sandboxes being destroyed in the background: counted, so that a caller can wait until
//! none is left (before it exits, or to measure a call on a settled machine). An executor
//! destroys some itself ([`Teardowns::spawn`]); a warm pool's sandboxes are destroyed by the
//! task the pool prepared for their end (see [`crate::Sandbox::retire`]), counted from the
//! moment they are handed back ([`Teardowns::begin`]).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Teardowns running in the background, shared by an executor, its warm pools and the tasks
/// they spawn.
#[derive(Debug, Default)]
pub struct Teardowns {
    in_flight: AtomicUsize,
    none_left: Notify,
}

impl Teardowns {
    /// Runs `teardown` on a task of its own, counted until it ends.
    pub fn spawn(self: &Arc<Self>, teardown: impl Future<Output = ()> + Send + 'static) {
        let counted = self.begin();
        tokio::spawn(async move {
            // Counted down even if the teardown panics (the guard drops as the task unwinds).
            let _counted = counted;
            teardown.await;
        });
    }

    /// Counts one teardown until the returned guard is dropped.
    pub fn begin(self: &Arc<Self>) -> Counted {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Counted(Arc::clone(self))
    }

    /// How many are running.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Waits until none is running (at once if none is).
    pub async fn settled(&self) {
        loop {
            let notified = self.none_left.notified();
            tokio::pin!(notified);
            // Registered before the count is read, so that an end between the two wakes it.
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// One teardown, counted until this is dropped (then the waiters are woken if none is left).
#[derive(Debug)]
pub struct Counted(Arc<Teardowns>);

impl Drop for Counted {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.none_left.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn settled_waits_for_every_teardown_and_returns_at_once_when_none_runs() {
        let teardowns = Arc::new(Teardowns::default());
        teardowns.settled().await;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        teardowns.spawn(async move {
            let _ = rx.await;
        });
        teardowns.spawn(tokio::time::sleep(Duration::from_millis(5)));
        assert_eq!(teardowns.in_flight(), 2);
        let waiting = tokio::spawn({
            let teardowns = Arc::clone(&teardowns);
            async move { teardowns.settled().await }
        });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiting.is_finished(), "one teardown is still running");
        assert_eq!(teardowns.in_flight(), 1);
        let _ = tx.send(());
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("settled once the last teardown ended")
            .expect("joined");
        assert_eq!(teardowns.in_flight(), 0);
    }

    #[tokio::test]
    async fn one_begun_is_counted_until_its_guard_drops() {
        let teardowns = Arc::new(Teardowns::default());
        let counted = teardowns.begin();
        assert_eq!(teardowns.in_flight(), 1);
        let waiting = tokio::spawn({
            let teardowns = Arc::clone(&teardowns);
            async move { teardowns.settled().await }
        });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiting.is_finished(), "the guard is held");
        drop(counted);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("settled once the guard dropped")
            .expect("joined");
        assert_eq!(teardowns.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_teardown_that_panics_is_counted_down() {
        let teardowns = Arc::new(Teardowns::default());
        teardowns.spawn(async { panic!("a teardown that fails") });
        tokio::time::timeout(Duration::from_secs(5), teardowns.settled())
            .await
            .expect("settled");
    }
}
