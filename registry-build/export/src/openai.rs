//! OpenAI function tools in strict mode (Structured Outputs for function calling).
//!
//! Shape: the Responses API function tool,
//! `{"type": "function", "name", "description", "parameters", "strict": true}`.
//! [`to_chat_completions`] turns one into the Chat Completions form
//! `{"type": "function", "function": {"name", "description", "parameters", "strict": true}}`.
//!
//! Rules relied on, from OpenAI's Structured Outputs guide, section "Supported schemas"
//! (platform.openai.com/docs/guides/structured-outputs#supported-schemas, read in a stored copy
//! of the guide), and the function definition reference:
//! - the function `name` "must be a-z, A-Z, 0-9, or contain underscores and dashes, with a
//!   maximum length of 64" ([`NAME_RULE`]);
//! - "the root level object of a schema must be an object, and not use `anyOf`";
//! - "`additionalProperties: false` must always be set in objects";
//! - "all fields or function parameters must be specified as `required`", and an optional
//!   parameter is emulated "by using a union type with `null`" (`"type": ["string", "null"]`;
//!   the guide's recursive example writes a nullable `$ref` as
//!   `"anyOf": [{"$ref": …}, {"type": "null"}]`, which we also use for enums, objects and
//!   arrays, so that `null` is valid under plain JSON Schema too);
//! - supported keywords: for strings `pattern` and `format` with only the formats
//!   `date-time`, `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`
//!   ([`FORMATS`]; `uri` is not one); for numbers `multipleOf`, `maximum`, `exclusiveMaximum`,
//!   `minimum`, `exclusiveMinimum`; for arrays `minItems`, `maxItems`; types string, number,
//!   boolean, integer, object, array, enum, `anyOf`; definitions (`$defs`) and `$ref`.
//!   `minLength`/`maxLength` are not in that list, nor are `default`, `examples` or `const`:
//!   they move into the description (a `const` becomes a one-value `enum`);
//! - "A schema may have up to 5000 object properties total, with up to 10 levels of nesting";
//!   "total string length of all property names, definition names, enum values, and const values
//!   cannot exceed 120,000 characters"; "up to 1000 enum values across all enum properties";
//!   "for a single enum property with string values, the total string length of all enum values
//!   cannot exceed 15,000 characters when there are more than 250 enum values". Exceeding one is
//!   an [`ExportError::Limit`]. How nesting is counted is not stated; we count every object and
//!   every array level (the root object is level 1) and follow `$ref`s, which fails closed.
//!
//! A `$ref` with sibling keywords is inlined, as the official `openai-python` SDK does in
//! `to_strict_json_schema` ("we can't use `$ref`s if there are also other properties defined").

use escepine_registry::record::ToolRecord;
use escepine_registry::schema::walk::JsonType;
use serde_json::{json, Map, Value};

use super::describe::Lost;
use super::format::{name_fits, ExportError, Format};
use super::node::{self, escape, Problem};

/// OpenAI's rule for function names.
pub const NAME_RULE: &str = "^[a-zA-Z0-9_-]{1,64}$";

/// The string formats OpenAI strict mode supports.
pub const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Documented limit: object properties in one schema, in all.
pub const MAX_PROPERTIES: usize = 5000;
/// Documented limit: levels of nesting.
pub const MAX_NESTING: usize = 10;
/// Documented limit: total length of property names, definition names, enum and const values.
pub const MAX_TOTAL_STRING: usize = 120_000;
/// Documented limit: enum values across all enum properties.
pub const MAX_ENUM_VALUES: usize = 1000;
/// A string enum with more values than this is limited to [`LARGE_ENUM_CHARS`] characters.
pub const LARGE_ENUM: usize = 250;
/// Documented limit on the total length of a large string enum's values.
pub const LARGE_ENUM_CHARS: usize = 15_000;

/// Whether `name` is a valid OpenAI function name ([`NAME_RULE`]).
pub fn name_ok(name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    name_fits(name, 64, word, word)
}

/// The strict-mode function tool of `record` (Responses API shape).
///
/// # Errors
/// The tool id is not a valid function name, the input schema cannot be flattened, or the
/// strict schema exceeds one of OpenAI's documented limits.
pub fn tool(record: &ToolRecord) -> Result<Value, ExportError> {
    let format = Format::OpenAi;
    if !name_ok(record.tool_id()) {
        return Err(ExportError::ToolName {
            format,
            tool: record.tool_id().to_string(),
            rule: NAME_RULE,
        });
    }
    let parameters =
        strict_schema(record.input_schema()).map_err(|p| p.into_error(format, record.tool_id()))?;
    check_limits(&parameters).map_err(|detail| ExportError::Limit {
        format,
        tool: record.tool_id().to_string(),
        detail,
    })?;
    Ok(json!({
        "type": "function",
        "name": record.tool_id(),
        "description": record.description(),
        "parameters": parameters,
        "strict": true,
    }))
}

/// A Responses API function tool (as [`tool`] returns it) in the Chat Completions form
/// `{"type": "function", "function": {…}}`.
pub fn to_chat_completions(tool: &Value) -> Value {
    let mut function = tool.as_object().cloned().unwrap_or_default();
    function.shift_remove("type");
    json!({ "type": "function", "function": function })
}

/// The input schema rewritten for strict mode (see the module documentation).
fn strict_schema(schema: &Value) -> Result<Value, Problem> {
    let root = schema
        .as_object()
        .ok_or_else(|| Problem::new("", "the input schema is not a JSON object"))?;
    let conv = Strict { root: schema };
    let mut out = conv.node(root, "")?;
    if let Some(defs) = root.get("$defs").and_then(Value::as_object) {
        let mut converted = Map::new();
        for (name, def) in defs {
            let at = format!("/$defs/{}", escape(name));
            let def = def
                .as_object()
                .ok_or_else(|| Problem::new(&at, "a definition is not a schema object"))?;
            converted.insert(name.clone(), Value::Object(conv.node(def, &at)?));
        }
        out.insert("$defs".into(), Value::Object(converted));
    }
    if out.get("type").and_then(Value::as_str) != Some("object") {
        return Err(Problem::new(
            "",
            "the root of a strict schema must be an object",
        ));
    }
    Ok(Value::Object(out))
}

struct Strict<'a> {
    root: &'a Value,
}

impl Strict<'_> {
    fn node(&self, node: &Map<String, Value>, at: &str) -> Result<Map<String, Value>, Problem> {
        if let Some(reference) = node.get("$ref") {
            if node.len() == 1 {
                let mut only = Map::new();
                only.insert("$ref".into(), reference.clone());
                return Ok(only);
            }
            let inlined = node::inline_ref(self.root, node, at)?;
            return self.node(&inlined, at);
        }
        let ty = node::json_type(node)
            .ok_or_else(|| Problem::new(at, "the schema has no single JSON type"))?;
        let mut lost = Lost::new();
        let mut rest: Vec<(String, Value)> = Vec::new();
        for (key, value) in node {
            match key.as_str() {
                "type"
                | "title"
                | "description"
                | "required"
                | "additionalProperties"
                | "properties"
                | "$defs" => {}
                "enum" if primitive_values(value) => rest.push((key.clone(), value.clone())),
                "const" if primitive(value) => rest.push(("enum".into(), json!([value]))),
                "format" if value.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                    rest.push((key.clone(), value.clone()));
                }
                "pattern" | "minimum" | "maximum" | "minItems" | "maxItems" => {
                    rest.push((key.clone(), value.clone()));
                }
                "items" => {
                    let at = format!("{at}/items");
                    let items = value
                        .as_object()
                        .ok_or_else(|| Problem::new(&at, "`items` is not a schema object"))?;
                    rest.push((key.clone(), Value::Object(self.node(items, &at)?)));
                }
                "$schema" | "$id" | "$comment" | "readOnly" | "writeOnly" => {}
                "x-authorize-each" => lost.keyword(key, value),
                k if k.starts_with("x-") => {}
                // `enum`/`const` of objects or arrays, `format`s OpenAI lacks, `minLength`,
                // `maxLength`, `default`, `examples`, `deprecated`: the model reads them.
                _ => lost.keyword(key, value),
            }
        }
        if ty == JsonType::Object {
            let required = node::required(node);
            let mut properties = Map::new();
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    let at = format!("{at}/properties/{}", escape(name));
                    let sub = sub
                        .as_object()
                        .ok_or_else(|| Problem::new(&at, "a property is not a schema object"))?;
                    let converted = self.node(sub, &at)?;
                    let converted = if required.contains(&name.as_str()) {
                        Value::Object(converted)
                    } else {
                        nullable(converted)
                    };
                    properties.insert(name.clone(), converted);
                }
            }
            let all: Vec<Value> = properties.keys().map(|k| Value::from(k.as_str())).collect();
            rest.push(("properties".into(), Value::Object(properties)));
            rest.push(("required".into(), Value::Array(all)));
            rest.push(("additionalProperties".into(), Value::Bool(false)));
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

/// An optional property made required-and-nullable: `"type": [T, "null"]` for a plain
/// primitive, `anyOf` with `{"type": "null"}` for a `$ref`, an enum, an object or an array.
fn nullable(mut schema: Map<String, Value>) -> Value {
    let primitive_type = schema
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| matches!(*t, "string" | "integer" | "number" | "boolean"))
        .map(str::to_string);
    if let (Some(t), false) = (primitive_type, schema.contains_key("enum")) {
        schema.insert("type".into(), json!([t, "null"]));
        return Value::Object(schema);
    }
    let mut outer = Map::new();
    for key in ["title", "description"] {
        if let Some(v) = schema.shift_remove(key) {
            outer.insert(key.into(), v);
        }
    }
    outer.insert(
        "anyOf".into(),
        json!([Value::Object(schema), { "type": "null" }]),
    );
    Value::Object(outer)
}

fn primitive(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

fn primitive_values(v: &Value) -> bool {
    v.as_array().is_some_and(|a| a.iter().all(primitive))
}

/// Check the documented size limits over a strict schema (following `$ref`s).
fn check_limits(schema: &Value) -> Result<(), String> {
    let mut t = Tally::default();
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        t.chars += defs.keys().map(|k| k.chars().count()).sum::<usize>();
    }
    t.visit(schema, schema, 0);
    if t.properties > MAX_PROPERTIES {
        return Err(format!(
            "the strict schema has {} object properties in all; OpenAI documents at most {MAX_PROPERTIES}",
            t.properties
        ));
    }
    if t.deepest > MAX_NESTING {
        return Err(format!(
            "the strict schema nests {} levels deep (objects and arrays counted, the root is level 1); OpenAI documents at most {MAX_NESTING}",
            t.deepest
        ));
    }
    if t.chars > MAX_TOTAL_STRING {
        return Err(format!(
            "property names, definition names and enum values total {} characters; OpenAI documents at most {MAX_TOTAL_STRING}",
            t.chars
        ));
    }
    if t.enum_values > MAX_ENUM_VALUES {
        return Err(format!(
            "the strict schema has {} enum values in all; OpenAI documents at most {MAX_ENUM_VALUES}",
            t.enum_values
        ));
    }
    if let Some(e) = t.large_enum {
        return Err(e);
    }
    if t.exhausted {
        return Err(format!(
            "the strict schema has more than {MAX_VISITS} schema nodes once its `$ref`s are expanded, far beyond what OpenAI's documented limits allow"
        ));
    }
    Ok(())
}

/// How many schema nodes the limit check visits (following `$ref`s) before giving up.
const MAX_VISITS: usize = 250_000;

#[derive(Default)]
struct Tally {
    properties: usize,
    deepest: usize,
    chars: usize,
    enum_values: usize,
    large_enum: Option<String>,
    visits: usize,
    exhausted: bool,
}

impl Tally {
    fn visit(&mut self, root: &Value, node: &Value, level: usize) {
        self.visits += 1;
        if self.visits > MAX_VISITS || self.properties > MAX_PROPERTIES {
            self.exhausted = true;
            return;
        }
        let Some(obj) = node.as_object() else {
            return;
        };
        if let Some(def) = obj
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| node::definition(root, r))
        {
            self.visit_map(root, def, level);
            return;
        }
        self.visit_map(root, obj, level);
    }

    fn visit_map(&mut self, root: &Value, obj: &Map<String, Value>, level: usize) {
        for branch in obj
            .get("anyOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.visit(root, branch, level);
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let structured = types.iter().any(|t| *t == "object" || *t == "array");
        let here = if structured { level + 1 } else { level };
        self.deepest = self.deepest.max(here);
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            self.enum_values += values.len();
            let chars: usize = values
                .iter()
                .map(|v| {
                    v.as_str()
                        .map_or_else(|| v.to_string().len(), |s| s.chars().count())
                })
                .sum();
            self.chars += chars;
            if values.len() > LARGE_ENUM
                && values.iter().all(Value::is_string)
                && chars > LARGE_ENUM_CHARS
            {
                self.large_enum = Some(format!(
                    "a string enum of {} values totals {chars} characters; OpenAI documents at most {LARGE_ENUM_CHARS} when there are more than {LARGE_ENUM} values",
                    values.len()
                ));
            }
        }
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            self.properties += props.len();
            self.chars += props.keys().map(|k| k.chars().count()).sum::<usize>();
            for sub in props.values() {
                self.visit(root, sub, here);
            }
        }
        if let Some(items) = obj.get("items") {
            self.visit(root, items, here);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_fields_become_required_and_nullable() {
        let s = json!({"type": "object", "additionalProperties": false, "required": ["q"],
            "properties": {
                "q": {"type": "string", "maxLength": 5, "format": "uri", "description": "The query."},
                "n": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "d": {"$ref": "#/$defs/D"}},
            "$defs": {"D": {"type": "object", "additionalProperties": false,
                "properties": {"x": {"const": 3}}}}});
        let out = strict_schema(&s).unwrap();
        assert_eq!(out["required"], json!(["q", "n", "mode", "d"]));
        assert_eq!(
            out["properties"]["q"],
            json!({"type": "string", "description": "The query. (at most 5 characters; format: uri)"})
        );
        assert_eq!(
            out["properties"]["n"],
            json!({"type": ["integer", "null"], "minimum": 1})
        );
        assert_eq!(
            out["properties"]["mode"],
            json!({"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]})
        );
        assert_eq!(
            out["properties"]["d"],
            json!({"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]})
        );
        assert_eq!(
            out["$defs"]["D"]["properties"]["x"],
            json!({"anyOf": [{"type": "integer", "enum": [3]}, {"type": "null"}]})
        );
        assert_eq!(out["$defs"]["D"]["additionalProperties"], json!(false));
    }

    #[test]
    fn limits_are_enforced() {
        let mut props = Map::new();
        for i in 0..=MAX_PROPERTIES {
            props.insert(format!("p{i}"), json!({"type": "string"}));
        }
        let s = json!({"type": "object", "properties": props});
        assert!(check_limits(&s).unwrap_err().contains("5000"));
        let mut deep = json!({"type": "string"});
        for _ in 0..MAX_NESTING {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        assert!(check_limits(&deep).is_ok());
        let deeper = json!({"type": "array", "items": deep});
        assert!(check_limits(&deeper).unwrap_err().contains("11 levels"));
    }

    #[test]
    fn names() {
        assert!(name_ok("web_search"));
        assert!(!name_ok(&"a".repeat(65)));
    }
}
