//! The warm pool: sandboxes provisioned ahead of demand, per [`SandboxSpec`], so that
//! provisioning is off the call's critical path. Each pooled sandbox is handed out for exactly one
//! call and destroyed after it (by the executor). Its replacement is provisioned in the
//! background once that call's job has ended ([`WarmPool::fill`], called by the executor), not
//! when it is taken: building a sandbox while the call runs would take CPU and namespace locks
//! from that very call. Only a take that finds the pool empty starts filling at once. Nothing is
//! ever reused.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use super::backend::{Sandbox, SandboxBackend, SandboxSpec};
use super::SandboxError;

#[derive(Default)]
struct PoolState {
    ready: HashMap<Arc<SandboxSpec>, VecDeque<Sandbox>>,
    pending: HashMap<Arc<SandboxSpec>, usize>,
}

/// Keeps up to `size` provisioned, never-used sandboxes per spec.
pub struct WarmPool {
    size: usize,
    backend: Arc<dyn SandboxBackend>,
    state: Arc<Mutex<PoolState>>,
}

impl std::fmt::Debug for WarmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPool")
            .field("size", &self.size)
            .field("ready", &self.ready())
            .finish()
    }
}

impl WarmPool {
    /// A pool keeping `size` sandboxes ready per spec, provisioned by `backend`.
    pub fn new(backend: Arc<dyn SandboxBackend>, size: usize) -> Self {
        Self {
            size,
            backend,
            state: Arc::default(),
        }
    }

    /// Sandboxes kept ready per spec.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Sandboxes ready now, over all specs.
    pub fn ready(&self) -> usize {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.ready.values().map(VecDeque::len).sum()
    }

    /// A never-used sandbox for `spec`: a ready one if there is one (the caller starts its
    /// replacement with [`WarmPool::fill`] when its job has ended), else one provisioned now
    /// (starting the pool's fill for this spec).
    ///
    /// # Errors
    /// When provisioning now fails.
    pub async fn take(&self, spec: Arc<SandboxSpec>) -> Result<Sandbox, SandboxError> {
        self.take_warm(spec).await.map(|(sandbox, _)| sandbox)
    }

    /// As [`WarmPool::take`], saying whether the sandbox came ready from the pool (`true`) or
    /// was provisioned now.
    ///
    /// # Errors
    /// As [`WarmPool::take`].
    pub async fn take_warm(&self, spec: Arc<SandboxSpec>) -> Result<(Sandbox, bool), SandboxError> {
        while let Some(mut sandbox) = self.pop(&spec) {
            if !sandbox.is_used() && self.backend.is_alive(&mut sandbox) {
                return Ok((sandbox, true));
            }
            // It died while waiting: destroy it, try the next.
            let backend = Arc::clone(&self.backend);
            tokio::spawn(async move {
                backend.destroy(sandbox).await;
            });
        }
        self.fill(&spec);
        self.backend.provision(spec).await.map(|s| (s, false))
    }

    fn pop(&self, spec: &Arc<SandboxSpec>) -> Option<Sandbox> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.ready.get_mut(spec).and_then(VecDeque::pop_front)
    }

    /// Start provisioning sandboxes for `spec` until `size` are ready or on their way.
    pub fn fill(&self, spec: &Arc<SandboxSpec>) {
        let missing = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let have = state.ready.get(spec).map_or(0, VecDeque::len)
                + state.pending.get(spec).copied().unwrap_or(0);
            let missing = self.size.saturating_sub(have);
            *state.pending.entry(Arc::clone(spec)).or_default() += missing;
            missing
        };
        for _ in 0..missing {
            let backend = Arc::clone(&self.backend);
            let state = Arc::downgrade(&self.state);
            let spec = Arc::clone(spec);
            tokio::spawn(async move {
                let made = backend.provision(Arc::clone(&spec)).await;
                let Some(state) = state.upgrade() else {
                    // The pool is gone; `made` is dropped, which kills it.
                    return;
                };
                let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(n) = state.pending.get_mut(&spec) {
                    *n = n.saturating_sub(1);
                }
                match made {
                    Ok(sandbox) => state.ready.entry(spec).or_default().push_back(sandbox),
                    Err(e) => tracing::warn!(error = %e, "warm pool: provisioning failed"),
                }
            });
        }
    }

    /// Destroy every ready sandbox (the pool keeps filling on later `take`s).
    pub async fn drain(&self) {
        let all: Vec<Sandbox> = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.ready.drain().flat_map(|(_, q)| q).collect()
        };
        for sandbox in all {
            self.backend.destroy(sandbox).await;
        }
    }
}
