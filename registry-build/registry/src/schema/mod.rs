//! JSON Schema handling: the subset rules, credential-free names, and walking helpers.

pub mod meta;
pub mod names;
pub mod subset;
pub mod visit;
pub mod walk;

pub use walk::JsonType;
