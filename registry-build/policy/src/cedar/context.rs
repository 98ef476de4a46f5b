//! The context types of actions, in one canonical form (common types resolved, primitive names
//! unified, `required` explicit, annotations dropped): what a `.cedarschema` declares for an
//! action, and what the schema generated from a record gives it. The build step writes the
//! declared form as a constant `#[tool]` compares its input with; the test `#[tool]` generates
//! compares the two forms whole.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use cedar_policy::SchemaFragment;
use serde_json::{Map, Value};

/// The context a `.cedarschema` of `schema_files` declares for `action`, canonical, with the
/// file that declares it (the last one, as Cedar merges them); `None` when none declares it.
///
/// # Errors
/// A file that cannot be read or does not parse.
pub fn declared(
    schema_files: &[PathBuf],
    action: &str,
) -> Result<Option<(PathBuf, Value)>, String> {
    Ok(declared_all(schema_files)?.remove(action))
}

/// Every action the `.cedarschema` files declare, by id, with its canonical context and the
/// file declaring it (the last one, as Cedar merges them): each file read and parsed once. An
/// action without `context` has the empty record.
///
/// # Errors
/// A file that cannot be read or does not parse.
pub fn declared_all(
    schema_files: &[PathBuf],
) -> Result<BTreeMap<String, (PathBuf, Value)>, String> {
    let mut found = BTreeMap::new();
    for file in schema_files {
        let text =
            fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let ns = namespace(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let common = ns
            .get("commonTypes")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let Some(actions) = ns.get("actions").and_then(Value::as_object) else {
            continue;
        };
        for (id, a) in actions {
            let context = a
                .pointer("/appliesTo/context")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "Record", "attributes": {}}));
            found.insert(id.clone(), (file.clone(), canon(&context, &common)));
        }
    }
    Ok(found)
}

/// The canonical context the generated schema text `text` gives `action` (`Null` when it has
/// none).
///
/// # Errors
/// A schema that does not parse.
pub fn generated_in(text: &str, action: &str) -> Result<Value, String> {
    let generated = namespace(text)?;
    Ok(canon(
        generated
            .pointer(&format!("/actions/{}/appliesTo/context", escape(action)))
            .unwrap_or(&Value::Null),
        &Map::new(),
    ))
}

/// The empty namespace of a schema fragment, as JSON.
fn namespace(text: &str) -> Result<Value, String> {
    let (fragment, _) = SchemaFragment::from_cedarschema_str(text).map_err(|e| format!("{e}"))?;
    let json = fragment.to_json_value().map_err(|e| format!("{e}"))?;
    Ok(json.get("").cloned().unwrap_or(Value::Null))
}

/// A canonical type in Cedar schema syntax, on one line.
pub fn render(ty: &Value) -> String {
    match ty {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            if let Some(Value::Object(attrs)) = o.get("Record") {
                let inner: Vec<String> = attrs
                    .iter()
                    .map(|(k, a)| {
                        let optional = a.get("required") == Some(&Value::Bool(false));
                        format!(
                            "{k}{}: {}",
                            if optional { "?" } else { "" },
                            render(a.get("type").unwrap_or(&Value::Null))
                        )
                    })
                    .collect();
                if inner.is_empty() {
                    "{}".into()
                } else {
                    format!("{{ {} }}", inner.join(", "))
                }
            } else if let Some(e) = o.get("Set") {
                format!("Set<{}>", render(e))
            } else if let Some(Value::String(e)) = o.get("Entity") {
                e.clone()
            } else {
                ty.to_string()
            }
        }
        Value::Null => "(none)".into(),
        other => other.to_string(),
    }
}

/// The `action "<id>" … };` block of the generated schema text.
pub fn declaration_of(text: &str, action: &str) -> String {
    let start = text
        .find(&format!("action \"{action}\""))
        .or_else(|| text.find(&format!("action {action} ")));
    match start {
        Some(s) => {
            let end = text[s..].find("};").map_or(text.len(), |e| s + e + 2);
            text[s..end].to_string()
        }
        None => text.to_string(),
    }
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A Cedar JSON-schema type in one canonical form: common types resolved, primitive names
/// unified, `required` explicit, annotations dropped.
pub fn canon(ty: &Value, common: &Map<String, Value>) -> Value {
    canon_depth(ty, common, 0)
}

fn canon_depth(ty: &Value, common: &Map<String, Value>, depth: usize) -> Value {
    if depth > 32 {
        return Value::String("<too deep>".into());
    }
    let kind = ty.get("type").and_then(Value::as_str).unwrap_or("");
    let name = ty.get("name").and_then(Value::as_str);
    let named = |n: &str| -> Value {
        let bare = n.strip_prefix("__cedar::").unwrap_or(n);
        if let Some(t) = common.get(n) {
            return canon_depth(t, common, depth + 1);
        }
        match bare {
            "String" => Value::from("String"),
            "Long" => Value::from("Long"),
            "Bool" | "Boolean" => Value::from("Bool"),
            "decimal" | "ipaddr" | "datetime" | "duration" => Value::from(bare),
            other => serde_json::json!({ "Entity": other }),
        }
    };
    match kind {
        "Record" => {
            let mut attrs = BTreeMap::new();
            if let Some(a) = ty.get("attributes").and_then(Value::as_object) {
                for (k, v) in a {
                    let required = v.get("required").and_then(Value::as_bool).unwrap_or(true);
                    attrs.insert(
                        k.clone(),
                        serde_json::json!({
                            "required": required,
                            "type": canon_depth(v, common, depth + 1),
                        }),
                    );
                }
            }
            serde_json::json!({ "Record": attrs })
        }
        "Set" => serde_json::json!({
            "Set": ty.get("element").map_or(Value::Null, |e| canon_depth(e, common, depth + 1))
        }),
        "EntityOrCommon" | "Entity" | "Extension" => named(name.unwrap_or("")),
        "" => Value::Null,
        other => named(other),
    }
}
