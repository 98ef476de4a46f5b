//! The Rust names the generated code gives an SOP's states.

/// Names the generated code defines inside an SOP's module; no state may map to them.
pub const RESERVED_TYPE_NAMES: &[&str] = &["State", "Sop", "Self"];

/// The Rust type name of a state (`read_page` → `ReadPage`), as the generated code spells its
/// `State` variant and its step type.
pub fn type_name(state: &str) -> String {
    let mut out = String::with_capacity(state.len());
    let mut upper = true;
    for c in state.chars() {
        if c == '_' || c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}
