//! JSON pointers in SOP files: well-formed ones, and the property pointers of a schema (for
//! did-you-mean).

use serde_json::Value;

use crate::schema::subset::escape;
use crate::schema::walk::{self, JsonType};

/// Whether `p` is a JSON pointer (empty, or `/`-separated tokens with only `~0`/`~1` escapes).
pub(super) fn is_pointer(p: &str) -> bool {
    if p.is_empty() {
        return true;
    }
    p.starts_with('/') && {
        let b = p.as_bytes();
        b.iter()
            .enumerate()
            .all(|(i, c)| *c != b'~' || matches!(b.get(i + 1), Some(b'0' | b'1')))
    }
}

/// Every property pointer of a schema (through objects, not lists), for did-you-mean.
pub(super) fn field_pointers(root: &Value) -> Vec<String> {
    fn visit(root: &Value, s: &Value, at: String, out: &mut Vec<String>, depth: usize) {
        if depth > 8 {
            return;
        }
        for (name, sub, _) in walk::properties(root, s) {
            let p = format!("{at}/{}", escape(name));
            out.push(p.clone());
            if walk::type_of(root, sub) == Some(JsonType::Object) {
                visit(root, sub, p, out, depth + 1);
            }
        }
    }
    let mut out = Vec::new();
    visit(root, root, String::new(), &mut out, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_pointers() {
        assert!(
            is_pointer("") && is_pointer("/a/b~1c~0") && !is_pointer("a") && !is_pointer("/a~2")
        );
    }
}
