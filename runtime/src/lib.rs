//! The runtime of Escepine: the governed call path and the `escepine` command-line tool.
//!
//! A [`Runtime`] is built once from a loaded [`registry_build::Registry`] and then executes only
//! those tools, every call on one path: resolve, input gate, Cedar authorization, intent
//! recorded in the [`ledger`], execution with timeout and retry through an
//! [`executor::Executor`], output gate, outcome recorded — before control returns to the
//! caller. A call that got past its intent returns a [`CallReport`] whose [`CallOutcome`] is
//! data; a [`CallError`] is a refusal before the intent. One [`CallKind`] classifies both.

#![deny(missing_docs)]

pub mod authorize;
#[cfg(feature = "image")]
pub mod cli;
mod error;
pub mod executor;
pub mod export;
pub mod gate;
pub use escepine_egress::host_class;
#[cfg(feature = "image")]
pub mod images;
pub mod ledger;
pub mod mcp;
pub mod overlay;
mod report;
mod runtime;
pub mod sandbox;
pub mod scrub;
pub mod secrets;
pub mod sop;
mod stages;

pub use error::{CallError, NoOutput};
pub use report::{CallKind, CallOutcome, CallReport};
pub use runtime::{BuildError, Runtime, RuntimeBuilder};
pub use stages::CallOptions;
