//! The build helper of a crate of macro tools (feature `build`), for its `build.rs`: the one
//! code generator, `registry_build::Builder`, re-exported.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), escepine_toolhost::build::BuildError> {
//!     escepine_toolhost::build::Builder::new()
//!         .records("../records/url_normalize.json") // the records implemented record-first
//!         .policies("policies") // *.cedar and the .cedarschema declaring Rust-first actions
//!         .envelope("../envelope.json")
//!         .workspace_root("../..")
//!         .compile()
//! }
//! ```
//!
//! ```ignore
//! // src/main.rs
//! mod registry {
//!     escepine_contract::include_tools!();
//! }
//! ```
//!
//! The builder loads the records, the policies and the envelope with every registration rule
//! and Cedar strict validation (a rejected record fails the build with its diagnostics) and
//! writes one module per record (the types a record-first `#[tool]` must take and return),
//! `actions` with a marker for every action of the Cedar schema — those the crate's
//! `.cedarschema` declares for its Rust-first tools included, so an undeclared action does not
//! compile — `ToolId`, `Client`, `REGISTRY` and `SOURCES`, the inputs of the build, which the
//! tests `#[tool]` generates check against.

pub use registry_build::codegen::{BuildError, Builder, DEFAULT_FILE_NAME};
