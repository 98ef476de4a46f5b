//! The entity store, built once: the user's entities (principals and their groups, validated
//! against the schema), one `Tool::"<id>"` per tool, and the action entities of the schema (so
//! `action in Action::"read-only"` holds for a read-only tool's action, in `forbid`s too).

use std::collections::{HashMap, HashSet};

use cedar_policy::{Entities, Entity, EntityUid, RestrictedExpression, Schema};
use serde_json::Value;

use super::error::AuthorizeError;
use escepine_registry::record::ToolRecord;

/// Build the store. `tool_uids` pairs each record with its resource uid.
pub fn build(
    schema: &Schema,
    tools: &[(&ToolRecord, EntityUid)],
    user: Option<&Value>,
) -> Result<Entities, AuthorizeError> {
    // With a schema, the parser validates every entity and adds the schema's action entities.
    let base = match user {
        Some(json) => Entities::from_json_value(json.clone(), Some(schema))
            .map_err(|e| AuthorizeError::Entities(e.to_string()))?,
        None => Entities::from_entities([], Some(schema))
            .map_err(|e| AuthorizeError::Entities(e.to_string()))?,
    };
    let mut resources = Vec::with_capacity(tools.len());
    for (record, uid) in tools {
        let attrs = HashMap::from([
            (
                "side_effect_class".to_string(),
                RestrictedExpression::new_string(record.side_effect_class().as_str().to_string()),
            ),
            (
                "version".to_string(),
                RestrictedExpression::new_string(record.version().to_string()),
            ),
        ]);
        let entity = Entity::new(uid.clone(), attrs, HashSet::new())
            .map_err(|e| AuthorizeError::Entities(format!("tool `{}`: {e}", record.tool_id())))?;
        resources.push(entity);
    }
    base.add_entities(resources, Some(schema))
        .map_err(|e| AuthorizeError::Entities(e.to_string()))
}
