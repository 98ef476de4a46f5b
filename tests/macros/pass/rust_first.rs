//! A Rust-first tool: the whole contract on the function, its schemas from its payload types.

use escepine_contract::{CedarAction, Payload, SideEffectClass, Tool, ToolError};
use escepine_registry_macros::{tool, Payload};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What build.rs generates from `tests/macros/registry/policies` (checked to be current).
#[path = "../registry.rs"]
mod registry;

#[derive(Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct StatsInput {
    /// The text.
    pub text: String,
    /// At most this many words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    pub mode: Mode,
}

/// How to count.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Quickly.
    Fast,
    Exact,
}

#[derive(Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct StatsOutput {
    pub words: u64,
}

/// Count the words of a text.
///
/// Whitespace separates words.
#[tool(
    id = "word_count",
    version = "1.2.0",
    side_effect = "read-only",
    timeout_ms = 5000,
    retry(max_attempts = 3, backoff_ms = 100),
    on_failure(halt, halt_and_escalate),
    action_groups("text"),
    sandbox(egress("api.example.com:443", "*.example.org")),
    secrets("X_API_KEY")
)]
async fn text_stats(input: StatsInput) -> Result<StatsOutput, ToolError> {
    Ok(StatsOutput {
        words: input.text.split_whitespace().count() as u64,
    })
}

fn main() {
    let c = <text_stats as Tool>::CONTRACT;
    assert_eq!(c.id, "word_count");
    assert_eq!(c.version, "1.2.0");
    assert_eq!(
        c.description,
        "Count the words of a text.\n\nWhitespace separates words."
    );
    assert_eq!(c.class, SideEffectClass::ReadOnly);
    assert_eq!(
        (c.timeout_ms, c.retry.max_attempts, c.retry.backoff_ms),
        (5000, 3, 100)
    );
    assert_eq!(c.egress, ["api.example.com:443", "*.example.org"]);
    assert_eq!(c.secrets, ["X_API_KEY"]);
    assert_eq!(c.endpoint.args, ["word_count"]);
    assert_eq!(
        <<text_stats as Tool>::Action as CedarAction>::ACTION_ID,
        "word_count"
    );

    // The schemas come from the payload types, normalised into the subset.
    let input = StatsInput::payload_schema();
    assert_eq!(input["additionalProperties"], false);
    assert_eq!(input["properties"]["max_tokens"]["type"], "integer");
    assert!(input["properties"]["max_tokens"].get("format").is_none());
    assert_eq!(input["required"], serde_json::json!(["text", "mode"]));
    // A unit enum is a string `enum` (schemars' `oneOf` of documented variants flattened).
    let mut modes: Vec<String> =
        serde_json::from_value(input["$defs"]["Mode"]["enum"].clone()).unwrap();
    modes.sort();
    assert_eq!(modes, ["exact", "fast"]);
    assert_eq!(input["$defs"]["Mode"]["type"], "string");
    assert!(input["$defs"]["Mode"].get("oneOf").is_none());
    let record = <text_stats as Tool>::contract().to_record().unwrap();
    assert_eq!(record["input_schema"], input);
    assert_eq!(record["cedar_action"], "Action::\"word_count\"");
}
