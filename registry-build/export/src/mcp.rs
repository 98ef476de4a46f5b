//! Model Context Protocol `tools/list` entries:
//! `{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}`.
//!
//! Rules relied on (MCP specification 2025-11-25, `schema.ts` `Tool` and `ToolAnnotations`,
//! and "Tool names" in server/tools):
//! - `inputSchema` is "a JSON Schema object defining the expected parameters for the tool" with
//!   `type: "object"`; `outputSchema` is optional, "restricted to type: \"object\" at the root
//!   level", defaulting to JSON Schema 2020-12 — exactly what a record registers. Both are
//!   passed **as registered**, byte for byte: the MCP server of this runtime validates against
//!   the very same documents, and our `x-authorize-each` is kept there on purpose (JSON Schema
//!   2020-12 treats unknown keywords as annotations, and it tells a governance-aware client
//!   that each URL of the list is authorized on its own). MCP is the one export where our
//!   extensions appear.
//! - Tool names "SHOULD be between 1 and 128 characters", of ASCII letters, digits, `_`, `-`
//!   and `.` ([`NAME_RULE`]; every registered tool id fits unless it is longer than 128).
//! - `ToolAnnotations` are hints: `readOnlyHint` ("the tool does not modify its environment",
//!   default false); `destructiveHint` ("may perform destructive updates"; false means "only
//!   additive updates"; default true) and `idempotentHint` ("calling the tool repeatedly with
//!   the same arguments will have no additional effect"; default false), both "meaningful only
//!   when `readOnlyHint == false`"; `openWorldHint` ("may interact with an open world of
//!   external entities", default true).
//!
//! From the side-effect class ([`annotations`]):
//! | class | readOnlyHint | destructiveHint | idempotentHint |
//! |---|---|---|---|
//! | `read-only` | true | — | — |
//! | `compensatable` | false | true | false |
//! | `supersede` | false | false | true |
//!
//! A supersede write records a later version of a state (design.md: rollback marks it
//! superseded), so the earlier version is not destroyed — an additive update — and writing the
//! same version again leaves the same state — idempotent. A compensatable write has an inverse
//! because it changes something that must be undone: destructive, and not assumed idempotent.
//! `openWorldHint` is not derived: a record cannot tell from its profile whether a tool's
//! domain is open (its egress may be empty until a run-time overlay adds a host, as for a
//! self-hosted search API, the specification's very example of an open world). It is passed
//! when the record declares `open_world` (kept from the server's own `openWorldHint` at
//! import); otherwise the specification's default (true) stands.
//!
//! `title` ("intended for UI and end-user contexts", `BaseMetadata`) is the record's `title`,
//! when it has one. The OpenAI, Anthropic and Gemini formats have no such field, so their
//! exports leave it out.

use escepine_contract::SideEffectClass;
use escepine_registry::record::ToolRecord;
use serde_json::{json, Map, Value};

use super::format::{name_fits, ExportError, Format};

/// The MCP tool-name rule (a SHOULD in the specification).
pub const NAME_RULE: &str = "^[A-Za-z0-9_.-]{1,128}$";

/// Whether `name` follows [`NAME_RULE`].
pub fn name_ok(name: &str) -> bool {
    let c = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    name_fits(name, 128, c, c)
}

/// The `tools/list` entry of `record`: its title, its schemas exactly as registered,
/// annotations from its side-effect class (and its `open_world`).
pub fn tool(record: &ToolRecord) -> Value {
    let mut t = Map::new();
    t.insert("name".into(), json!(record.tool_id()));
    if let Some(title) = &record.title() {
        t.insert("title".into(), json!(title));
    }
    t.insert("description".into(), json!(record.description()));
    t.insert("inputSchema".into(), record.input_schema().clone());
    t.insert("outputSchema".into(), record.output_schema().clone());
    t.insert("annotations".into(), annotations(record));
    Value::Object(t)
}

/// [`tool`], refusing a tool id that breaks the specification's naming rule.
///
/// # Errors
/// The tool id is longer than 128 characters.
pub fn checked_tool(record: &ToolRecord) -> Result<Value, ExportError> {
    if name_ok(record.tool_id()) {
        Ok(tool(record))
    } else {
        Err(ExportError::ToolName {
            format: Format::Mcp,
            tool: record.tool_id().to_string(),
            rule: NAME_RULE,
        })
    }
}

/// The `ToolAnnotations` of `record` (see the module documentation for the mapping).
pub fn annotations(record: &ToolRecord) -> Value {
    let mut a = Map::new();
    if let Some(open) = record.open_world() {
        a.insert("openWorldHint".into(), Value::Bool(open));
    }
    match record.side_effect_class() {
        SideEffectClass::ReadOnly => {
            a.insert("readOnlyHint".into(), Value::Bool(true));
        }
        SideEffectClass::Compensatable => {
            a.insert("readOnlyHint".into(), Value::Bool(false));
            a.insert("destructiveHint".into(), Value::Bool(true));
            a.insert("idempotentHint".into(), Value::Bool(false));
        }
        SideEffectClass::Supersede => {
            a.insert("readOnlyHint".into(), Value::Bool(false));
            a.insert("destructiveHint".into(), Value::Bool(false));
            a.insert("idempotentHint".into(), Value::Bool(true));
        }
    }
    Value::Object(a)
}
