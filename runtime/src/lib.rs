//! The runtime of Escepine: the governed call path.
//!
//! A [`Runtime`] is built once from a loaded [`escepine_policy::BoundRegistry`] and then executes only
//! those tools, every call on one path: resolve, input gate, Cedar authorization, intent
//! recorded in the ledger ([`escepine_ledger`]; a call allowed only with [`approval`] waits
//! there for an approver), the [`budget`]s of the principal and tool, execution with
//! timeout and retry through an [`executor::Executor`], output gate, outcome recorded — before
//! control returns to the caller. A call that got past its intent returns a [`CallReport`] whose [`CallOutcome`] is
//! data; a [`CallError`] is a refusal before the intent. One [`CallKind`] classifies both.
//!
//! # Features
//!
//! An embedder takes `default-features = false` and only what it uses; the `escepine` binary
//! (package `escepine-cli`), the MCP server (`escepine-mcp`) and the examples take the defaults.
//!
//! - `sandbox` (default, implies `mcp-stdio`): [`sandbox::SandboxExecutor`], the Linux backend of `escepine-sandbox`,
//!   its init (`escepine_sandbox::init::dispatch`) and the listing of a sandbox's root.
//! - `image` (default, implies `sandbox`): tools whose endpoint names an OCI image (`images`).
//! - `sqlite` (default): the SQLite evidence ledger (`escepine_ledger::sqlite`; the feature is
//!   the ledger's, forwarded).
//! - `mcp-stdio` (default): the `mcp-stdio` endpoint transport and the raw MCP client (`mcp`).
//!   Without it, a call to an `mcp-stdio` tool fails with a message naming the feature.
//! - `mcp-http` (default, implies `mcp-stdio`): remote MCP servers over streamable HTTP as
//!   endpoints ([`remote`]), with the tokens the runtime obtains for them. Without it, a call to
//!   an `mcp-http` tool fails with a message naming the feature.
//! - `postgres`: the PostgreSQL evidence ledger (`escepine_ledger::postgres`) and run leases held
//!   in the database (the ledger's feature, forwarded); the `escepine` binary turns it on.
//! - `in-process`: in-process execution, for tests and benchmarks only.
//!
//! Without any feature the runtime is the governed path, the Cedar authorizer, the gates, the
//! process executor for `stdio-json` tools, the ledger with its memory store and verification,
//! and the SOP engine.

#![deny(missing_docs)]

pub mod approval;
pub mod budget;
pub mod decision;
mod error;
pub mod executor;
pub mod flows;
mod ids;
#[cfg(feature = "image")]
pub mod images;
mod kind;
#[cfg(feature = "mcp-stdio")]
pub mod mcp;
pub mod overlay;
#[cfg(feature = "mcp-http")]
pub mod remote;
pub mod replay;
mod report;
mod runtime;
pub mod sandbox;
pub mod scrub;
pub mod secrets;
pub mod sop;
mod stages;
pub mod telemetry;

pub use error::CallError;
pub use kind::CallKind;
pub use report::{CallOutcome, CallReport, NoOutput};
pub use runtime::{BuildError, InFlow, Runtime, RuntimeBuilder, DEFAULT_APPROVAL_TTL};
pub use stages::CallOptions;
