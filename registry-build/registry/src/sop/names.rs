//! The Rust names the generated code gives an SOP's states.

/// Names the generated code defines inside an SOP's module; no state may map to them.
pub const RESERVED_TYPE_NAMES: &[&str] = &["State", "Sop", "Self"];

/// The Rust type name of a state (`read_page` → `ReadPage`), as the generated code spells its
/// `State` variant and its step type.
pub fn type_name(state: &str) -> String {
    crate::rust_names::upper_camel(state)
}
