//! Anthropic Messages API tools: `{"name", "description", "input_schema"}`.
//!
//! Rules relied on:
//! - Messages API reference, `tools[]`: `name` "must match the regex `^[a-zA-Z0-9_-]{1,64}$`"
//!   ([`NAME_RULE`]; newer pages allow up to 128 characters, we keep the stricter 64);
//!   `input_schema` is a "JSON Schema object defining the expected parameters for the tool" whose
//!   `type` is `"object"`; `description` is "a detailed description of what the tool does".
//! - Anthropic accepts JSON Schema in `input_schema` for (non-strict) tool use and documents no
//!   keyword it rejects there, so the registered schema is kept as written — `$defs`/`$ref`,
//!   formats and bounds included. The only removal is our own `x-` extensions
//!   (`x-authorize-each` becomes a sentence in the list's description).
//! - The API validates top-level property keys against `^[a-zA-Z0-9_.-]{1,64}$` (the error
//!   "tools.N.custom.input_schema.properties: Property keys should match pattern
//!   '^[a-zA-Z0-9_.-]{1,64}$'" is reported in anthropics/claude-code#79418 and several SDK
//!   issues; it is not on the documentation pages). A record whose parameter breaks it fails the
//!   export ([`PARAMETER_RULE`]) rather than being renamed behind the gate's back.

use escepine_registry::record::ToolRecord;
use serde_json::{json, Value};

use super::format::{name_fits, ExportError, Format};
use super::node::{self, escape};

/// Anthropic's rule for tool names.
pub const NAME_RULE: &str = "^[a-zA-Z0-9_-]{1,64}$";

/// The rule the Messages API enforces on `input_schema` property keys.
pub const PARAMETER_RULE: &str = "^[a-zA-Z0-9_.-]{1,64}$";

/// Whether `name` is a valid Anthropic tool name ([`NAME_RULE`]).
pub fn name_ok(name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    name_fits(name, 64, word, word)
}

/// Whether `name` passes [`PARAMETER_RULE`].
pub fn parameter_ok(name: &str) -> bool {
    let key = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    name_fits(name, 64, key, key)
}

/// The Anthropic tool of `record`.
///
/// # Errors
/// The tool id or a top-level parameter name breaks Anthropic's rules.
pub fn tool(record: &ToolRecord) -> Result<Value, ExportError> {
    let format = Format::Anthropic;
    if !name_ok(record.tool_id()) {
        return Err(ExportError::ToolName {
            format,
            tool: record.tool_id().to_string(),
            rule: NAME_RULE,
        });
    }
    let mut problems = Vec::new();
    if let Some(props) = record
        .input_schema()
        .get("properties")
        .and_then(Value::as_object)
    {
        for name in props.keys().filter(|n| !parameter_ok(n)) {
            problems.push(ExportError::ParameterName {
                format,
                tool: record.tool_id().to_string(),
                name: name.clone(),
                pointer: format!("/properties/{}", escape(name)),
                rule: PARAMETER_RULE,
            });
        }
    }
    match problems.len() {
        0 => {}
        1 => return Err(problems.remove(0)),
        _ => return Err(ExportError::Several(problems)),
    }
    Ok(json!({
        "name": record.tool_id(),
        "description": record.description(),
        "input_schema": node::without_extensions(record.input_schema()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::without_extensions;

    #[test]
    fn extensions_leave_and_names_named_x_stay() {
        let s = json!({"type": "object", "additionalProperties": false, "x-owner": "me",
            "properties": {
                "x-trace": {"type": "string"},
                "urls": {"type": "array", "x-authorize-each": true, "description": "URLs.",
                         "items": {"type": "string", "format": "uri"}}}});
        let out = without_extensions(&s);
        assert!(out.get("x-owner").is_none());
        assert!(out["properties"].get("x-trace").is_some());
        assert!(out["properties"]["urls"].get("x-authorize-each").is_none());
        assert!(out["properties"]["urls"]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("URLs. (each URL")));
        assert_eq!(
            out["properties"]["urls"]["items"],
            s["properties"]["urls"]["items"]
        );
    }

    #[test]
    fn parameter_names() {
        assert!(parameter_ok("max_results") && parameter_ok("a.b-c"));
        assert!(!parameter_ok("page size") && !parameter_ok(&"a".repeat(65)));
    }
}
