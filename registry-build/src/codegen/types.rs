//! Input and output types from a record's schemas, with typify.
//!
//! typify 0.8 reads schemars 0.8 (draft-07 shaped) root schemas, so each registered 2020-12
//! schema is copied into that shape first: `$defs` becomes `definitions` (refs rewritten), the
//! root is titled `Input` or `Output`, and keywords whose Rust rendering would need crates the
//! user's crate does not have are dropped from the copy — `pattern` (regress), any `format` but
//! `uri` (chrono, uuid) — as are the string bounds of `uri` strings (so they map to
//! [`url::Url`]). The copy only shapes the types; the registered schema, embedded verbatim, stays
//! the authority both gates validate against.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{self, AssertUnwindSafe};

use proc_macro2::TokenStream;
use schemars08::schema::{InstanceType, RootSchema, SchemaObject};
use serde_json::{Map, Value};
use typify::{TypeSpace, TypeSpaceSettings};

use super::docs::doc_text;
use super::error::BuildError;
use crate::record::ToolRecord;

/// The Rust type every `format: uri` string becomes.
pub(crate) const URL_TYPE: &str = "::escepine_contract::url::Url";

/// serde implements arrays only up to this length: longer `minItems == maxItems` lists stay `Vec`.
const MAX_FIXED_ARRAY: u64 = 32;

/// Which of a record's schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// `input_schema`: the payload.
    Input,
    /// `output_schema`.
    Output,
}

impl Which {
    /// The root type's name.
    pub fn type_name(self) -> &'static str {
        match self {
            Which::Input => "Input",
            Which::Output => "Output",
        }
    }

    /// The record field.
    pub fn field(self) -> &'static str {
        match self {
            Which::Input => "input_schema",
            Which::Output => "output_schema",
        }
    }

    fn schema(self, record: &ToolRecord) -> &Value {
        match self {
            Which::Input => &record.input_schema,
            Which::Output => &record.output_schema,
        }
    }
}

/// The typify items of one schema of `record` (root type `Input` or `Output`, nested types,
/// typify's `error` module), to be placed in a module of their own.
pub(crate) fn schema_types(record: &ToolRecord, which: Which) -> Result<TokenStream, BuildError> {
    let err = |message: String| BuildError::Types {
        file: record.source.clone(),
        tool: record.tool_id.clone(),
        schema: which.field(),
        message,
    };
    let copy = typify_copy(which.schema(record), which, &record.tool_id);
    let root: RootSchema =
        serde_json::from_value(copy).map_err(|e| err(format!("not a schema typify reads: {e}")))?;

    let mut settings = TypeSpaceSettings::default();
    settings.with_struct_builder(false).with_conversion(
        SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            format: Some("uri".to_string()),
            ..Default::default()
        },
        URL_TYPE,
        std::iter::empty(),
    );
    // typify panics on some inputs the subset rules already refuse; never let that abort a
    // build script without saying which record it was.
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut space = TypeSpace::new(&settings);
        space.add_root_schema(root).map(|_| space)
    }));
    let space = match result {
        Ok(Ok(space)) => space,
        Ok(Err(e)) => return Err(err(e.to_string())),
        Err(panic) => return Err(err(panic_message(&panic))),
    };
    if space.uses_regress() || space.uses_chrono() || space.uses_uuid() {
        return Err(err(
            "the generated types would need a crate beyond serde, serde_json and url".to_string(),
        ));
    }
    Ok(space.to_stream())
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let msg = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("typify panicked");
    format!("typify failed: {msg}")
}

/// The copy of a registered schema fed to typify (see the module docs).
pub(crate) fn typify_copy(schema: &Value, which: Which, tool_id: &str) -> Value {
    let mut root = match schema {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let defs = match root.remove("$defs") {
        Some(Value::Object(d)) => d,
        _ => Map::new(),
    };
    let renames = def_names(&defs, which.type_name());

    let mut definitions = Map::new();
    for (name, def) in defs {
        let mut def = def;
        if let Value::Object(m) = &mut def {
            m.remove("title");
        }
        sanitize(&mut def, &renames);
        let new = renames.get(&name).cloned().unwrap_or(name);
        definitions.insert(new, def);
    }

    let mut root = Value::Object(root);
    sanitize(&mut root, &renames);
    if let Value::Object(m) = &mut root {
        m.insert("title".into(), Value::from(which.type_name()));
        if !m.contains_key("description") {
            let what = match which {
                Which::Input => "input (payload)",
                Which::Output => "output",
            };
            m.insert(
                "description".into(),
                Value::from(format!("The {what} of tool `{tool_id}`.")),
            );
        }
        if !definitions.is_empty() {
            m.insert("definitions".into(), Value::Object(definitions));
        }
    }
    root
}

/// New names for the `$defs` whose Rust name would clash with the root type or with each other.
fn def_names(defs: &Map<String, Value>, root: &str) -> BTreeMap<String, String> {
    let key = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .flat_map(char::to_lowercase)
            .collect()
    };
    let mut taken: BTreeSet<String> = BTreeSet::from([key(root)]);
    let mut renames = BTreeMap::new();
    for name in defs.keys() {
        if taken.insert(key(name)) {
            continue;
        }
        let mut n = 1;
        let new = loop {
            let candidate = if n == 1 {
                format!("{name}_def")
            } else {
                format!("{name}_def{n}")
            };
            if !defs.contains_key(&candidate) && taken.insert(key(&candidate)) {
                break candidate;
            }
            n += 1;
        };
        renames.insert(name.clone(), new);
    }
    renames
}

/// Reshape one schema node (recursively) for typify.
fn sanitize(node: &mut Value, renames: &BTreeMap<String, String>) {
    let Value::Object(m) = node else {
        return;
    };
    m.retain(|k, _| {
        !k.starts_with("x-")
            && !matches!(
                k.as_str(),
                "$schema" | "$id" | "$comment" | "pattern" | "title" | "$anchor"
            )
    });

    if let Some(Value::String(r)) = m.get_mut("$ref") {
        if let Some(name) = r.strip_prefix("#/$defs/") {
            let name = name.replace("~1", "/").replace("~0", "~");
            let new = renames.get(&name).cloned().unwrap_or(name);
            *r = format!(
                "#/definitions/{}",
                new.replace('~', "~0").replace('/', "~1")
            );
        }
    }

    if let Some(Value::String(d)) = m.get_mut("description") {
        *d = doc_text(d);
    }

    if let Some(c) = m.remove("const") {
        if !m.contains_key("enum") {
            m.insert("enum".into(), Value::Array(vec![c]));
        }
    }
    if let Some(ty) = m
        .get("enum")
        .and_then(Value::as_array)
        .map(|v| enum_type(v))
    {
        if matches!(ty, None | Some("boolean")) {
            // Booleans, objects, arrays or mixed values: typify has no good rendering; the
            // plain type (or any JSON value) it is, and the gate checks the values.
            m.remove("enum");
        }
        if let Some(t) = ty {
            m.entry("type").or_insert_with(|| Value::from(t));
        }
    }

    let is_string = m.get("type").and_then(Value::as_str) == Some("string");
    let is_uri = is_string && m.get("format").and_then(Value::as_str) == Some("uri");
    if is_uri {
        m.remove("minLength");
        m.remove("maxLength");
    } else {
        m.remove("format");
    }

    if let (Some(min), Some(max)) = (
        m.get("minItems").and_then(Value::as_u64),
        m.get("maxItems").and_then(Value::as_u64),
    ) {
        if min == max && min > MAX_FIXED_ARRAY {
            m.remove("minItems");
        }
    }

    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for v in props.values_mut() {
            sanitize(v, renames);
        }
    }
    if let Some(items) = m.get_mut("items") {
        sanitize(items, renames);
    }
    if let Some(ap @ Value::Object(_)) = m.get_mut("additionalProperties") {
        sanitize(ap, renames);
    }
}

/// The JSON type shared by every `enum` value, if any (`integer` values in a `number` enum
/// count as numbers).
fn enum_type(values: &[Value]) -> Option<&'static str> {
    let ty = |v: &Value| -> Option<&'static str> {
        Some(match v {
            Value::String(_) => "string",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            _ => return None,
        })
    };
    let mut out = ty(values.first()?)?;
    for v in values {
        match (out, ty(v)?) {
            (a, b) if a == b => {}
            ("integer", "number") | ("number", "integer") => out = "number",
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn copy_reshapes_for_typify() {
        let s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object", "additionalProperties": false, "title": "Mine",
            "properties": {
                "url": {"type": "string", "format": "uri", "maxLength": 2048, "x-note": 1},
                "when": {"type": "string", "format": "date-time", "pattern": "^2"},
                "kind": {"const": "page"},
                "flag": {"enum": [true]},
                "n": {"enum": [1, 2.5]},
                "link": {"$ref": "#/$defs/input"}
            },
            "$defs": {"input": {"type": "object", "additionalProperties": false, "title": "T"}}
        });
        let c = typify_copy(&s, Which::Input, "t");
        assert_eq!(c["title"], "Input");
        assert_eq!(c["description"], "The input (payload) of tool `t`.");
        assert!(c.get("$schema").is_none() && c.get("$defs").is_none());
        assert_eq!(
            c["properties"]["url"],
            json!({"type": "string", "format": "uri"})
        );
        assert_eq!(c["properties"]["when"], json!({"type": "string"}));
        assert_eq!(
            c["properties"]["kind"],
            json!({"enum": ["page"], "type": "string"})
        );
        assert_eq!(c["properties"]["flag"], json!({"type": "boolean"}));
        assert_eq!(
            c["properties"]["n"],
            json!({"enum": [1, 2.5], "type": "number"})
        );
        assert_eq!(
            c["properties"]["link"],
            json!({"$ref": "#/definitions/input_def"})
        );
        assert_eq!(
            c["definitions"]["input_def"],
            json!({"type": "object", "additionalProperties": false})
        );
    }

    #[test]
    fn long_fixed_lists_stay_vectors() {
        let s = json!({"type": "object", "additionalProperties": false, "properties": {
            "a": {"type": "array", "items": {"type": "integer"}, "minItems": 40, "maxItems": 40},
            "b": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}}});
        let c = typify_copy(&s, Which::Output, "t");
        assert!(c["properties"]["a"].get("minItems").is_none());
        assert_eq!(c["properties"]["b"]["minItems"], 2);
    }
}
