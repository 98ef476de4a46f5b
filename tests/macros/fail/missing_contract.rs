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
    pub text: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct Out {
    pub words: u64,
}

#[tool(id = "text_stats", side_effect = "read-only", retry(backoff_ms = 0))]
async fn text_stats(input: In) -> Result<Out, ToolError> {
    Ok(Out {
        words: input.text.split_whitespace().count() as u64,
    })
}

#[tool(record = "echo", timeout_ms = 5, id = "echo")]
async fn echo(input: In) -> Out {
    Out {
        words: input.text.len() as u64,
    }
}

#[tool(record = "supersede", timeout_ms = 5)]
async fn undo(input: In) -> Out {
    Out {
        words: input.text.len() as u64,
    }
}

fn main() {}
