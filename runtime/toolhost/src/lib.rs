//! The tool host of Escepine: one `main` for a crate of tools written in Rust.
//!
//! A crate of `#[tool]` functions (from `escepine-registry-macros`) gets its binary from
//! [`main!`]:
//!
//! ```ignore
//! escepine_toolhost::main!(text_stats, url_normalize);
//! ```
//!
//! That binary is the tools' endpoint (`"endpoint": { "transport": "stdio-json", "command":
//! "<binary>", "args": ["<tool id>"] }`), so the runtime runs them like any other tool, one
//! sandboxed process per attempt, speaking the `stdio-json` protocol ([`serve`]):
//!
//! - `<binary> <tool id>` reads the payload JSON from stdin, deserialises it into the tool's
//!   input type, runs the `async fn` on a current-thread tokio runtime, and writes the output
//!   JSON on stdout (exit 0). A payload that does not deserialise is a permanent failure (exit
//!   65, the reason on stderr); a [`ToolError`] is exit 75 when transient, 1 when permanent; the
//!   call id and the idempotency key come from `ESCEPINE_CALL_ID` and
//!   `ESCEPINE_IDEMPOTENCY_KEY` ([`CallContext`]).
//! - `<binary> --describe` prints the tools' records as a JSON array; `<binary> --describe --out
//!   DIR` writes one `<tool id>.json` per tool, which `escepine check --records DIR` reads.
//!
//! A crate of tools can also be linked into the agent that runs them instead ([`linked`]): its
//! tools become records of the agent's registry at build time and are served by the agent's own
//! binary, so no path to a tool binary is written anywhere.
//!
//! The crate's `build.rs` runs `escepine_registry_build::Builder`, which compiles the records
//! the crate implements record-first and generates a Cedar action marker for every action of
//! the crate's `.cedarschema`, which Rust-first tools name. With the `check` feature,
//! [`check::rust_first`] is what the test generated for each Rust-first tool runs.

#![deny(missing_docs)]

pub mod check;
mod exit;
pub mod linked;
mod registration;
#[cfg(feature = "host")]
mod serve;

pub use escepine_contract::{CallContext, ToolError, ToolFn};
pub use exit::{EXIT_BAD_PAYLOAD, EXIT_INTERNAL, EXIT_PERMANENT, EXIT_TRANSIENT, EXIT_USAGE};
pub use registration::{Failure, Registration};
#[cfg(feature = "host")]
pub use serve::{serve, Host};

/// The `main` of a crate of tools: serves the `#[tool]` functions named.
///
/// ```ignore
/// escepine_toolhost::main!(text_stats, tools::url_normalize);
/// ```
///
/// expands to `fn main() -> std::process::ExitCode` calling [`serve`] with one
/// [`Registration`] per tool (each name is the type `#[tool]` defined beside the function).
#[cfg(feature = "host")]
#[macro_export]
macro_rules! main {
    ($($tool:path),+ $(,)?) => {
        fn main() -> ::std::process::ExitCode {
            $crate::serve(&[$($crate::Registration::of::<$tool>()),+])
        }
    };
}
