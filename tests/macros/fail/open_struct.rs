use escepine_registry_macros::Payload;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Payload)]
pub struct SearchInput {
    pub query: String,
}

fn main() {}
