//! Shared walking helpers for the exporters: `$ref` inlining and problems with a location.
//!
//! The exporters only see records that passed the registration rules, so a schema here is
//! within the subset of design.md: one `type` (or an `enum`/`const` implying it), local
//! `$ref` into the root's `$defs` (never recursive), closed objects. Anything else is reported
//! as a [`Problem`], never a panic.

use escepine_registry::schema::walk::JsonType;
use serde_json::{Map, Value};

use super::describe::Lost;
use super::format::{ExportError, Format};

/// Annotation keywords of the subset (they never change which instances are valid).
pub(crate) const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// A problem at a place in the input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// JSON pointer into the input schema.
    pub pointer: String,
    /// What cannot be exported.
    pub detail: String,
}

impl Problem {
    pub(crate) fn new(pointer: &str, detail: impl Into<String>) -> Self {
        Self {
            pointer: if pointer.is_empty() {
                "/".to_string()
            } else {
                pointer.to_string()
            },
            detail: detail.into(),
        }
    }

    /// As an [`ExportError::Inexpressible`] of `tool` for `format`.
    pub(crate) fn into_error(self, format: Format, tool: &str) -> ExportError {
        ExportError::Inexpressible {
            format,
            tool: tool.to_string(),
            pointer: self.pointer,
            detail: self.detail,
        }
    }
}

/// Escape a JSON pointer token.
pub(crate) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Whether `key` is an annotation (including our `x-` extensions).
pub(crate) fn is_annotation(key: &str) -> bool {
    ANNOTATIONS.contains(&key) || key.starts_with("x-")
}

/// The JSON type of a schema without `$ref`: its `type`, or the common type of its
/// `enum`/`const` values (an integer fits a number).
pub(crate) fn json_type(node: &Map<String, Value>) -> Option<JsonType> {
    if let Some(t) = node.get("type") {
        return t.as_str().and_then(JsonType::parse);
    }
    if let Some(c) = node.get("const") {
        return JsonType::of_value(c);
    }
    let values = node.get("enum")?.as_array()?;
    let mut ty = JsonType::of_value(values.first()?)?;
    for v in values {
        let t = JsonType::of_value(v)?;
        if t.fits(ty) {
            continue;
        }
        if ty.fits(t) {
            ty = t;
        } else {
            return None;
        }
    }
    Some(ty)
}

/// The names an object schema lists in `required`.
pub(crate) fn required(node: &Map<String, Value>) -> Vec<&str> {
    node.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The definition a local `$ref` names.
pub(crate) fn definition<'a>(root: &'a Value, reference: &str) -> Option<&'a Map<String, Value>> {
    let name = reference.strip_prefix("#/$defs/")?;
    let name = name.replace("~1", "/").replace("~0", "~");
    root.get("$defs")?.get(&name)?.as_object()
}

/// The schema `node` (which has a `$ref`) means, as one object without `$ref`: the definition
/// with the node's own keywords laid over it (following chains of references).
///
/// JSON Schema applies a `$ref` and its sibling keywords together. Annotations beside the
/// reference win over the definition's (they describe this use); bounds combine into the
/// stricter one; `enum`s intersect; `required` lists unite. Any other assertion that differs
/// between the two cannot be folded into one schema and is a [`Problem`].
pub(crate) fn inline_ref(
    root: &Value,
    node: &Map<String, Value>,
    at: &str,
) -> Result<Map<String, Value>, Problem> {
    let mut cur = node.clone();
    for _ in 0..64 {
        let Some(reference) = cur.shift_remove("$ref") else {
            return Ok(cur);
        };
        let def = reference
            .as_str()
            .and_then(|r| definition(root, r))
            .ok_or_else(|| {
                Problem::new(
                    at,
                    format!("`$ref` {reference} names no entry of the root's `$defs`"),
                )
            })?;
        let mut merged = def.clone();
        for (key, value) in cur {
            let combined = match merged.get(&key) {
                None => value,
                Some(old) => combine(&key, old, value).map_err(|d| Problem::new(at, d))?,
            };
            merged.insert(key, combined);
        }
        cur = merged;
    }
    Err(Problem::new(
        at,
        "the `$ref` chain does not end (recursive definitions are outside the subset)",
    ))
}

fn combine(key: &str, def: &Value, node: Value) -> Result<Value, String> {
    if *def == node || is_annotation(key) {
        return Ok(node);
    }
    let num = |v: &Value| v.as_f64();
    match key {
        "minLength" | "minItems" | "minimum" => Ok(match (num(def), num(&node)) {
            (Some(a), Some(b)) if a > b => def.clone(),
            _ => node,
        }),
        "maxLength" | "maxItems" | "maximum" => Ok(match (num(def), num(&node)) {
            (Some(a), Some(b)) if a < b => def.clone(),
            _ => node,
        }),
        "enum" => {
            let (Some(a), Some(b)) = (def.as_array(), node.as_array()) else {
                return Ok(node);
            };
            let both: Vec<Value> = b.iter().filter(|v| a.contains(v)).cloned().collect();
            if both.is_empty() {
                Err("the `enum` beside `$ref` shares no value with the definition's: no value is valid".to_string())
            } else {
                Ok(Value::Array(both))
            }
        }
        "required" => {
            let mut all: Vec<Value> = def.as_array().cloned().unwrap_or_default();
            for v in node.as_array().into_iter().flatten() {
                if !all.contains(v) {
                    all.push(v.clone());
                }
            }
            Ok(Value::Array(all))
        }
        _ => Err(format!(
            "`{key}` beside `$ref` differs from the definition's; JSON Schema applies both, which one schema without `$ref` cannot say"
        )),
    }
}

/// `schema` without `x-` keywords at any schema position (a property *named* `x-…` stays);
/// `x-authorize-each: true` moves into the description.
pub(crate) fn without_extensions(schema: &Value) -> Value {
    let Some(obj) = schema.as_object() else {
        return schema.clone();
    };
    let mut lost = Lost::new();
    let mut out = Map::new();
    for (key, value) in obj {
        match key.as_str() {
            "x-authorize-each" => lost.keyword(key, value),
            k if k.starts_with("x-") => {}
            "properties" | "$defs" => {
                let map = value
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), without_extensions(v)))
                            .collect::<Map<_, _>>()
                    })
                    .map_or_else(|| value.clone(), Value::Object);
                out.insert(key.clone(), map);
            }
            "items" => {
                out.insert(key.clone(), without_extensions(value));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if !lost.is_empty() {
        if let Some(d) = lost.describe(obj.get("description").and_then(Value::as_str)) {
            out.insert("description".into(), Value::from(d));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inline_lays_annotations_over_and_keeps_the_stricter_bound() {
        let root = json!({"$defs": {
            "a": {"$ref": "#/$defs/b", "description": "from a"},
            "b": {"type": "string", "maxLength": 10, "minLength": 2}}});
        let node = json!({"$ref": "#/$defs/a", "maxLength": 20, "minLength": 3, "title": "T"});
        let got = inline_ref(&root, node.as_object().unwrap(), "/p").unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"type": "string", "maxLength": 10, "minLength": 3, "description": "from a", "title": "T"})
        );
    }

    #[test]
    fn dangling_and_conflicting_refs_are_problems() {
        let root = json!({"$defs": {"b": {"type": "string", "pattern": "^a"}}});
        let dangling = json!({"$ref": "#/$defs/zz"});
        assert!(inline_ref(&root, dangling.as_object().unwrap(), "/p").is_err());
        let conflict = json!({"$ref": "#/$defs/b", "pattern": "^b"});
        let e = inline_ref(&root, conflict.as_object().unwrap(), "/p").unwrap_err();
        assert!(e.detail.contains("pattern"), "{e:?}");
    }
}
