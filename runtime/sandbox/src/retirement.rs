//! A pooled sandbox's end, prepared when its pool made it, off any call's path.
//!
//! The pool spawns one task per sandbox it makes ([`prepare`]). The task waits, first, for the
//! sandbox's processes to end — the backend's [`SandboxBackend::ended`]: for the Linux backend,
//! its PID 1's pidfd turning readable, which the runtime's reactor sees — and then for the
//! sandbox to be handed back by the caller of its one job ([`Sandbox::retire`]); then it starts
//! the pool's replacement and destroys the sandbox. PID 1 ends by itself right after its report,
//! so the caller usually hands the sandbox back before that task is woken, and handing it back
//! wakes nothing: neither the teardown nor the replacement's provisioning runs on, or preempts,
//! the end of the call (a caller that had to spawn them woke a runtime worker, which on a
//! machine of few cores often ran on the caller's own core).
//!
//! A sandbox that is never handed back (destroyed by its caller after a failed job, dropped
//! with its pool, or with a cancelled call) drops its end of the hand-over: its task ends once
//! the sandbox's processes have, and does nothing.

use std::sync::Arc;

use tokio::sync::oneshot;

use crate::backend::{HandedBack, Retirement, Sandbox, SandboxBackend};
use crate::teardowns::Teardowns;

/// Prepares the end of `sandbox`, just made by a pool: spawns the task that destroys it with
/// `backend` once its processes have ended and it has been handed back, after running `then`
/// (the pool's replacement). Without a way to tell when the sandbox's processes have ended
/// (a backend whose [`SandboxBackend::ended`] is `None`), nothing is prepared and the caller
/// destroys the sandbox as any other.
pub(crate) fn prepare(
    sandbox: &mut Sandbox,
    backend: &Arc<dyn SandboxBackend>,
    teardowns: &Arc<Teardowns>,
    then: impl FnOnce() + Send + 'static,
) {
    let Some(ended) = backend.ended(sandbox) else {
        return;
    };
    let (handover, handed_back) = oneshot::channel::<HandedBack>();
    sandbox.set_retirement(Retirement::new(handover, Arc::clone(teardowns)));
    let backend = Arc::clone(backend);
    tokio::spawn(async move {
        // Not the hand-over first: waiting on it would have the caller's hand-over wake this
        // task, which is what this task is for avoiding.
        ended.await;
        let Ok((sandbox, counted)) = handed_back.await else {
            return;
        };
        then();
        backend.destroy(sandbox).await;
        drop(counted);
    });
}
