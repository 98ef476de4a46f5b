//! The tool-record compiler of Escepine.
//!
//! Tool records (`tools/records/*.json`) are checked against every registration rule
//! ([`Rule`]), bound to Cedar (a generated schema, strict validation of the policies), and — with
//! the default `codegen` feature — compiled from `build.rs` into typed payload and output types,
//! [`escepine_contract::Tool`] implementations, Cedar action markers and a typed client:
//!
#![cfg_attr(feature = "codegen", doc = "```no_run")]
#![cfg_attr(not(feature = "codegen"), doc = "```ignore")]
//! // build.rs
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     registry_build::Builder::new()
//!         .records("../tools/records")
//!         .policies("../tools/policies")
//!         .envelope("../tools/envelope.json")
//!         .compile()?;
//!     Ok(())
//! }
//! ```
//!
//! Without `codegen`, the crate gives the runtime and the macros the same rules through
//! [`load`] and [`check_records`].
//!
//! SOP files ([`sop`]) are checked against the records by [`Sources::sops`] (and
//! `Builder::sops`), and compiled into typed state machines by the `Builder`. A checked record
//! is written as a tool definition for an agent ecosystem (MCP, OpenAI, Anthropic, Gemini) by
//! [`export`].
//!
//! A [`ToolRecord`] and a [`Registry`] are read through accessors and made only by
//! registration ([`load`], [`check_record`], [`embedded::load`]). Tests make them with the
//! `testing` feature's `testing::RecordBuilder` and `testing::RegistryBuilder`, which write a
//! record file and register it by the same rules.

#![deny(missing_docs)]

pub mod authorize;
pub mod cedar;
#[cfg(feature = "codegen")]
pub mod codegen;
#[cfg(feature = "tokens")]
pub mod contract_tokens;
pub mod diagnostic;
pub mod egress;
pub mod embedded;
pub mod endpoint;
pub mod envelope;
pub mod export;
mod fields;
mod files;
pub mod gate;
pub mod host_path;
mod locate;
pub mod policy_tests;
pub mod record;
#[cfg(test)]
mod refusal_tests;
pub mod registry;
pub mod rule;
pub mod rules;
pub mod rust_names;
pub mod schema;
pub mod sop;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod urls;

#[cfg(feature = "codegen")]
pub use codegen::{BuildError, Builder};
#[cfg(feature = "tokens")]
pub use contract_tokens::{ContractTokens, SchemaTexts};
pub use diagnostic::{Diagnostic, Diagnostics, Severity, SourceFile};
pub use egress::{EgressEntry, EgressHost};
pub use envelope::{Envelope, ImageLimits, ImageSourceEntry};
pub use record::{
    CompensationSpec, CredentialExemption, EndpointSpec, ResolvedCommand, SandboxProfile,
    ToolRecord,
};
pub use registry::{check_record, check_records, load, Registry, Sources};
pub use rule::Rule;
/// The record rules under their former name.
pub use rules::record as record_check;
