//! The entity store, built once: the user's entities (principals and their groups, validated
//! against the schema), one `Tool::"<id>"` per tool, and the action entities of the schema (so
//! `action in Action::"read-only"` holds for a read-only tool's action, in `forbid`s too).

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

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

/// The store a request of `principal` is evaluated with when an identity provider vouched for
/// its membership in `parents` (an access token's claims, [`escepine_contract::Attestation`]):
/// `base` itself when there are no parents; otherwise a copy in which the principal's entity —
/// the one `base` holds, with its attributes and parents, or a new one without attributes — is
/// also a member of each parent, validated against `schema` (a parent type the schema does not
/// allow the principal's type to be a member of is refused) and with the transitive closure
/// recomputed, so a parent's own ancestors hold too. Entity ids are used verbatim, never parsed.
///
/// # Errors
/// A sentence naming the principal and what Cedar refused.
pub fn with_parents<'a>(
    base: &'a Entities,
    schema: &Schema,
    principal: &EntityUid,
    parents: &[escepine_contract::Principal],
) -> Result<std::borrow::Cow<'a, Entities>, String> {
    if parents.is_empty() {
        return Ok(std::borrow::Cow::Borrowed(base));
    }
    let mut ancestors = HashSet::with_capacity(parents.len());
    for parent in parents {
        let ty = cedar_policy::EntityTypeName::from_str(&parent.entity_type)
            .map_err(|e| format!("`{}` is not a Cedar entity type: {e}", parent.entity_type))?;
        ancestors.insert(EntityUid::from_type_name_and_id(
            ty,
            cedar_policy::EntityId::new(&parent.id),
        ));
    }
    let (attrs, held) = match base.get(principal) {
        Some(entity) => {
            let (_, attrs, parents) = entity.clone().into_inner();
            (attrs, parents)
        }
        None => (HashMap::new(), HashSet::new()),
    };
    ancestors.extend(held);
    let entity = Entity::new(principal.clone(), attrs, ancestors)
        .map_err(|e| format!("{principal} with the parents its token names: {e}"))?;
    base.clone()
        .upsert_entities([entity], Some(schema))
        .map(std::borrow::Cow::Owned)
        .map_err(|e| format!("{principal} with the parents its token names: {e}"))
}
