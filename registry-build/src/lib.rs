//! The `build.rs` code generator, in the style of `prost-build`.
//!
//! [`Builder`] loads a registry (every registration rule, Cedar strict validation), prints
//! `cargo:rerun-if-changed` for every file it read, and writes one formatted Rust file into
//! `OUT_DIR`, which the crate pulls in with [`escepine_contract::include_tools!`].
//! [`generate`] produces the same text from a loaded [`Registry`](escepine_registry::registry::Registry) without cargo (tests,
//! benchmarks, tools).
//!
//! The generated file holds, for a registry with a tool `firecrawl_scrape`:
//!
//! - `pub mod firecrawl_scrape`: the payload type `Input`, the output type `Output` and the
//!   types nested in them, from one typify type space over both schemas
//!   (`#[serde(deny_unknown_fields)]` at every depth, `format: uri` strings as [`url::Url`],
//!   bounded strings as plain `String`: the gates check bounds), the canonical schema texts
//!   `INPUT_SCHEMA` and `OUTPUT_SCHEMA` (the very documents both gates validate against), and
//!   the marker `Tool` implementing [`escepine_contract::Tool`] with the whole contract as
//!   constants;
//! - `pub mod error`: the one conversion error type of every tool's enums;
//! - `pub mod actions`: one marker type per action of the Cedar schema (class groups, custom
//!   groups, one per tool, and every action the user's `.cedarschema` declares, which Rust-first
//!   tools name), each implementing [`escepine_contract::CedarAction`];
//! - `pub enum ToolId`: every tool id, with `as_str`, `ALL`, `contract` and `FromStr`;
//! - `pub trait Client`: one typed method per tool, implemented for every
//!   [`escepine_contract::Invoke`] type, so a renamed or retyped field is a compile error at the
//!   call site;
//! - with SOPs ([`Builder::sops`]), `pub mod sops`: per SOP a module with a `Sop` marker
//!   ([`escepine_contract::SopDefinition`]), a `State` enum with the declared transitions, and one
//!   step type per execution state ([`escepine_contract::SopStep`]) whose `Tool` is the bound
//!   tool, so a step cannot be handed another tool's payload;
//! - `REGISTRY`: the registry itself ([`escepine_contract::EmbeddedRegistry`]), every input
//!   file embedded with `include_str!`, which [`escepine_policy::embedded::load`] turns back into the
//!   [`Registry`](escepine_registry::registry::Registry) the runtime builds from, so the program needs no records directory at run time;
//!   and `SOURCES` ([`escepine_contract::BuildSources`]), the paths of the build's inputs.
//!
//! The generated code needs only `serde`, `serde_json` and `escepine-contract` (or the crate
//! [`Builder::contract_path`] names) in the user's crate.

mod actions;
mod builder;
mod client;
mod contract;
mod docs;
mod embed;
mod error;
mod generate;
mod idents;
mod linked;
mod literal;
mod options;
mod sop;
mod string_enums;
mod types;

pub use builder::Builder;
pub use error::BuildError;
pub use generate::generate;
#[cfg(test)]
pub(crate) use generate::generate_records;
pub use options::{DEFAULT_CONTRACT_PATH, DEFAULT_FILE_NAME};

#[cfg(test)]
mod tests;
