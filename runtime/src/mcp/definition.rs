//! Pinned MCP tool definitions: the digest `escepine import mcp` writes into
//! `endpoint.definition_sha256`, and what the `mcp-stdio` transport says when a server's
//! current definition no longer matches it.
//!
//! [`definition_sha256`] is the SHA-256 (lower-case hex) of the canonical JSON
//! ([`escepine_ledger::entry::canonical_json`]: keys sorted by code point at every depth, no
//! insignificant whitespace) of the whole tool object the server listed — name, title,
//! description, schemas, annotations and anything else it holds — minus its top-level `_meta`
//! (which MCP reserves for protocol metadata that may vary between sessions).

use escepine_registry::record::ToolRecord;
use serde_json::Value;

use escepine_ledger::entry::{canonical_json, sha256_hex};

/// The digest of one listed MCP tool definition (see the module documentation).
pub fn definition_sha256(tool: &Value) -> String {
    let mut tool = tool.clone();
    if let Value::Object(m) = &mut tool {
        m.remove("_meta");
    }
    sha256_hex(canonical_json(&tool))
}

/// `Some(why)` when the listed `tool` does not match the pin `pinned` of `record`: a message
/// naming both digests and every difference that can be told from the record, which holds the
/// description and title verbatim (compared exactly), the class `read-only` only for
/// `readOnlyHint: true`, the `open_world` hint, and the reviewed forms of the schemas (whose
/// top-level property names are compared: a difference there may also be a reviewer's
/// decision).
pub fn changed(record: &ToolRecord, tool: &Value, pinned: &str) -> Option<String> {
    let listed = definition_sha256(tool);
    if listed == pinned {
        return None;
    }
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
    let ours = record.to_json();
    let mut found = Vec::new();
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let listed_description = text(tool.get("description"));
    if listed_description.as_deref() != Some(record.description()) {
        found.push(format!(
            "description (record: {:?}; server: {})",
            record.description(),
            listed_description.map_or("none".into(), |d| format!("{d:?}"))
        ));
    }
    if let Some(title) = ours.get("title") {
        let listed_title = text(tool.get("title"));
        if listed_title.as_deref() != title.as_str() {
            found.push(format!(
                "title (record: {title}; server: {})",
                listed_title.map_or("none".into(), |t| format!("{t:?}"))
            ));
        }
    }
    let hint = |k: &str| {
        tool.get("annotations")
            .and_then(|a| a.get(k))
            .and_then(Value::as_bool)
    };
    if record.side_effect_class().as_str() == "read-only" && hint("readOnlyHint") != Some(true) {
        found.push("annotations.readOnlyHint (no longer true)".into());
    }
    if let Some(open) = ours.get("open_world").and_then(Value::as_bool) {
        if hint("openWorldHint").unwrap_or(true) != open {
            found.push(format!(
                "annotations.openWorldHint (record open_world: {open})"
            ));
        }
    }
    for (listed_key, schema, field) in [
        ("inputSchema", record.input_schema(), "input_schema"),
        ("outputSchema", record.output_schema(), "output_schema"),
    ] {
        let names = |s: Option<&Value>| -> Vec<String> {
            s.and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default()
        };
        let (theirs, mine) = (names(tool.get(listed_key)), names(Some(schema)));
        let added: Vec<&str> = theirs
            .iter()
            .filter(|n| !mine.contains(n))
            .map(String::as_str)
            .collect();
        let gone: Vec<&str> = mine
            .iter()
            .filter(|n| !theirs.contains(n))
            .map(String::as_str)
            .collect();
        if tool.get(listed_key).is_some() && (!added.is_empty() || !gone.is_empty()) {
            found.push(format!(
                "{listed_key} properties (server only: [{}]; record `{field}` only: [{}])",
                added.join(", "),
                gone.join(", ")
            ));
        }
    }
    let what = if found.is_empty() {
        "a part the record does not hold verbatim (its schemas' details, title or \
         annotations)"
            .to_string()
    } else {
        found.join("; ")
    };
    Some(format!(
        "the MCP server changed the definition of `{name}` since the record pinned it: {what}; \
         no tools/call was sent (definition_sha256 pinned {pinned}, listed now {listed}); \
         review the change and import the tool again"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(tool: &Value) -> ToolRecord {
        let text = json!({
            "tool_id": "echo_text", "version": "1.0.0", "description": "Echo.",
            "input_schema": {"type": "object", "additionalProperties": false,
                             "properties": {"text": {"type": "string"}}},
            "output_schema": {"type": "object", "additionalProperties": false, "properties": {}},
            "side_effect_class": "read-only", "accepts_credentials": false, "timeout_ms": 1000,
            "retry": {"max_attempts": 1, "backoff_ms": 0}, "on_failure": ["halt"],
            "endpoint": {"transport": "mcp-stdio", "command": "/bin/sh",
                         "definition_sha256": definition_sha256(tool)},
            "auth": {"secrets": []}, "sandbox_profile": {"egress": [], "filesystem": "workspace"}
        })
        .to_string();
        let files = [escepine_registry::diagnostic::SourceFile::new(
            "r.json", text,
        )];
        let bins = escepine_registry::endpoint::WorkspaceBins::default();
        let ctx = escepine_registry::rules::record::Context {
            envelope: None,
            bins: &bins,
        };
        let (mut records, diags) = escepine_registry::registry::check_records(&files, &ctx);
        assert!(diags.is_empty(), "{}", diags.render());
        records.remove(0)
    }

    #[test]
    fn a_change_names_what_differs_and_both_digests() {
        let listed = json!({"name": "echo_text", "description": "Echo.",
                            "inputSchema": {"type": "object",
                                            "properties": {"text": {"type": "string"}}},
                            "annotations": {"readOnlyHint": true}});
        let r = record(&listed);
        let pin = r.endpoint().definition_sha256.clone().expect("pinned");
        assert_eq!(changed(&r, &listed, &pin), None);
        let now = json!({"name": "echo_text", "description": "Echo, and mail it.",
                         "inputSchema": {"type": "object",
                                         "properties": {"text": {"type": "string"},
                                                        "to": {"type": "string"}}}});
        let why = changed(&r, &now, &pin).expect("changed");
        assert!(
            why.contains("description (record: \"Echo.\"; server: \"Echo, and mail it.\")"),
            "{why}"
        );
        assert!(why.contains("annotations.readOnlyHint"), "{why}");
        assert!(why.contains("server only: [to]"), "{why}");
        assert!(
            why.contains(&pin) && why.contains(&definition_sha256(&now)),
            "{why}"
        );
        // A change the record cannot show is still named by its digests.
        let meta_only = json!({"name": "echo_text", "description": "Echo.",
                               "inputSchema": {"type": "object", "minProperties": 1,
                                               "properties": {"text": {"type": "string"}}},
                               "annotations": {"readOnlyHint": true}});
        let why = changed(&r, &meta_only, &pin).expect("changed");
        assert!(why.contains("does not hold verbatim"), "{why}");
    }

    #[test]
    fn the_digest_ignores_key_order_whitespace_and_meta() {
        let a = json!({"name": "t", "inputSchema": {"type": "object", "properties": {}}});
        let b: Value = serde_json::from_str(
            r#"{ "inputSchema": {"properties": {}, "type": "object"}, "name": "t",
                 "_meta": {"x": 1} }"#,
        )
        .expect("json");
        assert_eq!(definition_sha256(&a), definition_sha256(&b));
        assert_eq!(definition_sha256(&a).len(), 64);
        let c = json!({"name": "t", "inputSchema": {"type": "object", "properties": {}},
                       "description": "d"});
        assert_ne!(definition_sha256(&a), definition_sha256(&c));
        // `_meta` below the top level is part of the definition.
        let d = json!({"name": "t", "inputSchema": {"type": "object", "_meta": 1}});
        let e = json!({"name": "t", "inputSchema": {"type": "object"}});
        assert_ne!(definition_sha256(&d), definition_sha256(&e));
    }
}
