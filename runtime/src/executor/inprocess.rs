//! In-process execution: a Rust closure per tool, no process and no sandbox.
//!
//! **For tests and benchmarks only** (crate feature `in-process`). A call executed here runs in
//! the runtime's own address space with the runtime's privileges: nothing isolates it, the
//! per-attempt timeout cannot interrupt it (the closure is synchronous and runs to completion),
//! and it produces no stderr and no egress refusals. Everything else on the governed path (the
//! gates, authorization, the ledger) is the same as for a process.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::seam::{ExecError, Execution, Executor, Invocation};
use escepine_ledger::store::BoxFuture;

/// The implementation of one tool: the validated payload in, the (not yet gated) output out.
pub type InProcessFn = Arc<dyn Fn(&Value) -> Result<Value, ExecError> + Send + Sync>;

/// Runs each tool as a registered closure, in the runtime's own process (tests and benchmarks
/// only: see the [module documentation](self)).
#[derive(Clone, Default)]
pub struct InProcessExecutor {
    tools: HashMap<String, InProcessFn>,
}

impl InProcessExecutor {
    /// An executor with no tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the implementation of `tool_id`.
    pub fn with_tool<F>(mut self, tool_id: impl Into<String>, f: F) -> Self
    where
        F: Fn(&Value) -> Result<Value, ExecError> + Send + Sync + 'static,
    {
        self.insert(tool_id, Arc::new(f));
        self
    }

    /// Adds (or replaces) the implementation of `tool_id`, returning the one it replaced.
    pub fn insert(&mut self, tool_id: impl Into<String>, f: InProcessFn) -> Option<InProcessFn> {
        self.tools.insert(tool_id.into(), f)
    }

    /// Whether `tool_id` has an implementation.
    pub fn contains(&self, tool_id: &str) -> bool {
        self.tools.contains_key(tool_id)
    }
}

impl fmt::Debug for InProcessExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids: Vec<&str> = self.tools.keys().map(String::as_str).collect();
        ids.sort_unstable();
        f.debug_struct("InProcessExecutor")
            .field("tools", &ids)
            .finish()
    }
}

impl Executor for InProcessExecutor {
    fn execute<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Result<Execution, ExecError>> {
        let result = super::seam::workspace_files_refused(&inv).and_then(|()| {
            match self.tools.get(inv.tool.tool_id()) {
                Some(f) => f(inv.payload).map(|output| Execution {
                    output,
                    stderr: String::new(),
                }),
                None => Err(ExecError::Spawn(format!(
                    "no in-process implementation is registered for `{}`",
                    inv.tool.tool_id()
                ))),
            }
        });
        Box::pin(std::future::ready(result))
    }
}
