//! The warm pool: sandboxes provisioned ahead of demand, per [`SandboxSpec`], so that
//! provisioning is off the call's critical path. Each pooled sandbox is handed out for exactly one
//! call and destroyed after it. The pool prepares the end of each sandbox as it makes it (see
//! [`crate::retirement`]): handed back by its caller ([`Sandbox::retire`]), it is destroyed once
//! its processes have ended, and its replacement is provisioned then — not when it is taken:
//! building a sandbox while the call runs would take CPU and namespace locks from that very
//! call. A sandbox not handed back (its job failed) is destroyed by its caller, who starts the
//! replacement ([`WarmPool::fill`]). Only a take that finds the pool empty starts filling at
//! once. Nothing is ever reused.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use super::backend::{Sandbox, SandboxBackend, SandboxSpec};
use super::SandboxError;
use crate::retirement;
use crate::teardowns::Teardowns;

#[derive(Default)]
struct PoolState {
    ready: HashMap<Arc<SandboxSpec>, VecDeque<Sandbox>>,
    pending: HashMap<Arc<SandboxSpec>, usize>,
}

/// What the pool and the tasks it spawns share (the tasks through a weak reference: a pool
/// dropped drops its ready sandboxes, which kills them).
struct Shared {
    size: usize,
    backend: Arc<dyn SandboxBackend>,
    teardowns: Arc<Teardowns>,
    state: Mutex<PoolState>,
}

/// Keeps up to `size` provisioned, never-used sandboxes per spec.
pub struct WarmPool {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WarmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPool")
            .field("size", &self.shared.size)
            .field("ready", &self.ready())
            .finish()
    }
}

impl WarmPool {
    /// A pool keeping `size` sandboxes ready per spec, provisioned by `backend`; the sandboxes
    /// handed back to it are counted in `teardowns` until destroyed.
    pub fn new(backend: Arc<dyn SandboxBackend>, size: usize, teardowns: Arc<Teardowns>) -> Self {
        Self {
            shared: Arc::new(Shared {
                size,
                backend,
                teardowns,
                state: Mutex::default(),
            }),
        }
    }

    /// Sandboxes kept ready per spec.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// Sandboxes ready now, over all specs.
    pub fn ready(&self) -> usize {
        let state = self.shared.lock();
        state.ready.values().map(VecDeque::len).sum()
    }

    /// A never-used sandbox for `spec`: a ready one if there is one (handed back with
    /// [`Sandbox::retire`] once its job has ended, its replacement then starts by itself), else
    /// one provisioned now (starting the pool's fill for this spec).
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
        let backend = &self.shared.backend;
        while let Some(mut sandbox) = self.pop(&spec) {
            if !sandbox.is_used() && backend.is_alive(&mut sandbox) {
                return Ok((sandbox, true));
            }
            // It died while waiting: destroy it, try the next.
            let backend = Arc::clone(backend);
            tokio::spawn(async move {
                backend.destroy(sandbox).await;
            });
        }
        self.fill(&spec);
        backend.provision(spec).await.map(|s| (s, false))
    }

    fn pop(&self, spec: &Arc<SandboxSpec>) -> Option<Sandbox> {
        let mut state = self.shared.lock();
        state.ready.get_mut(spec).and_then(VecDeque::pop_front)
    }

    /// Start provisioning sandboxes for `spec` until `size` are ready or on their way.
    pub fn fill(&self, spec: &Arc<SandboxSpec>) {
        self.shared.fill(spec);
    }

    /// Destroy every ready sandbox (the pool keeps filling on later `take`s).
    pub async fn drain(&self) {
        let all: Vec<Sandbox> = {
            let mut state = self.shared.lock();
            state.ready.drain().flat_map(|(_, q)| q).collect()
        };
        for sandbox in all {
            self.shared.backend.destroy(sandbox).await;
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`WarmPool::fill`]: each sandbox made with its end prepared, whose task starts the next
    /// fill once the sandbox is handed back.
    fn fill(self: &Arc<Self>, spec: &Arc<SandboxSpec>) {
        let missing = {
            let mut state = self.lock();
            let have = state.ready.get(spec).map_or(0, VecDeque::len)
                + state.pending.get(spec).copied().unwrap_or(0);
            let missing = self.size.saturating_sub(have);
            *state.pending.entry(Arc::clone(spec)).or_default() += missing;
            missing
        };
        for _ in 0..missing {
            let backend = Arc::clone(&self.backend);
            let teardowns = Arc::clone(&self.teardowns);
            let pool = Arc::downgrade(self);
            let spec = Arc::clone(spec);
            tokio::spawn(async move {
                let mut made = backend.provision(Arc::clone(&spec)).await;
                if let Ok(sandbox) = &mut made {
                    let (pool, spec) = (pool.clone(), Arc::clone(&spec));
                    retirement::prepare(sandbox, &backend, &teardowns, move || {
                        if let Some(pool) = pool.upgrade() {
                            pool.fill(&spec);
                        }
                    });
                }
                let Some(pool) = pool.upgrade() else {
                    // The pool is gone; `made` is dropped, which kills it.
                    return;
                };
                let mut state = pool.lock();
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
}
