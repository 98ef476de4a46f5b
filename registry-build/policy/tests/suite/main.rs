//! The policy crate's tests: Cedar binding of records and schemas, approval, and the names a
//! record and a policy schema would both claim.

mod action_markers;
mod approval;
mod cedar_binding;
mod payload_bounds;
