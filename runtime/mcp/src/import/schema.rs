//! Schemas brought into the registration subset where that is mechanical, and what is left
//! to decide (see the [import documentation](super)).

use std::collections::BTreeSet;

use escepine_registry::schema::names;
use escepine_registry::schema::names::credential_word;
use escepine_registry::schema::subset::escape;
use serde_json::{Map, Value};

use super::model::Decision;

/// A schema brought into the subset where that is mechanical (see the module documentation);
/// `base` is its pointer in the record, for the notes.
pub fn normalize(
    schema: &Value,
    base: &str,
    notes: &mut Vec<String>,
    decisions: &mut Vec<Decision>,
) -> Value {
    let mut s = schema.clone();
    let Some(root) = s.as_object_mut() else {
        decisions.push(Decision::new(base, "not a JSON object; write the schema"));
        return s;
    };
    if let Some(draft) = root.get("$schema").and_then(Value::as_str) {
        if draft.trim_end_matches('#') != escepine_registry::schema::subset::DRAFT_2020_12 {
            notes.push(format!(
                "CHANGED {base}/$schema: `{draft}` dropped; the record is read as JSON Schema \
                 2020-12"
            ));
            root.remove("$schema");
        }
    }
    if let Some(defs) = root.remove("definitions") {
        notes.push(format!(
            "CHANGED {base}/definitions: renamed `$defs` (references rewritten)"
        ));
        let merged = root
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let (Some(into), Value::Object(from)) = (merged.as_object_mut(), defs) {
            for (k, v) in from {
                into.entry(k).or_insert(v);
            }
        }
        rewrite_refs(&mut s);
    }
    let mut walker = Normalizer {
        notes,
        decisions,
        input: base.starts_with("/input_schema"),
        base,
    };
    walker.node(&mut s, base);
    if let Some(Value::Object(defs)) = s.get_mut("$defs") {
        for (name, def) in defs.iter_mut() {
            walker.node(def, &format!("{base}/$defs/{}", escape(name)));
        }
    }
    if walker.input {
        recognised(&s, base, notes, decisions);
    }
    s
}

/// The credential-name decisions of `schema` (at `base`) that the registration rules take as a
/// recognised non-credential shape (a session's name, a pagination token, a user name to look
/// up): each becomes a note, as `escepine check` reports it, instead of a decision.
fn recognised(schema: &Value, base: &str, notes: &mut Vec<String>, decisions: &mut Vec<Decision>) {
    for r in names::recognised_properties(schema) {
        let at = format!("{base}{}", r.property.pointer);
        let before = decisions.len();
        decisions.retain(|d| d.pointer != at);
        if decisions.len() != before {
            notes.push(format!(
                "REVIEW {at}: `{}` is caught by the credential-name rule ({}), and is {} ({}: {}); \
                 it registers with a note",
                r.property.name,
                r.property.word,
                r.shape.what(),
                r.shape.rule().id(),
                r.because
            ));
        }
    }
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, sub) in m.iter_mut() {
                match (k.as_str(), sub) {
                    ("$ref", Value::String(r)) => {
                        if let Some(rest) = r.strip_prefix("#/definitions/") {
                            *r = format!("#/$defs/{rest}");
                        }
                    }
                    (_, sub) => rewrite_refs(sub),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

struct Normalizer<'n> {
    notes: &'n mut Vec<String>,
    decisions: &'n mut Vec<Decision>,
    /// The schema's own pointer (its root).
    base: &'n str,
    /// Whether this is the input schema (the credential-name rule applies).
    input: bool,
}

/// Keywords outside the subset that no mechanical rewrite removes.
const UNDECIDABLE: &[(&str, &str)] = &[
    ("oneOf", "a combinator"),
    ("anyOf", "a combinator"),
    ("allOf", "a combinator"),
    ("not", "a combinator"),
    ("if", "a conditional"),
    ("patternProperties", "an open set of names"),
    ("prefixItems", "a tuple"),
];

impl Normalizer<'_> {
    /// Normalise one schema node in place; returns whether it was nullable (its property
    /// becomes optional).
    fn node(&mut self, node: &mut Value, at: &str) -> bool {
        let nullable = self.collapse_null(node, at);
        let Some(obj) = node.as_object_mut() else {
            return nullable;
        };
        for (key, what) in UNDECIDABLE {
            if obj.contains_key(*key) {
                self.decisions.push(Decision::new(
                    &format!("{at}/{key}"),
                    &format!(
                        "{what} is outside the subset and has no mechanical rewrite; flatten \
                         the schema or split the tool"
                    ),
                ));
            }
        }
        let ty = obj.get("type").and_then(Value::as_str).map(str::to_string);
        if let Some(format) = obj
            .get("format")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            if ty.as_deref().is_some_and(|t| t != "string") {
                obj.remove("format");
                let mut note =
                    format!("CHANGED {at}/format: `{format}` dropped (formats apply to strings)");
                if let Some((min, max)) = integer_bounds(&format) {
                    if ty.as_deref() == Some("integer") {
                        if !obj.contains_key("minimum") {
                            obj.insert("minimum".into(), Value::from(min));
                        }
                        if let (Some(max), false) = (max, obj.contains_key("maximum")) {
                            obj.insert("maximum".into(), Value::from(max));
                        }
                        note.push_str("; its bounds kept as minimum/maximum");
                    }
                }
                self.notes.push(note);
            }
        }
        let objectish = ty.as_deref() == Some("object")
            || (ty.is_none() && obj.contains_key("properties") && !obj.contains_key("$ref"));
        if objectish {
            if ty.is_none() {
                obj.insert("type".into(), Value::from("object"));
                self.notes.push(format!(
                    "CHANGED {at}/type: `object` added (it has properties)"
                ));
            }
            let declared = obj
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty());
            match obj.get("additionalProperties") {
                // An object with declared properties and nothing said of others, or a root
                // declaring no properties (a tool taking no arguments): closed.
                None if declared || at == self.base => {
                    obj.insert("additionalProperties".into(), Value::Bool(false));
                    self.notes.push(format!(
                        "CHANGED {at}: closed (`additionalProperties: false`)"
                    ));
                }
                Some(Value::Bool(false)) => {}
                // A property-less object or an open one is a map of names the server accepts:
                // closing it to `{}` would let no value be sent at all.
                _ => self.decisions.push(Decision::new(
                    at,
                    "an open map (an object whose property names are not declared, such as \
                     headers or env) cannot be checked or authorized, and closing it to {} would \
                     let no value be sent: declare the properties agents may send (closed, \
                     `additionalProperties: false`), or remove it",
                )),
            }
            let mut optional = BTreeSet::new();
            if let Some(Value::Object(props)) = obj.get_mut("properties") {
                for (name, sub) in props.iter_mut() {
                    let here = format!("{at}/properties/{}", escape(name));
                    if let Some(word) = credential_word(name).filter(|_| self.input) {
                        self.decisions.push(Decision::new(
                            &here,
                            &format!(
                                "`{name}` is caught by the credential-name rule ({word}), and \
                                 the server receives the payload verbatim, so it cannot be \
                                 renamed: if it is a credential, remove it (a secret the server \
                                 needs is declared in auth.secrets and reaches it in its \
                                 environment); if it is not, say why on the property, \
                                 \"x-not-credential\": \"<why>\""
                            ),
                        ));
                    }
                    if self.node(sub, &here) {
                        optional.insert(name.clone());
                    }
                }
            }
            if let Some(Value::Array(required)) = obj.get_mut("required") {
                let before = required.len();
                required.retain(|r| r.as_str().is_none_or(|n| !optional.contains(n)));
                if required.len() != before {
                    self.notes.push(format!(
                        "CHANGED {at}/required: nullable properties made optional ({})",
                        optional.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
                if required.is_empty() {
                    obj.remove("required");
                }
            }
        }
        if ty.as_deref() == Some("array") {
            if let Some(items @ Value::Object(_)) = obj.get_mut("items") {
                self.node(items, &format!("{at}/items"));
            }
        }
        nullable
    }

    /// Turn a nullable schema into its non-null form; returns whether it was nullable.
    fn collapse_null(&mut self, node: &mut Value, at: &str) -> bool {
        let Some(obj) = node.as_object_mut() else {
            return false;
        };
        let mut nullable = false;
        if obj.remove("nullable") == Some(Value::Bool(true)) {
            nullable = true;
        }
        if let Some(Value::Array(types)) = obj.get("type") {
            if types.iter().any(|t| t == "null") {
                let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                nullable = true;
                match rest.len() {
                    0 => {}
                    1 => {
                        obj.insert("type".into(), rest[0].clone());
                    }
                    _ => {
                        obj.insert("type".into(), Value::Array(rest));
                    }
                }
            }
        }
        if let Some(Value::Array(values)) = obj.get_mut("enum") {
            let before = values.len();
            values.retain(|v| !v.is_null());
            if values.len() != before {
                nullable = true;
            }
        }
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = obj.get(key) else {
                continue;
            };
            let is_null = |b: &Value| {
                b.get("type") == Some(&Value::from("null")) || b.get("const") == Some(&Value::Null)
            };
            if branches.len() == 2 && branches.iter().filter(|b| is_null(b)).count() == 1 {
                let Some(other) = branches.iter().find(|b| !is_null(b)).cloned() else {
                    continue;
                };
                obj.remove(key);
                if let Value::Object(other) = other {
                    for (k, v) in other {
                        obj.entry(k).or_insert(v);
                    }
                }
                nullable = true;
            }
        }
        if nullable {
            self.notes.push(format!(
                "CHANGED {at}: nullable made non-null (an absent property stands for null)"
            ));
        }
        nullable
    }
}

/// The bounds a fixed-width integer `format` implies (no maximum where it exceeds `i64`).
fn integer_bounds(format: &str) -> Option<(i64, Option<i64>)> {
    Some(match format {
        "int8" => (i64::from(i8::MIN), Some(i64::from(i8::MAX))),
        "int16" => (i64::from(i16::MIN), Some(i64::from(i16::MAX))),
        "int32" => (i64::from(i32::MIN), Some(i64::from(i32::MAX))),
        "int64" => (i64::MIN, Some(i64::MAX)),
        "uint8" => (0, Some(i64::from(u8::MAX))),
        "uint16" => (0, Some(i64::from(u16::MAX))),
        "uint32" => (0, Some(i64::from(u32::MAX))),
        "uint64" | "uint" => (0, None),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nullable_fields_become_optional_and_objects_close() {
        let (mut notes, mut decisions) = (Vec::new(), Vec::new());
        let s = normalize(
            &json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "required": ["a", "b", "c"],
                "properties": {
                    "a": {"type": "string"},
                    "b": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                    "c": {"anyOf": [{"$ref": "#/definitions/Inner"}, {"type": "null"}],
                          "description": "inner"},
                },
                "definitions": {"Inner": {"properties": {"x": {"type": "number", "format": "double"}}}}
            }),
            "/input_schema",
            &mut notes,
            &mut decisions,
        );
        assert_eq!(
            s,
            json!({
                "type": "object",
                "required": ["a"],
                "properties": {
                    "a": {"type": "string"},
                    "b": {"type": "integer", "minimum": 0, "maximum": 4_294_967_295_i64},
                    "c": {"description": "inner", "$ref": "#/$defs/Inner"},
                },
                "additionalProperties": false,
                "$defs": {"Inner": {"properties": {"x": {"type": "number"}},
                                    "type": "object", "additionalProperties": false}}
            })
        );
        assert!(notes.iter().any(|n| n.contains("/input_schema/$schema")));
        assert!(notes.iter().any(|n| n.contains("made optional (b, c)")));
    }

    #[test]
    fn open_maps_and_combinators_are_left_for_review() {
        let (mut notes, mut decisions) = (Vec::new(), Vec::new());
        let input = json!({
            "type": "object",
            "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
            }
        });
        let s = normalize(&input, "/input_schema", &mut notes, &mut decisions);
        assert_eq!(
            s["properties"]["labels"]["additionalProperties"],
            json!({"type": "string"})
        );
        assert!(s["properties"]["either"].get("oneOf").is_some());
        let at: Vec<&str> = decisions.iter().map(|d| d.pointer.as_str()).collect();
        assert!(at.contains(&"/input_schema/properties/labels"), "{at:?}");
        assert!(
            at.contains(&"/input_schema/properties/either/oneOf"),
            "{at:?}"
        );
    }

    #[test]
    fn recognised_shapes_are_notes_not_decisions() {
        let schema = json!({"type": "object", "properties": {
            "session_name": {"type": "string"},
            "next_token": {"type": "string"},
            "limit": {"type": "integer"},
            "session_id": {"type": "string"}
        }});
        let (mut notes, mut decisions) = (Vec::new(), Vec::new());
        normalize(&schema, "/input_schema", &mut notes, &mut decisions);
        let at: Vec<&str> = decisions.iter().map(|d| d.pointer.as_str()).collect();
        assert_eq!(at, ["/input_schema/properties/session_id"], "{decisions:?}");
        for (pointer, rule) in [
            (
                "/input_schema/properties/session_name",
                "input/recognised-session-name",
            ),
            (
                "/input_schema/properties/next_token",
                "input/recognised-pagination-token",
            ),
        ] {
            assert!(
                notes
                    .iter()
                    .any(|n| n.starts_with(&format!("REVIEW {pointer}:")) && n.contains(rule)),
                "{notes:?}"
            );
        }
    }

    #[test]
    fn credential_names_are_noted_in_inputs_only() {
        let schema = json!({"type": "object", "properties": {"api_key": {"type": "string"}}});
        let (mut notes, mut decisions) = (Vec::new(), Vec::new());
        normalize(&schema, "/input_schema", &mut notes, &mut decisions);
        assert_eq!(decisions.len(), 1);
        assert_eq!(decisions[0].pointer, "/input_schema/properties/api_key");
        assert!(decisions[0].what.contains("x-not-credential"));
        let (mut notes, mut decisions) = (Vec::new(), Vec::new());
        normalize(&schema, "/output_schema", &mut notes, &mut decisions);
        assert!(decisions.is_empty());
    }

    #[test]
    fn a_property_less_object_is_a_decision_not_closed() {
        let (mut notes, mut decisions) = (Vec::new(), Vec::new());
        let s = normalize(
            &json!({"type": "object", "properties": {"headers": {"type": "object"}}}),
            "/input_schema",
            &mut notes,
            &mut decisions,
        );
        assert_eq!(s["properties"]["headers"], json!({"type": "object"}));
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        assert_eq!(decisions[0].pointer, "/input_schema/properties/headers");
    }
}
