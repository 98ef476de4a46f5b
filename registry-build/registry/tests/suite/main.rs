//! The registry crate's tests: one fixture per registration rule, the record format's JSON
//! Schema, credential names, egress and image rules — all without Cedar.

mod credential_names;
mod egress_rules;
mod image_rules;
mod isolation_rules;
mod label_rules;
mod record_schema;
mod remote_rules;
mod rules;
