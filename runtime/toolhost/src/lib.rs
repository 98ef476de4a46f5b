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
//! With the `build` feature, [`build::Builder`] (for the crate's `build.rs`) compiles the
//! records the crate implements record-first and generates a Cedar action marker for every
//! action of the crate's `.cedarschema`, which Rust-first tools name. With the `check` feature,
//! [`check::rust_first`] is what the test generated for each Rust-first tool runs.

#![deny(missing_docs)]

#[cfg(feature = "build")]
pub mod build;
pub mod check;
mod registration;
#[cfg(feature = "host")]
mod serve;

pub use escepine_contract::{CallContext, ToolError, ToolFn};
pub use registration::{Failure, Registration};
#[cfg(feature = "host")]
pub use serve::{serve, Host};

/// Exit status of a payload that does not deserialise into the tool's input type (`EX_DATAERR`).
pub const EXIT_BAD_PAYLOAD: u8 = 65;
/// Exit status of a permanent tool failure.
pub const EXIT_PERMANENT: u8 = 1;
/// Exit status of bad usage: no tool id, an unknown one, a bad option (`EX_USAGE`).
pub const EXIT_USAGE: u8 = 64;
/// Exit status of a failure of the host itself: an output that does not serialise, two tools with
/// one id, no runtime (`EX_SOFTWARE`).
pub const EXIT_INTERNAL: u8 = 70;
/// Exit status of a transient tool failure (`EX_TEMPFAIL`): the runtime may retry.
pub const EXIT_TRANSIENT: u8 = 75;

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
