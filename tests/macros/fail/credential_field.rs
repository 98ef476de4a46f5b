use escepine_registry_macros::Payload;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    pub query: String,
    pub api_key: String,
    #[serde(rename = "pageToken")]
    pub cursor: String,
    pub max_tokens: u32,
}

fn main() {}
