//! Sandboxed execution: the runtime's side of `escepine-sandbox`.
//!
//! The backend seam, the Linux backend, its init and warm pools live in the `escepine-sandbox`
//! crate, the egress proxy in `escepine-egress`. With the
//! `sandbox` feature this module adds [`SandboxExecutor`], the [`Executor`] that runs every
//! attempt of a governed call in a fresh sandbox: each attempt resolves the tool's binary
//! (checking the record's `sha256` before anything runs), turns the record into a plain
//! `SandboxSpec`, has the backend **provision** a sandbox for it, **execute** the tool there
//! once, and **destroy** it. What a sandbox is made of — namespaces, a root of copies, landlock,
//! seccomp, a memory cgroup, the relay to the call's proxy — is documented in
//! `escepine_sandbox`.
//!
//! Every program that starts sandboxes calls `escepine_sandbox::init::dispatch` first in `main`: the backend
//! starts the program itself as the sandboxes' init.
//!
//! [`Executor`]: crate::executor::Executor

#[cfg(feature = "sandbox")]
mod executor;
#[cfg(feature = "sandbox")]
pub mod listing;
#[cfg(feature = "sandbox")]
mod self_test;

#[cfg(feature = "sandbox")]
pub use executor::{SandboxExecutor, ServerSession, SessionSandbox};
#[cfg(feature = "sandbox")]
pub use self_test::SelfTest;
