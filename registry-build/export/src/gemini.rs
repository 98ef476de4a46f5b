//! Gemini function declarations: `{"name", "description", "parameters"}`, `parameters` in
//! Gemini's OpenAPI 3.0 `Schema` subset.
//!
//! Rules relied on (Gemini API reference, `FunctionDeclaration` and `Schema` — "Represents a
//! select subset of an OpenAPI 3.0 schema object" — as published in the `google-genai` SDK
//! type documentation, and the function-calling guide):
//! - `name`: "Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain
//!   underscores, dots and dashes, with a maximum length of 64" ([`NAME_RULE`]);
//! - `description` of the function: always given (the record's, which registration keeps
//!   non-empty);
//! - `parameters`: "Parameter names must start with a letter or an underscore and must only
//!   contain chars a-z, A-Z, 0-9, or underscores with a maximum length of 64"
//!   ([`PARAMETER_RULE`], checked on the top-level properties); "for function with no
//!   parameters, this can be left unset" — and an OBJECT with no properties is refused by the
//!   API ("parameters.properties: should be non-empty for OBJECT type", reported in many client
//!   issues), so a tool without input properties has no `parameters`;
//! - `Schema` fields: `type`, `format`, `title`, `description`, `nullable`, `enum`, `items`,
//!   `minItems`, `maxItems`, `properties`, `required`, `minProperties`, `maxProperties`,
//!   `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`, `example`, `anyOf`,
//!   `propertyOrdering`, `default`. Nothing else: no `additionalProperties` (the API answers
//!   "Unknown name \"additionalProperties\""), `$ref`, `$defs`, `const`, `$schema`,
//!   `examples`, `x-…`. Every `$ref` is therefore inlined and every schema carries a `type`
//!   (lower-case, as in the function-calling guide's JSON examples);
//! - `enum`: "Possible values of the element of Type.STRING with enum format", i.e. strings,
//!   marked `"format": "enum"`; an integer, number or boolean enum is dropped and described;
//! - `format`: with the Gemini Developer API a string format "must be either 'enum' or
//!   'date-time', otherwise requests will fail" (Firebase AI Logic `Schema` reference), so
//!   every other format (`uri`, `email`, …) moves into the description.
//!
//! A schema the subset cannot express at all (an empty nested object, which the API refuses;
//! a `$ref` whose sibling assertions differ from its definition's) is declared through the
//! documented alternative instead: `parametersJsonSchema` ("Describes the parameters to the
//! function in JSON Schema format. The schema must describe an object where the properties are
//! the parameters to the function … This field is mutually exclusive with `parameters`"), with
//! the registered schema minus our `x-` extensions ([`json_schema_tool`]).

use escepine_registry::record::ToolRecord;
use escepine_registry::schema::walk::JsonType;
use serde_json::{json, Map, Value};

use super::describe::Lost;
use super::format::{name_fits, ExportError, Format};
use super::node::{self, escape, Problem};

/// Gemini's rule for function names.
pub const NAME_RULE: &str = "^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$";

/// Gemini's rule for parameter names.
pub const PARAMETER_RULE: &str = "^[a-zA-Z_][a-zA-Z0-9_]{0,63}$";

/// The string formats Gemini accepts (besides `enum`, which marks string enums).
pub const FORMATS: [&str; 1] = ["date-time"];

/// Whether `name` is a valid Gemini function name ([`NAME_RULE`]).
pub fn name_ok(name: &str) -> bool {
    let first = |c: char| c.is_ascii_alphabetic() || c == '_';
    let rest = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    name_fits(name, 64, first, rest)
}

/// Whether `name` is a valid Gemini parameter name ([`PARAMETER_RULE`]).
pub fn parameter_ok(name: &str) -> bool {
    let first = |c: char| c.is_ascii_alphabetic() || c == '_';
    let rest = |c: char| c.is_ascii_alphanumeric() || c == '_';
    name_fits(name, 64, first, rest)
}

/// The Gemini function declaration of `record`, with `parameters` in the OpenAPI subset (or,
/// when the subset cannot express the schema, `parametersJsonSchema`).
///
/// # Errors
/// The tool id or a parameter name breaks Gemini's rules.
pub fn tool(record: &ToolRecord) -> Result<Value, ExportError> {
    match subset_tool(record) {
        Err(ExportError::Inexpressible { .. }) => json_schema_tool(record),
        other => other,
    }
}

/// The Gemini function declaration of `record` with `parametersJsonSchema`: the registered
/// input schema, minus our `x-` extensions.
///
/// # Errors
/// The tool id or a parameter name breaks Gemini's rules.
pub fn json_schema_tool(record: &ToolRecord) -> Result<Value, ExportError> {
    check_names(record)?;
    Ok(json!({
        "name": record.tool_id(),
        "description": record.description(),
        "parametersJsonSchema": node::without_extensions(record.input_schema()),
    }))
}

/// The tool id and the top-level property names against Gemini's rules.
fn check_names(record: &ToolRecord) -> Result<(), ExportError> {
    let format = Format::Gemini;
    if !name_ok(record.tool_id()) {
        return Err(ExportError::ToolName {
            format,
            tool: record.tool_id().to_string(),
            rule: NAME_RULE,
        });
    }
    let props = record
        .input_schema()
        .get("properties")
        .and_then(Value::as_object);
    let mut problems: Vec<ExportError> = props
        .into_iter()
        .flat_map(Map::keys)
        .filter(|name| !parameter_ok(name))
        .map(|name| ExportError::ParameterName {
            format,
            tool: record.tool_id().to_string(),
            name: name.clone(),
            pointer: format!("/properties/{}", escape(name)),
            rule: PARAMETER_RULE,
        })
        .collect();
    match problems.len() {
        0 => Ok(()),
        1 => Err(problems.remove(0)),
        _ => Err(ExportError::Several(problems)),
    }
}

/// The declaration with `parameters` in the OpenAPI subset.
fn subset_tool(record: &ToolRecord) -> Result<Value, ExportError> {
    check_names(record)?;
    let format = Format::Gemini;
    let tool = record.tool_id().to_string();
    let root = &record.input_schema();
    let obj = root.as_object().ok_or_else(|| {
        Problem::new("", "the input schema is not a JSON object").into_error(format, &tool)
    })?;
    let obj = if obj.contains_key("$ref") {
        node::inline_ref(root, obj, "").map_err(|p| p.into_error(format, &tool))?
    } else {
        obj.clone()
    };
    let props = obj.get("properties").and_then(Value::as_object);
    let mut declaration = Map::new();
    declaration.insert("name".into(), Value::from(tool.clone()));
    declaration.insert(
        "description".into(),
        Value::from(record.description().to_string()),
    );
    if props.is_some_and(|p| !p.is_empty()) {
        let parameters = Subset { root }
            .node(&obj, "")
            .map_err(|p| p.into_error(format, &tool))?;
        declaration.insert("parameters".into(), Value::Object(parameters));
    }
    Ok(Value::Object(declaration))
}

struct Subset<'a> {
    root: &'a Value,
}

impl Subset<'_> {
    fn node(&self, node: &Map<String, Value>, at: &str) -> Result<Map<String, Value>, Problem> {
        if node.contains_key("$ref") {
            let inlined = node::inline_ref(self.root, node, at)?;
            return self.node(&inlined, at);
        }
        let ty = node::json_type(node)
            .ok_or_else(|| Problem::new(at, "the schema has no single JSON type"))?;
        let mut lost = Lost::new();
        let mut rest: Vec<(String, Value)> = Vec::new();
        let string_values =
            |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
        for (key, value) in node {
            match key.as_str() {
                "type"
                | "title"
                | "description"
                | "required"
                | "properties"
                | "additionalProperties"
                | "$defs"
                | "$schema"
                | "$id"
                | "$comment"
                | "readOnly"
                | "writeOnly" => {}
                "enum" if ty == JsonType::String && string_values(value) => {
                    rest.push(("format".into(), Value::from("enum")));
                    rest.push((key.clone(), value.clone()));
                }
                "const" if ty == JsonType::String && value.is_string() => {
                    rest.push(("format".into(), Value::from("enum")));
                    rest.push(("enum".into(), json!([value])));
                }
                "format"
                    if ty == JsonType::String
                        && !node.contains_key("enum")
                        && !node.contains_key("const")
                        && value.as_str().is_some_and(|f| FORMATS.contains(&f)) =>
                {
                    rest.push((key.clone(), value.clone()));
                }
                "minLength" | "maxLength" | "pattern" | "minimum" | "maximum" | "minItems"
                | "maxItems" | "default" => rest.push((key.clone(), value.clone())),
                "items" => {
                    let at = format!("{at}/items");
                    let items = value
                        .as_object()
                        .ok_or_else(|| Problem::new(&at, "`items` is not a schema object"))?;
                    rest.push((key.clone(), Value::Object(self.node(items, &at)?)));
                }
                "x-authorize-each" => lost.keyword(key, value),
                k if k.starts_with("x-") => {}
                // Non-string enums and consts, formats Gemini lacks, `examples`, `deprecated`.
                _ => lost.keyword(key, value),
            }
        }
        if ty == JsonType::Object {
            let props = node.get("properties").and_then(Value::as_object);
            let Some(props) = props.filter(|p| !p.is_empty()) else {
                return Err(Problem::new(
                    at,
                    "an object without properties cannot be declared to Gemini (\"properties: should be non-empty for OBJECT type\")",
                ));
            };
            let mut properties = Map::new();
            for (name, sub) in props {
                let at = format!("{at}/properties/{}", escape(name));
                let sub = sub
                    .as_object()
                    .ok_or_else(|| Problem::new(&at, "a property is not a schema object"))?;
                properties.insert(name.clone(), Value::Object(self.node(sub, &at)?));
            }
            rest.push(("properties".into(), Value::Object(properties)));
            let required: Vec<Value> = node::required(node)
                .into_iter()
                .filter(|r| props.contains_key(*r))
                .map(Value::from)
                .collect();
            if !required.is_empty() {
                rest.push(("required".into(), Value::Array(required)));
            }
        }
        let mut out = Map::new();
        out.insert("type".into(), Value::from(ty.as_str()));
        if let Some(title) = node.get("title") {
            out.insert("title".into(), title.clone());
        }
        if let Some(d) = lost.describe(node.get("description").and_then(Value::as_str)) {
            out.insert("description".into(), Value::from(d));
        }
        out.extend(rest);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subset(s: &Value) -> Result<Value, Problem> {
        Subset { root: s }
            .node(s.as_object().unwrap(), "")
            .map(Value::Object)
    }

    #[test]
    fn refs_inline_and_unsupported_keywords_move_to_descriptions() {
        let s = json!({"type": "object", "additionalProperties": false, "required": ["a"],
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {
                "a": {"$ref": "#/$defs/A", "description": "An A."},
                "n": {"type": "integer", "enum": [1, 2, 3]},
                "c": {"const": "x"},
                "u": {"type": "string", "format": "uri", "maxLength": 9},
                "t": {"type": "string", "format": "date-time"}},
            "$defs": {"A": {"type": "object", "additionalProperties": false,
                "properties": {"k": {"type": "boolean", "x-note": 1}}}}});
        let out = subset(&s).unwrap();
        assert_eq!(out["required"], json!(["a"]));
        assert!(out.get("additionalProperties").is_none() && out.get("$schema").is_none());
        assert_eq!(
            out["properties"]["a"],
            json!({"type": "object", "description": "An A.",
                   "properties": {"k": {"type": "boolean"}}})
        );
        assert_eq!(
            out["properties"]["n"],
            json!({"type": "integer", "description": "one of: 1, 2, 3"})
        );
        assert_eq!(
            out["properties"]["c"],
            json!({"type": "string", "format": "enum", "enum": ["x"]})
        );
        assert_eq!(
            out["properties"]["u"],
            json!({"type": "string", "description": "format: uri", "maxLength": 9})
        );
        assert_eq!(out["properties"]["t"]["format"], json!("date-time"));
    }

    #[test]
    fn empty_nested_objects_cannot_be_declared() {
        let s = json!({"type": "object", "properties": {
            "e": {"type": "object", "additionalProperties": false}}});
        let e = subset(&s).unwrap_err();
        assert_eq!(e.pointer, "/properties/e");
    }

    #[test]
    fn names() {
        assert!(name_ok("_a.b-c") && !name_ok("1a"));
        assert!(parameter_ok("max_results") && !parameter_ok("a-b") && !parameter_ok("a.b"));
    }
}
