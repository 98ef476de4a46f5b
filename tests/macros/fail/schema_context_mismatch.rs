//! The input of `text_stats` has `text: u32`; the `.cedarschema` declares `context.input.text` a
//! `String`: the build fails, naming the attribute, both types and the schema file.
use escepine_contract::ToolError;
use escepine_registry_macros::{tool, Payload};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What build.rs generates from `tests/macros/registry/policies` (checked to be current).
#[path = "../registry.rs"]
mod registry;

#[derive(Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct In {
    pub text: u32,
}

#[derive(Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct Out {
    pub words: u64,
}

/// Count words.
#[tool(
    id = "text_stats",
    version = "1.0.0",
    side_effect = "read-only",
    timeout_ms = 5000,
    retry(max_attempts = 1, backoff_ms = 0),
    on_failure(halt)
)]
async fn text_stats(input: In) -> Result<Out, ToolError> {
    Ok(Out {
        words: u64::from(input.text),
    })
}

fn main() {}
