//! The tool registry of Escepine: the record and SOP model, the deployment envelope, and every
//! registration rule that needs no policy, each problem reported with its file, JSON pointer
//! and rule ([`diagnostic`]).
//!
//! Tool records (`tools/records/*.json`) are read and checked by [`registry::check`] (or
//! [`registry::load`]) from the [`registry::Sources`] a caller names; SOP files ([`sop`]) are
//! checked against the records. The Cedar binding of a registry, the authorizer and the gates are
//! `escepine_policy`'s; the export formats `escepine_export`'s; the `build.rs` code generator
//! `escepine_registry_build`'s.
//!
//! A [`record::ToolRecord`] and a [`registry::Registry`] are read through accessors and made only
//! by registration. Tests make them with the `testing` feature's `testing::RecordBuilder`, which
//! writes a record file and registers it by the same rules.
//!
//! The JSON Schema meta-validation of the schemas a record carries needs `jsonschema` (default
//! feature `schema-validation`); without it (the proc macros, whose schemas are generated from
//! Rust types) the subset rules still apply, and the registry that loads the described record
//! at run time applies the meta-validation.

#![deny(missing_docs)]

#[cfg(feature = "tokens")]
pub mod contract_tokens;
pub mod diagnostic;
pub mod egress;
pub mod endpoint;
pub mod envelope;
pub mod fields;
pub mod files;
pub mod host_path;
pub mod isolation;
pub mod labels;
pub mod locate;
pub mod record;
pub mod registry;
pub mod remote;
pub mod rule;
pub mod rules;
pub mod rust_names;
pub mod schema;
pub mod sop;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod urls;
