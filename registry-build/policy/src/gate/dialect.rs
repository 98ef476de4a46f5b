//! The documented OpenAI-strict dialect mapping.
//!
//! OpenAI's strict function calling makes every property required and optional ones nullable
//! (`[T, "null"]`). A proposal in that dialect carries `null` for an optional field it leaves
//! out. When the caller asks for the mapping, such a `null` means "absent" and is removed before
//! the input gate. Nothing else is changed: a `null` for a required field, or anywhere the
//! schema does not make the property optional, still fails the gate.

use serde_json::Value;

use escepine_registry::schema::walk::{self, JsonType};

/// Remove `null` values of optional properties, at every depth the schema describes.
pub fn drop_null_optionals(schema: &Value, value: &mut Value) {
    visit(schema, schema, value, 0);
}

fn visit(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    let Some(s) = walk::resolve(root, schema) else {
        return;
    };
    match (walk::type_of(root, s), value) {
        (Some(JsonType::Object), Value::Object(map)) => {
            for (name, sub, required) in walk::properties(root, s) {
                match map.get_mut(name) {
                    Some(Value::Null) if !required => {
                        map.remove(name);
                    }
                    Some(v) => visit(root, sub, v, depth + 1),
                    None => {}
                }
            }
        }
        (Some(JsonType::Array), Value::Array(items)) => {
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    visit(root, item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nulls_of_optional_fields_become_absent_and_nothing_else_changes() {
        let schema = json!({"type": "object", "additionalProperties": false, "required": ["q"],
            "properties": {"q": {"type": "string"}, "n": {"type": "integer"},
                "o": {"type": "object", "additionalProperties": false, "required": ["a"],
                      "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}}});
        let mut v = json!({"q": null, "n": null, "o": {"a": null, "b": null}});
        drop_null_optionals(&schema, &mut v);
        assert_eq!(v, json!({"q": null, "o": {"a": null}}));
    }
}
