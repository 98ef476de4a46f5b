//! The execution seam: one attempt of one call, in whatever isolation the executor gives.

pub mod bounded;
pub mod exit;
pub mod group;
#[cfg(feature = "in-process")]
pub mod inprocess;
pub mod process;
pub mod seam;
pub mod spawn;

#[cfg(feature = "in-process")]
pub use inprocess::InProcessExecutor;
pub use process::{ProcessExecutor, Program};
pub use seam::{Attempted, CallerToken, Egress, ExecError, Execution, Executor, Invocation};
