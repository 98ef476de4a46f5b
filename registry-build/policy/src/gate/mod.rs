//! The structural gates: the input gate before authorization, the output gate before commit.
//!
//! Both validate against the record's own schema — the very document the record registered —
//! compiled once at start-up with `format` validation on.

mod dialect;
mod schema;

pub use dialect::drop_null_optionals;
pub use schema::{violation_list, SchemaGate, Violation};
