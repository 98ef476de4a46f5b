//! Which parts of a payload carry URLs Cedar authorizes one at a time (`context.url`).
//!
//! A request authorizes one URL when the tool's payload has exactly one `format: uri` string
//! outside any list (the single-URL tool), or for each element of a list marked
//! `"x-authorize-each": true` (the bulk tool: one request per element).

use serde_json::Value;

use crate::schema::walk::{self, JsonType};

/// The per-URL shape of an input schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerUrl {
    /// The pointer of the one `format: uri` string outside lists, and whether it is always
    /// present; `None` when there are zero or several such strings.
    pub single: Option<(String, bool)>,
    /// Pointers of the lists marked `x-authorize-each` (their elements are URLs).
    pub each: Vec<String>,
}

impl PerUrl {
    /// Whether some request of this tool carries `context.url`.
    pub fn has_url(&self) -> bool {
        self.single.is_some() || !self.each.is_empty()
    }

    /// Whether every request of this tool carries `context.url` (so it is declared required).
    pub fn url_always(&self) -> bool {
        self.each.is_empty() && self.single.as_ref().is_some_and(|(_, always)| *always)
    }
}

/// Analyse an input schema that passed the subset rules.
pub fn per_url(input_schema: &Value) -> PerUrl {
    let mut singles = Vec::new();
    let mut each = Vec::new();
    visit(
        input_schema,
        input_schema,
        String::new(),
        true,
        &mut singles,
        &mut each,
        0,
    );
    PerUrl {
        single: if singles.len() == 1 {
            singles.pop()
        } else {
            None
        },
        each,
    }
}

/// Whether a (resolved) schema is a `format: uri` string.
pub fn is_uri_string(root: &Value, schema: &Value) -> bool {
    walk::resolve(root, schema).is_some_and(|s| {
        walk::type_of(root, s) == Some(JsonType::String)
            && s.get("format").and_then(Value::as_str) == Some("uri")
    })
}

fn visit(
    root: &Value,
    schema: &Value,
    pointer: String,
    always: bool,
    singles: &mut Vec<(String, bool)>,
    each: &mut Vec<String>,
    depth: usize,
) {
    if depth > 32 {
        return;
    }
    let Some(s) = walk::resolve(root, schema) else {
        return;
    };
    match walk::type_of(root, s) {
        Some(JsonType::String) if is_uri_string(root, s) => singles.push((pointer, always)),
        Some(JsonType::Array) if s.get("x-authorize-each") == Some(&Value::Bool(true)) => {
            each.push(pointer);
        }
        Some(JsonType::Object) => {
            for (name, sub, req) in walk::properties(root, s) {
                let p = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                visit(root, sub, p, always && req, singles, each, depth + 1);
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
    fn single_url_tool() {
        let s = json!({"type":"object","additionalProperties":false,"required":["url"],
            "properties":{"url":{"type":"string","format":"uri"}}});
        let p = per_url(&s);
        assert_eq!(p.single, Some(("/url".to_string(), true)));
        assert!(p.url_always());
    }

    #[test]
    fn bulk_tool_and_unmarked_list() {
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "urls":{"type":"array","x-authorize-each":true,"items":{"type":"string","format":"uri"}},
            "more":{"type":"array","items":{"type":"string","format":"uri"}}}});
        let p = per_url(&s);
        assert_eq!(p.single, None);
        assert_eq!(p.each, vec!["/urls".to_string()]);
        assert!(p.has_url() && !p.url_always());
    }

    #[test]
    fn two_uris_are_not_single() {
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "a":{"type":"string","format":"uri"},"b":{"$ref":"#/$defs/U"}},
            "$defs":{"U":{"type":"string","format":"uri"}}});
        assert_eq!(per_url(&s), PerUrl::default());
    }
}
