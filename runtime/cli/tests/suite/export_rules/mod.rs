//! Independent checkers of each provider's documented tool-definition rules, a generator of
//! valid payloads, and the OpenAI strict-dialect mapping, shared by the `export_*` tests.
//!
//! The checkers are written from the providers' documentation (see `registry-build/export/src/*.rs`
//! for the sources), not from the exporters' code: each returns every violation it finds in
//! one exported tool definition, as a readable line.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use escepine_contract::SideEffectClass;
use escepine_registry::record::ToolRecord;
use escepine_registry::registry::Sources;
use escepine_registry::schema::walk;
use escepine_registry::schema::walk::JsonType;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the runtime crate sits in the workspace")
        .to_path_buf()
}

/// The synthetic records of these tests.
pub fn fixture_records_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/export/records")
}

/// Load the records of `dir` (every rule applied).
pub fn load_dir(dir: &Path) -> Vec<ToolRecord> {
    match escepine_policy::load(&Sources::new().records(dir)) {
        Ok(reg) => reg.into_parts().0.into_records(),
        Err(d) => panic!("{} does not load:\n{}", dir.display(), d.render()),
    }
}

/// Load one record given as JSON text.
pub fn load_text(record: &Value) -> ToolRecord {
    let text = serde_json::to_string_pretty(record).expect("JSON");
    let sources = Sources::new()
        .record_text("mem/record.json", text)
        .workspace_root(workspace());
    match escepine_policy::load(&sources) {
        Ok(reg) => reg.into_parts().0.into_records().remove(0),
        Err(d) => panic!("the record does not load:\n{}", d.render()),
    }
}

/// Load one record given as JSON text, or the rendered diagnostics.
pub fn try_load_text(record: &Value) -> Result<ToolRecord, String> {
    let text = serde_json::to_string_pretty(record).map_err(|e| e.to_string())?;
    let sources = Sources::new()
        .record_text("mem/record.json", text)
        .workspace_root(workspace());
    escepine_policy::load(&sources)
        .map(|reg| reg.into_parts().0.into_records().remove(0))
        .map_err(|d| d.render())
}

/// The catalog's records and the synthetic ones.
pub fn all_records() -> Vec<ToolRecord> {
    let mut all = load_dir(&workspace().join("tools/records"));
    all.extend(load_dir(&fixture_records_dir()));
    all
}

/// A record with the given id and input schema (read-only, no egress), as JSON.
pub fn record_json(tool_id: &str, input_schema: Value) -> Value {
    json!({
        "tool_id": tool_id,
        "version": "1.0.0",
        "description": "A synthetic tool.",
        "input_schema": input_schema,
        "output_schema": {"type": "object", "additionalProperties": false,
                          "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        "side_effect_class": "read-only",
        "accepts_credentials": false,
        "timeout_ms": 1000,
        "retry": {"max_attempts": 1, "backoff_ms": 0},
        "on_failure": ["halt"],
        "endpoint": {"transport": "stdio-json", "command": "escepine"},
        "auth": {"secrets": []},
        "sandbox_profile": {"egress": [], "filesystem": "workspace"}
    })
}

// ---------------------------------------------------------------------------------------------
// Shared bits

const TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "object", "array"];

fn matches_name(
    name: &str,
    max: usize,
    first: impl Fn(char) -> bool,
    rest: impl Fn(char) -> bool,
) -> bool {
    let n = name.chars().count();
    n >= 1 && n <= max && name.chars().next().is_some_and(first) && name.chars().all(rest)
}

fn has_text(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty())
}

fn value_has_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// Whether any keyword starting with `x-` appears at a schema position of `schema`.
fn extension_keywords(schema: &Value, at: &str, out: &mut Vec<String>) {
    let Some(o) = schema.as_object() else { return };
    for (k, v) in o {
        if k.starts_with("x-") {
            out.push(format!("{at}: our extension keyword `{k}` leaked"));
        }
        match k.as_str() {
            "properties" | "$defs" => {
                for (name, sub) in v.as_object().into_iter().flatten() {
                    extension_keywords(sub, &format!("{at}/{k}/{name}"), out);
                }
            }
            "items" => extension_keywords(v, &format!("{at}/items"), out),
            "anyOf" => {
                for (i, b) in v.as_array().into_iter().flatten().enumerate() {
                    extension_keywords(b, &format!("{at}/anyOf/{i}"), out);
                }
            }
            _ => {}
        }
    }
}

fn meta_valid(schema: &Value, what: &str, out: &mut Vec<String>) {
    if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
        out.push(format!("{what} is not a valid JSON Schema 2020-12: {e}"));
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI (Structured Outputs "Supported schemas"; function definition reference)

const OPENAI_FORMATS: [&str; 9] = [
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
const OPENAI_KEYWORDS: [&str; 20] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "$ref",
    "$defs",
    "description",
    "title",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Every OpenAI strict-mode rule the exported tool breaks.
pub fn openai(tool: &Value) -> Vec<String> {
    let mut v = Vec::new();
    let Some(o) = tool.as_object() else {
        return vec!["the tool is not a JSON object".into()];
    };
    for k in o.keys() {
        if !["type", "name", "description", "parameters", "strict"].contains(&k.as_str()) {
            v.push(format!("unknown top-level key `{k}`"));
        }
    }
    if o.get("type") != Some(&json!("function")) {
        v.push("`type` is not \"function\"".into());
    }
    if o.get("strict") != Some(&json!(true)) {
        v.push("`strict` is not true".into());
    }
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    match o.get("name").and_then(Value::as_str) {
        Some(n) if matches_name(n, 64, word, word) => {}
        other => v.push(format!("name {other:?} breaks ^[a-zA-Z0-9_-]{{1,64}}$")),
    }
    if !has_text(o.get("description")) {
        v.push("no description".into());
    }
    let Some(params) = o.get("parameters") else {
        v.push("no parameters".into());
        return v;
    };
    if params.get("type") != Some(&json!("object")) || params.get("anyOf").is_some() {
        v.push("the parameters root must be an object, not anyOf".into());
    }
    openai_node(params, params, "", true, &mut v);
    if let Some(defs) = params.get("$defs").and_then(Value::as_object) {
        for (name, def) in defs {
            openai_node(params, def, &format!("/$defs/{name}"), false, &mut v);
        }
    }
    openai_limits(params, &mut v);
    v
}

fn openai_node(root: &Value, node: &Value, at: &str, is_root: bool, v: &mut Vec<String>) {
    let Some(o) = node.as_object() else {
        v.push(format!("{at}: a schema is not an object"));
        return;
    };
    for k in o.keys() {
        if !OPENAI_KEYWORDS.contains(&k.as_str()) || (k == "$defs" && !is_root) {
            v.push(format!(
                "{at}: keyword `{k}` is not supported in strict mode"
            ));
        }
    }
    if let Some(r) = o.get("$ref") {
        if o.len() != 1 {
            v.push(format!("{at}: `$ref` has sibling keywords"));
        }
        let target = r
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|n| root.get("$defs").and_then(|d| d.get(n)));
        if target.is_none() {
            v.push(format!("{at}: `$ref` {r} does not resolve"));
        }
        return;
    }
    if let Some(any) = o.get("anyOf") {
        if is_root {
            v.push(format!("{at}: anyOf at the root"));
        }
        match any.as_array() {
            Some(branches) if !branches.is_empty() => {
                for (i, b) in branches.iter().enumerate() {
                    openai_node(root, b, &format!("{at}/anyOf/{i}"), false, v);
                }
            }
            _ => v.push(format!("{at}: anyOf is not a non-empty list")),
        }
        if o.contains_key("type") {
            v.push(format!("{at}: anyOf beside type"));
        }
        return;
    }
    if o.len() == 1 && o.get("type") == Some(&json!("null")) {
        return; // the null branch of an optional field
    }
    let base = match o.get("type") {
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => t.clone(),
        Some(Value::Array(ts))
            if ts.len() == 2
                && ts.contains(&json!("null"))
                && ts
                    .iter()
                    .any(|t| t.as_str().is_some_and(|t| TYPES.contains(&t))) =>
        {
            let t = ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or_default();
            if o.get("enum")
                .and_then(Value::as_array)
                .is_some_and(|e| !e.contains(&Value::Null))
            {
                v.push(format!(
                    "{at}: nullable type with an enum that excludes null"
                ));
            }
            t.to_string()
        }
        other => {
            v.push(format!(
                "{at}: `type` {other:?} is not one supported type (or [T, \"null\"])"
            ));
            return;
        }
    };
    let on = |k: &str, types: &[&str], v: &mut Vec<String>| {
        if o.contains_key(k) && !types.contains(&base.as_str()) {
            v.push(format!("{at}: `{k}` on a {base}"));
        }
    };
    on("pattern", &["string"], v);
    on("format", &["string"], v);
    on("minimum", &["number", "integer"], v);
    on("maximum", &["number", "integer"], v);
    on("minItems", &["array"], v);
    on("maxItems", &["array"], v);
    if let Some(f) = o.get("format") {
        if !f.as_str().is_some_and(|f| OPENAI_FORMATS.contains(&f)) {
            v.push(format!("{at}: format {f} is not one OpenAI supports"));
        }
    }
    if let Some(e) = o.get("enum") {
        match e.as_array() {
            Some(vals) if !vals.is_empty() => {
                for val in vals {
                    if !(val.is_null() || value_has_type(val, &base))
                        || val.is_object()
                        || val.is_array()
                    {
                        v.push(format!("{at}: enum value {val} is not a {base}"));
                    }
                }
            }
            _ => v.push(format!("{at}: enum is not a non-empty list")),
        }
    }
    if base == "object" {
        if o.get("additionalProperties") != Some(&json!(false)) {
            v.push(format!(
                "{at}: object without `additionalProperties: false`"
            ));
        }
        let props = o.get("properties").and_then(Value::as_object);
        let Some(props) = props else {
            v.push(format!("{at}: object without `properties`"));
            return;
        };
        let required: Vec<&str> = o
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut sorted_req = required.clone();
        sorted_req.sort_unstable();
        sorted_req.dedup();
        let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
        keys.sort_unstable();
        if sorted_req != keys || required.len() != keys.len() {
            v.push(format!(
                "{at}: `required` {required:?} is not exactly the properties {keys:?}"
            ));
        }
        for (name, sub) in props {
            openai_node(root, sub, &format!("{at}/properties/{name}"), false, v);
        }
    }
    if base == "array" {
        match o.get("items") {
            Some(items) => openai_node(root, items, &format!("{at}/items"), false, v),
            None => v.push(format!("{at}: array without items")),
        }
    }
}

fn openai_limits(params: &Value, v: &mut Vec<String>) {
    #[derive(Default)]
    struct T {
        props: usize,
        depth: usize,
        chars: usize,
        enums: usize,
    }
    fn go(root: &Value, node: &Value, level: usize, t: &mut T, v: &mut Vec<String>) {
        let Some(o) = node.as_object() else { return };
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            if let Some(def) = r
                .strip_prefix("#/$defs/")
                .and_then(|n| root["$defs"].get(n))
            {
                go(root, def, level, t, v);
            }
            return;
        }
        for b in o
            .get("anyOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            go(root, b, level, t, v);
        }
        let ty = |want: &str| match o.get("type") {
            Some(Value::String(s)) => s == want,
            Some(Value::Array(a)) => a.contains(&json!(want)),
            _ => false,
        };
        let level = if ty("object") || ty("array") {
            level + 1
        } else {
            level
        };
        t.depth = t.depth.max(level);
        if let Some(e) = o.get("enum").and_then(Value::as_array) {
            t.enums += e.len();
            let chars: usize = e
                .iter()
                .map(|x| x.as_str().map_or(x.to_string().len(), str::len))
                .sum();
            t.chars += chars;
            if e.len() > 250 && e.iter().all(Value::is_string) && chars > 15_000 {
                v.push("a string enum of more than 250 values exceeds 15,000 characters".into());
            }
        }
        if let Some(p) = o.get("properties").and_then(Value::as_object) {
            t.props += p.len();
            t.chars += p.keys().map(String::len).sum::<usize>();
            for sub in p.values() {
                go(root, sub, level, t, v);
            }
        }
        if let Some(i) = o.get("items") {
            go(root, i, level, t, v);
        }
    }
    let mut t = T::default();
    t.chars += params
        .get("$defs")
        .and_then(Value::as_object)
        .map_or(0, |d| d.keys().map(String::len).sum());
    go(params, params, 0, &mut t, v);
    if t.props > 5000 {
        v.push(format!("{} object properties (max 5000)", t.props));
    }
    if t.depth > 10 {
        v.push(format!("{} levels of nesting (max 10)", t.depth));
    }
    if t.chars > 120_000 {
        v.push(format!(
            "{} characters of names and enum values (max 120000)",
            t.chars
        ));
    }
    if t.enums > 1000 {
        v.push(format!("{} enum values (max 1000)", t.enums));
    }
}

// ---------------------------------------------------------------------------------------------
// Anthropic (Messages API `tools[]`)

/// Every Anthropic rule the exported tool breaks.
pub fn anthropic(tool: &Value) -> Vec<String> {
    let mut v = Vec::new();
    let Some(o) = tool.as_object() else {
        return vec!["the tool is not a JSON object".into()];
    };
    for k in o.keys() {
        if !["name", "description", "input_schema"].contains(&k.as_str()) {
            v.push(format!("unknown top-level key `{k}`"));
        }
    }
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    match o.get("name").and_then(Value::as_str) {
        Some(n) if matches_name(n, 64, word, word) => {}
        other => v.push(format!("name {other:?} breaks ^[a-zA-Z0-9_-]{{1,64}}$")),
    }
    if !has_text(o.get("description")) {
        v.push("no description".into());
    }
    let Some(schema) = o.get("input_schema") else {
        v.push("no input_schema".into());
        return v;
    };
    if schema.get("type") != Some(&json!("object")) {
        v.push("input_schema.type is not \"object\"".into());
    }
    for k in ["oneOf", "anyOf", "allOf"] {
        if schema.get(k).is_some() {
            v.push(format!("input_schema has `{k}` at the top level"));
        }
    }
    let key = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    for name in schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(Map::keys)
    {
        if !matches_name(name, 64, key, key) {
            v.push(format!(
                "property key {name:?} breaks ^[a-zA-Z0-9_.-]{{1,64}}$"
            ));
        }
    }
    extension_keywords(schema, "input_schema", &mut v);
    meta_valid(schema, "input_schema", &mut v);
    v
}

// ---------------------------------------------------------------------------------------------
// Gemini (FunctionDeclaration, Schema)

const GEMINI_KEYWORDS: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Every Gemini rule the exported function declaration breaks.
pub fn gemini(tool: &Value) -> Vec<String> {
    let mut v = Vec::new();
    let Some(o) = tool.as_object() else {
        return vec!["the declaration is not a JSON object".into()];
    };
    for k in o.keys() {
        if !["name", "description", "parameters", "parametersJsonSchema"].contains(&k.as_str()) {
            v.push(format!("unknown top-level key `{k}`"));
        }
    }
    if o.contains_key("parameters") && o.contains_key("parametersJsonSchema") {
        v.push("parameters and parametersJsonSchema are mutually exclusive".into());
    }
    let first = |c: char| c.is_ascii_alphabetic() || c == '_';
    let rest = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    match o.get("name").and_then(Value::as_str) {
        Some(n) if matches_name(n, 64, first, rest) => {}
        other => v.push(format!("name {other:?} breaks Gemini's function-name rule")),
    }
    if !has_text(o.get("description")) {
        v.push("no description".into());
    }
    if let Some(params) = o.get("parameters") {
        if params
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase)
            .as_deref()
            != Some("object")
        {
            v.push("parameters is not of type object".into());
        }
        let prest = |c: char| c.is_ascii_alphanumeric() || c == '_';
        for name in params
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(Map::keys)
        {
            if !matches_name(name, 64, first, prest) {
                v.push(format!(
                    "parameter name {name:?} breaks Gemini's parameter-name rule"
                ));
            }
        }
        gemini_node(params, "parameters", &mut v);
    }
    if let Some(schema) = o.get("parametersJsonSchema") {
        if schema.get("type") != Some(&json!("object")) {
            v.push("parametersJsonSchema does not describe an object".into());
        }
        let prest = |c: char| c.is_ascii_alphanumeric() || c == '_';
        for name in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(Map::keys)
        {
            if !matches_name(name, 64, first, prest) {
                v.push(format!(
                    "parameter name {name:?} breaks Gemini's parameter-name rule"
                ));
            }
        }
        extension_keywords(schema, "parametersJsonSchema", &mut v);
        meta_valid(schema, "parametersJsonSchema", &mut v);
    }
    v
}

fn gemini_node(node: &Value, at: &str, v: &mut Vec<String>) {
    let Some(o) = node.as_object() else {
        v.push(format!("{at}: a schema is not an object"));
        return;
    };
    for k in o.keys() {
        if !GEMINI_KEYWORDS.contains(&k.as_str()) {
            v.push(format!("{at}: `{k}` is not a field of Gemini's Schema"));
        }
    }
    let Some(t) = o
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
    else {
        v.push(format!("{at}: no `type`"));
        return;
    };
    if !TYPES.contains(&t.as_str()) {
        v.push(format!("{at}: type {t} unknown"));
    }
    if let Some(e) = o.get("enum") {
        if t != "string"
            || !e
                .as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string))
        {
            v.push(format!("{at}: enum on a {t} or with non-string values"));
        }
    }
    if let Some(f) = o.get("format").and_then(Value::as_str) {
        let ok = match t.as_str() {
            "string" => f == "enum" || f == "date-time",
            "number" => f == "float" || f == "double",
            "integer" => f == "int32" || f == "int64",
            _ => false,
        };
        if !ok {
            v.push(format!("{at}: format {f} not accepted on a {t}"));
        }
        if f == "enum" && !o.contains_key("enum") {
            v.push(format!("{at}: format enum without enum"));
        }
    }
    if t == "object" {
        match o.get("properties").and_then(Value::as_object) {
            Some(p) if !p.is_empty() => {
                for r in o
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if !r.as_str().is_some_and(|r| p.contains_key(r)) {
                        v.push(format!("{at}: required {r} is not a property"));
                    }
                }
                for (name, sub) in p {
                    gemini_node(sub, &format!("{at}.properties.{name}"), v);
                }
            }
            _ => v.push(format!(
                "{at}: properties should be non-empty for OBJECT type"
            )),
        }
    }
    if t == "array" {
        match o.get("items") {
            Some(i) => gemini_node(i, &format!("{at}.items"), v),
            None => v.push(format!("{at}: array without items")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// MCP (schema 2025-11-25: Tool, ToolAnnotations; tool names)

/// Every MCP rule the exported `tools/list` entry breaks.
pub fn mcp(tool: &Value) -> Vec<String> {
    let mut v = Vec::new();
    let Some(o) = tool.as_object() else {
        return vec!["the tool is not a JSON object".into()];
    };
    const KEYS: [&str; 9] = [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
        "icons",
        "_meta",
        "execution",
    ];
    for k in o.keys() {
        if !KEYS.contains(&k.as_str()) {
            v.push(format!("unknown key `{k}`"));
        }
    }
    let c = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    match o.get("name").and_then(Value::as_str) {
        Some(n) if matches_name(n, 128, c, c) => {}
        other => v.push(format!("name {other:?} breaks ^[A-Za-z0-9_.-]{{1,128}}$")),
    }
    match o.get("inputSchema") {
        Some(s) if s.get("type") == Some(&json!("object")) => meta_valid(s, "inputSchema", &mut v),
        _ => v.push("inputSchema is missing or not of type object".into()),
    }
    if let Some(s) = o.get("outputSchema") {
        if s.get("type") != Some(&json!("object")) {
            v.push("outputSchema is not of type object".into());
        }
        meta_valid(s, "outputSchema", &mut v);
    }
    if let Some(a) = o.get("annotations") {
        let Some(a) = a.as_object() else {
            v.push("annotations is not an object".into());
            return v;
        };
        for (k, val) in a {
            match k.as_str() {
                "title" if val.is_string() => {}
                "readOnlyHint" | "destructiveHint" | "idempotentHint" | "openWorldHint"
                    if val.is_boolean() => {}
                _ => v.push(format!(
                    "annotation `{k}`: {val} is not a ToolAnnotations field"
                )),
            }
        }
        if a.get("readOnlyHint") == Some(&json!(true))
            && (a.contains_key("destructiveHint") || a.contains_key("idempotentHint"))
        {
            v.push("destructive/idempotent hints are meaningless on a read-only tool".into());
        }
    }
    v
}

/// Whether the MCP entry says what the record registered.
pub fn mcp_matches(tool: &Value, record: &ToolRecord) -> Vec<String> {
    let mut v = Vec::new();
    if tool["inputSchema"] != *record.input_schema() {
        v.push("inputSchema differs from the registered input schema".into());
    }
    if tool["outputSchema"] != *record.output_schema() {
        v.push("outputSchema differs from the registered output schema".into());
    }
    if tool.get("title").and_then(Value::as_str) != record.title() {
        v.push(format!(
            "title {:?} is not the record's title {:?}",
            tool.get("title"),
            record.title()
        ));
    }
    let a = &tool["annotations"];
    if a.get("openWorldHint").and_then(Value::as_bool) != record.open_world() {
        v.push(format!(
            "openWorldHint {:?} is not the record's open_world {:?}",
            a.get("openWorldHint"),
            record.open_world()
        ));
    }
    let want = match record.side_effect_class() {
        SideEffectClass::ReadOnly => a["readOnlyHint"] == json!(true),
        SideEffectClass::Compensatable => {
            a["readOnlyHint"] == json!(false) && a["destructiveHint"] == json!(true)
        }
        SideEffectClass::Supersede => {
            a["readOnlyHint"] == json!(false)
                && a["idempotentHint"] == json!(true)
                && a["destructiveHint"] == json!(false)
        }
    };
    if !want {
        v.push(format!(
            "annotations {a} do not follow the class {}",
            record.side_effect_class().as_str()
        ));
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Payloads

/// Valid payloads for a registered schema, at random (optional fields present or not).
pub struct Gen {
    rng: StdRng,
    runner: TestRunner,
}

impl Gen {
    /// A generator with a fixed seed.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            runner: TestRunner::deterministic(),
        }
    }

    /// One payload valid against `schema` (a registered, closed subset schema).
    pub fn instance(&mut self, schema: &Value) -> Value {
        self.node(schema, schema, 0)
    }

    fn node(&mut self, root: &Value, schema: &Value, depth: usize) -> Value {
        assert!(depth < 32, "schema too deep for the generator");
        let s = walk::resolve(root, schema).expect("resolvable $ref");
        if let Some(c) = s.get("const") {
            return c.clone();
        }
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            let i = self.rng.random_range(0..values.len());
            return values[i].clone();
        }
        match walk::type_of(root, s).expect("typed schema") {
            JsonType::Boolean => Value::Bool(self.rng.random_bool(0.5)),
            JsonType::Integer => {
                let lo = s
                    .get("minimum")
                    .and_then(Value::as_f64)
                    .map_or(0, |m| m.ceil() as i64);
                let hi = s
                    .get("maximum")
                    .and_then(Value::as_f64)
                    .map_or(lo + 100, |m| m.floor() as i64);
                Value::from(self.rng.random_range(lo..=hi))
            }
            JsonType::Number => {
                let lo = s.get("minimum").and_then(Value::as_f64).unwrap_or(0.0);
                let hi = s
                    .get("maximum")
                    .and_then(Value::as_f64)
                    .unwrap_or(lo + 100.0);
                let picks = [lo, (lo + hi) / 2.0, hi];
                json!(picks[self.rng.random_range(0..3)])
            }
            JsonType::String => Value::from(self.string(s)),
            JsonType::Array => {
                let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
                let max = s
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .map_or(min + 3, |m| m as usize);
                let n = self.rng.random_range(min..=max.min(min + 3));
                let items = s.get("items").expect("arrays have items");
                Value::Array((0..n).map(|_| self.node(root, items, depth + 1)).collect())
            }
            JsonType::Object => {
                let mut out = Map::new();
                for (name, sub, required) in walk::properties(root, s) {
                    if required || self.rng.random_bool(0.5) {
                        out.insert(name.to_string(), self.node(root, sub, depth + 1));
                    }
                }
                Value::Object(out)
            }
        }
    }

    fn string(&mut self, s: &Value) -> String {
        let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = s
            .get("maxLength")
            .and_then(Value::as_u64)
            .map_or(usize::MAX, |m| m as usize);
        let n = self.rng.random_range(0..1000u32);
        let formatted = match s.get("format").and_then(Value::as_str) {
            Some("uri") => Some(format!("https://example.com/p/{n}")),
            Some("email") => Some(format!("user{n}@example.com")),
            Some("date-time") => Some(format!("2024-05-{:02}T12:{:02}:00Z", n % 28 + 1, n % 60)),
            Some("date") => Some(format!("2024-05-{:02}", n % 28 + 1)),
            Some("time") => Some("12:00:00Z".to_string()),
            Some("uuid") => Some(format!("123e4567-e89b-12d3-a456-{:012}", n)),
            Some("hostname") => Some(format!("host{n}.example.com")),
            Some("ipv4") => Some(format!("192.0.2.{}", n % 250)),
            Some("ipv6") => Some(format!("2001:db8::{:x}", n)),
            _ => None,
        };
        if let Some(f) = formatted {
            assert!(
                f.chars().count() >= min && f.chars().count() <= max,
                "format sample out of bounds"
            );
            return f;
        }
        if let Some(p) = s.get("pattern").and_then(Value::as_str) {
            // JSON Schema patterns search; a sample of the anchored body matches either way.
            let body = p.strip_prefix('^').unwrap_or(p);
            let body = body.strip_suffix('$').unwrap_or(body);
            let strategy =
                proptest::string::string_regex(body).expect("a pattern proptest can parse");
            for _ in 0..200 {
                let candidate = strategy
                    .new_tree(&mut self.runner)
                    .expect("a value")
                    .current();
                let len = candidate.chars().count();
                if len >= min && len <= max {
                    return candidate;
                }
            }
            panic!("no sample of /{p}/ fits {min}..={max} characters");
        }
        let len = self.rng.random_range(min..=max.min(min + 16));
        (0..len)
            .map(|_| char::from(b'a' + self.rng.random_range(0..26u8)))
            .collect()
    }
}

/// A payload in OpenAI's strict dialect: every optional field the payload leaves out carries
/// `null`, at every depth.
pub fn to_strict(schema: &Value, payload: &Value) -> Value {
    fn go(root: &Value, schema: &Value, value: &Value) -> Value {
        let Some(s) = walk::resolve(root, schema) else {
            return value.clone();
        };
        match (walk::type_of(root, s), value) {
            (Some(JsonType::Object), Value::Object(m)) => {
                let mut out = Map::new();
                for (name, sub, _) in walk::properties(root, s) {
                    let v = match m.get(name) {
                        Some(v) => go(root, sub, v),
                        None => Value::Null,
                    };
                    out.insert(name.to_string(), v);
                }
                Value::Object(out)
            }
            (Some(JsonType::Array), Value::Array(items)) => match s.get("items") {
                Some(i) => Value::Array(items.iter().map(|v| go(root, i, v)).collect()),
                None => value.clone(),
            },
            _ => value.clone(),
        }
    }
    go(schema, schema, payload)
}

/// A JSON Schema validator (2020-12), formats asserted or not.
pub fn validator(schema: &Value, formats: bool) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(formats)
        .build(schema)
        .unwrap_or_else(|e| panic!("{schema} does not compile: {e}"))
}

/// The validation errors of `value`, one per line.
pub fn errors(v: &jsonschema::Validator, value: &Value) -> String {
    v.iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path().as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `schema` without descriptions and `x-` keywords at schema positions (to compare what an
/// export kept with what was registered).
pub fn without_prose(schema: &Value) -> Value {
    let Some(o) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in o {
        if k == "description" || k.starts_with("x-") {
            continue;
        }
        let v = match k.as_str() {
            "properties" | "$defs" => Value::Object(
                v.as_object()
                    .into_iter()
                    .flatten()
                    .map(|(n, s)| (n.clone(), without_prose(s)))
                    .collect(),
            ),
            "items" => without_prose(v),
            _ => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// Random schemas within design.md's subset (records that are not in the repository)

const NAMES: [&str; 12] = [
    "alpha",
    "beta_count",
    "gamma",
    "delta",
    "epsilon",
    "zeta_list",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda_x",
    "mu",
];
const FORMATS: [&str; 9] = [
    "uri",
    "email",
    "date-time",
    "date",
    "uuid",
    "hostname",
    "ipv4",
    "ipv6",
    "color",
];
const PATTERNS: [&str; 3] = ["^[a-z]{2,8}$", "^[A-Z]{3}-[0-9]{2}$", "^[0-9a-f]{8}$"];

/// Random closed input schemas of the subset: nested objects, arrays of objects, `$defs` and
/// `$ref` (bare and with siblings), enums of every scalar type, `const`, formats, bounds,
/// patterns, annotations, `x-authorize-each`, optional fields at every depth.
pub struct SchemaGen {
    rng: StdRng,
    defs: Map<String, Value>,
}

impl SchemaGen {
    /// A generator with a fixed seed.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            defs: Map::new(),
        }
    }

    /// One root input schema.
    pub fn schema(&mut self) -> Value {
        self.defs = Map::new();
        for i in 0..self.rng.random_range(0..3) {
            let def = self.node(2, false);
            self.defs.insert(format!("def_{i}"), def);
        }
        let mut root = self.object(0, false);
        if self.rng.random_bool(0.3) {
            let urls = json!({"type": "array", "x-authorize-each": true, "maxItems": 5,
                              "items": {"type": "string", "format": "uri", "maxLength": 2048}});
            root["properties"]["links"] = urls;
        }
        if !self.defs.is_empty() {
            root["$defs"] = Value::Object(self.defs.clone());
        }
        if self.rng.random_bool(0.5) {
            root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
        }
        root
    }

    fn node(&mut self, depth: usize, in_array: bool) -> Value {
        let choice = self.rng.random_range(0..if depth >= 3 { 7 } else { 10 });
        let mut s = match choice {
            0 => self.string(),
            1 => {
                let mut s = json!({"type": "integer"});
                if self.rng.random_bool(0.5) {
                    s["minimum"] = json!(self.rng.random_range(-5..5));
                }
                if self.rng.random_bool(0.5) {
                    s["maximum"] = json!(self.rng.random_range(5..500));
                }
                s
            }
            2 => json!({"type": "number", "minimum": 0, "maximum": 1.5}),
            3 => json!({"type": "boolean"}),
            4 => match self.rng.random_range(0..4) {
                0 => json!({"type": "string", "enum": ["red", "green", "blue"]}),
                1 => json!({"enum": [1, 2, 3]}),
                2 => json!({"enum": [0.5, 1, 2.5]}),
                _ => json!({"type": "boolean", "enum": [true]}),
            },
            5 => match self.rng.random_range(0..3) {
                0 => json!({"const": "fixed"}),
                1 => json!({"type": "integer", "const": 7}),
                _ => json!({"const": false}),
            },
            6 if !self.defs.is_empty() => {
                let names: Vec<String> = self.defs.keys().cloned().collect();
                let name = &names[self.rng.random_range(0..names.len())];
                let mut r = json!({"$ref": format!("#/$defs/{name}")});
                if self.rng.random_bool(0.4) {
                    r["description"] = json!("A referenced part.");
                }
                r
            }
            6 => self.string(),
            7 | 8 => self.object(depth + 1, in_array),
            _ => {
                let mut a = json!({"type": "array", "items": self.node(depth + 1, true)});
                if self.rng.random_bool(0.5) {
                    a["minItems"] = json!(self.rng.random_range(0..2));
                }
                if self.rng.random_bool(0.5) {
                    a["maxItems"] = json!(self.rng.random_range(2..6));
                }
                a
            }
        };
        if self.rng.random_bool(0.3) && s.get("$ref").is_none() {
            s["description"] = json!("Some words for the model.");
        }
        if self.rng.random_bool(0.1) && s.get("$ref").is_none() {
            s["title"] = json!("A title");
        }
        if self.rng.random_bool(0.1) && s.get("$ref").is_none() {
            s["x-internal"] = json!({"note": 1});
        }
        if self.rng.random_bool(0.05) && s.get("$ref").is_none() {
            s["deprecated"] = json!(true);
        }
        s
    }

    fn string(&mut self) -> Value {
        let mut s = json!({"type": "string"});
        match self.rng.random_range(0..4) {
            0 => {
                s["format"] = json!(FORMATS[self.rng.random_range(0..FORMATS.len())]);
                if self.rng.random_bool(0.5) {
                    s["maxLength"] = json!(2048);
                }
                if s["format"] == json!("color") {
                    s["minLength"] = json!(0);
                }
            }
            1 => s["pattern"] = json!(PATTERNS[self.rng.random_range(0..PATTERNS.len())]),
            2 => {
                s["minLength"] = json!(self.rng.random_range(0..3));
                s["maxLength"] = json!(self.rng.random_range(3..40));
                if self.rng.random_bool(0.3) {
                    s["default"] = json!("abc");
                }
                if self.rng.random_bool(0.3) {
                    s["examples"] = json!(["abcd", "xyz"]);
                }
            }
            _ => {}
        }
        s
    }

    fn object(&mut self, depth: usize, in_array: bool) -> Value {
        let n = self.rng.random_range(if depth == 0 { 1 } else { 0 }..5);
        let mut props = Map::new();
        let mut required = Vec::new();
        for _ in 0..n {
            let name = NAMES[self.rng.random_range(0..NAMES.len())];
            if props.contains_key(name) {
                continue;
            }
            props.insert(name.to_string(), self.node(depth, in_array));
            if self.rng.random_bool(0.5) {
                required.push(json!(name));
            }
        }
        let mut o = json!({"type": "object", "additionalProperties": false, "properties": props});
        if !required.is_empty() {
            o["required"] = Value::Array(required);
        }
        o
    }
}
