//! The types of one tool, from its two schemas, with typify: one type space per tool.
//!
//! typify 0.8 reads schemars 0.8 (draft-07 shaped) schemas, so each registered 2020-12 schema
//! is copied into that shape first ([`typify_copy`]): `$defs` becomes `definitions` (refs
//! rewritten), and keywords whose Rust rendering would need crates the user's crate does not
//! have, or would wrap a plain value in a validating newtype, are dropped from the copy —
//! `pattern` (regress), any `format` but `uri` (chrono, uuid), and the `minLength` /
//! `maxLength` of every string. The copy only shapes the types; the registered schema, embedded
//! verbatim, stays the authority both gates validate against (as it is for `pattern`).
//!
//! The input root becomes `Input`, the output root `Output`, and both go into one type space
//! with the definitions of both schemas, so the tool has one set of types: a string enum whose
//! values appear more than once (the same `format` in the payload and the output) becomes one
//! shared enum, named after its property. typify's `error` module is left out: the generated file
//! has one, shared by every tool.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{self, AssertUnwindSafe};

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::quote;
use schemars08::schema::{InstanceType, Schema, SchemaObject};
use serde_json::{Map, Value};
use typify::{TypeSpace, TypeSpaceSettings};

use super::docs::doc_text;
use super::error::BuildError;
use super::string_enums;
use escepine_registry::record::ToolRecord;
use escepine_registry::rust_names::upper_camel;

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

    fn schema(self, record: &ToolRecord) -> &Value {
        match self {
            Which::Input => record.input_schema(),
            Which::Output => record.output_schema(),
        }
    }
}

/// Type names the tool module defines itself, which no definition may take.
const MODULE_NAMES: &[&str] = &["Input", "Output", "Tool", "Files"];

/// The typify items of `record` (`Input`, `Output` and every nested or shared type), to be
/// placed in the tool's module beside `use super::error;`.
pub(crate) fn tool_types(
    record: &ToolRecord,
    contract: &syn::Path,
    url_type: &str,
) -> Result<TokenStream, BuildError> {
    let err = |message: String| BuildError::Types {
        file: record.source().to_path_buf(),
        tool: record.tool_id().to_string(),
        message,
    };
    let definitions = one_space(record);
    let mut defs = Vec::with_capacity(definitions.len());
    for (name, def) in definitions {
        let schema: Schema = serde_json::from_value(def)
            .map_err(|e| err(format!("`{name}` is not a schema typify reads: {e}")))?;
        defs.push((name, schema));
    }

    let mut settings = TypeSpaceSettings::default();
    settings.with_struct_builder(false).with_conversion(
        SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            format: Some("uri".to_string()),
            ..Default::default()
        },
        url_type,
        std::iter::empty(),
    );
    // typify panics on some inputs the subset rules already refuse; never let that abort a
    // build script without saying which record it was.
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut space = TypeSpace::new(&settings);
        space.add_ref_types(defs).map(|()| space)
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
    Ok(string_enums::fold(
        without_error_module(space.to_stream()),
        contract,
    ))
}

/// `pub mod error`: the conversion error of every tool's enums (`FromStr`, `TryFrom`), which
/// typify would emit once per type space; each tool module imports it.
pub(crate) fn conversion_error_module() -> TokenStream {
    quote! {
        /// Error types.
        #[allow(dead_code)]
        pub mod error {
            /// Error from a `TryFrom` or `FromStr` implementation.
            pub struct ConversionError(::std::borrow::Cow<'static, str>);

            impl ::std::error::Error for ConversionError {}

            impl ::std::fmt::Display for ConversionError {
                fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    ::std::fmt::Display::fmt(&self.0, f)
                }
            }

            impl ::std::fmt::Debug for ConversionError {
                fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    ::std::fmt::Debug::fmt(&self.0, f)
                }
            }

            impl ::std::convert::From<&'static str> for ConversionError {
                fn from(value: &'static str) -> Self {
                    Self(value.into())
                }
            }

            impl ::std::convert::From<::std::string::String> for ConversionError {
                fn from(value: ::std::string::String) -> Self {
                    Self(value.into())
                }
            }
        }
    }
}

/// typify's output less its trailing `#[doc = " Error types."] pub mod error { … }`.
fn without_error_module(stream: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = stream.into_iter().collect();
    let is_error_mod = |w: &[TokenTree]| {
        matches!(&w[0], TokenTree::Punct(p) if p.as_char() == '#')
            && matches!(&w[1], TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket)
            && matches!(&w[2], TokenTree::Ident(i) if i == "pub")
            && matches!(&w[3], TokenTree::Ident(i) if i == "mod")
            && matches!(&w[4], TokenTree::Ident(i) if i == "error")
            && matches!(&w[5], TokenTree::Group(g) if g.delimiter() == Delimiter::Brace)
    };
    match trees.windows(6).position(is_error_mod) {
        Some(at) => trees[..at]
            .iter()
            .chain(&trees[at + 6..])
            .cloned()
            .collect(),
        None => trees.into_iter().collect(),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let msg = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("typify failed");
    format!("typify failed: {msg}")
}

/// The definitions of the tool's type space: `Input`, `Output`, the `$defs` of both schemas
/// (one shared where both define the same name alike, renamed where they differ) and one
/// definition per repeated string enum.
pub(crate) fn one_space(record: &ToolRecord) -> Map<String, Value> {
    let mut input = typify_copy(Which::Input.schema(record), Which::Input, record.tool_id());
    let mut output = typify_copy(
        Which::Output.schema(record),
        Which::Output,
        record.tool_id(),
    );
    let mut defs = take_definitions(&mut input);
    let mut output_defs = take_definitions(&mut output);

    // Output definitions named like an input one: shared when alike, else renamed.
    let mut renames = BTreeMap::new();
    let taken: BTreeSet<String> = defs.keys().map(|k| rust_key(k)).collect();
    for (name, def) in output_defs.iter() {
        let same = defs
            .iter()
            .find(|(k, _)| rust_key(k) == rust_key(name))
            .map(|(_, d)| d);
        match same {
            Some(d) if d == def => {
                renames.insert(name.clone(), None);
            }
            Some(_) => {
                let mut n = format!("Output{}", upper_camel(name));
                while taken.contains(&rust_key(&n)) || output_defs.contains_key(&n) {
                    n.push('_');
                }
                renames.insert(name.clone(), Some(n));
            }
            None => {}
        }
    }
    if !renames.is_empty() {
        let map: BTreeMap<String, String> = renames
            .iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
            .collect();
        rename_refs(&mut output, &map);
        for def in output_defs.values_mut() {
            rename_refs(def, &map);
        }
    }
    for (name, def) in std::mem::take(&mut output_defs) {
        match renames.get(&name) {
            Some(None) => {}
            Some(Some(new)) => {
                defs.insert(new.clone(), def);
            }
            None => {
                defs.insert(name, def);
            }
        }
    }

    let mut all = Map::new();
    all.insert("Input".into(), input);
    all.insert("Output".into(), output);
    all.extend(defs);
    share_enums(&mut all);
    all
}

fn take_definitions(root: &mut Value) -> Map<String, Value> {
    match root.as_object_mut().and_then(|m| m.remove("definitions")) {
        Some(Value::Object(d)) => d,
        _ => Map::new(),
    }
}

/// The key two definition names clash on in Rust (typify's CamelCase drops the rest).
fn rust_key(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .flat_map(char::to_lowercase)
        .collect()
}

/// Rewrite `#/definitions/<old>` refs (recursively) by `map`.
fn rename_refs(node: &mut Value, map: &BTreeMap<String, String>) {
    match node {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                if let Some(new) = r.strip_prefix("#/definitions/").and_then(|n| map.get(n)) {
                    *r = format!("#/definitions/{new}");
                }
            }
            for v in m.values_mut() {
                rename_refs(v, map);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| rename_refs(v, map)),
        _ => {}
    }
}

/// Hoist every string enum whose values appear more than once into one definition, named
/// after the property of its first occurrence (unless that name is taken).
fn share_enums(all: &mut Map<String, Value>) {
    let mut found: Vec<(Value, String)> = Vec::new();
    for (name, def) in all.iter() {
        collect_enums(def, name, true, &mut found);
    }
    let mut by_values: BTreeMap<String, (String, usize)> = BTreeMap::new();
    for (values, prop) in &found {
        let e = by_values
            .entry(values.to_string())
            .or_insert_with(|| (prop.clone(), 0));
        e.1 += 1;
    }
    let mut taken: BTreeSet<String> = all.keys().map(|k| rust_key(k)).collect();
    taken.extend(MODULE_NAMES.iter().map(|n| rust_key(n)));
    let mut hoisted: BTreeMap<String, String> = BTreeMap::new();
    for (values, (prop, count)) in by_values {
        let name = upper_camel(&prop);
        if count < 2 || name.is_empty() || !taken.insert(rust_key(&name)) {
            continue;
        }
        hoisted.insert(values, name);
    }
    if hoisted.is_empty() {
        return;
    }
    let mut new_defs = Map::new();
    for def in all.values_mut() {
        replace_enums(def, true, &hoisted, &mut new_defs);
    }
    all.extend(new_defs);
}

/// Every string enum node below `node` (not `node` itself when it is a definition's root):
/// its values and its property's name.
fn collect_enums(node: &Value, prop: &str, is_def: bool, out: &mut Vec<(Value, String)>) {
    let Value::Object(m) = node else {
        return;
    };
    if !is_def && is_string_enum(m) {
        if let Some(values) = m.get("enum") {
            out.push((values.clone(), prop.to_string()));
        }
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, v) in props {
            collect_enums(v, k, false, out);
        }
    }
    if let Some(items) = m.get("items") {
        collect_enums(items, prop, false, out);
    }
    if let Some(ap @ Value::Object(_)) = m.get("additionalProperties") {
        collect_enums(ap, prop, false, out);
    }
}

fn replace_enums(
    node: &mut Value,
    is_def: bool,
    hoisted: &BTreeMap<String, String>,
    new_defs: &mut Map<String, Value>,
) {
    let Value::Object(m) = node else {
        return;
    };
    if !is_def && is_string_enum(m) {
        let name = m.get("enum").and_then(|v| hoisted.get(&v.to_string()));
        if let Some(name) = name {
            let def = std::mem::take(m);
            new_defs.entry(name.clone()).or_insert(Value::Object(def));
            m.insert("$ref".into(), Value::from(format!("#/definitions/{name}")));
            return;
        }
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for v in props.values_mut() {
            replace_enums(v, false, hoisted, new_defs);
        }
    }
    if let Some(items) = m.get_mut("items") {
        replace_enums(items, false, hoisted, new_defs);
    }
    if let Some(ap @ Value::Object(_)) = m.get_mut("additionalProperties") {
        replace_enums(ap, false, hoisted, new_defs);
    }
}

fn is_string_enum(m: &Map<String, Value>) -> bool {
    m.get("type").and_then(Value::as_str) == Some("string")
        && m.get("enum").is_some_and(Value::is_array)
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
    let mut taken: BTreeSet<String> = MODULE_NAMES.iter().map(|n| key(n)).collect();
    taken.insert(key(root));
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

    // String bounds stay in the registered schema (the gates check them), not in newtypes.
    m.remove("minLength");
    m.remove("maxLength");
    let is_string = m.get("type").and_then(Value::as_str) == Some("string");
    if !(is_string && m.get("format").and_then(Value::as_str) == Some("uri")) {
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
