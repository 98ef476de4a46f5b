//! The entity store, built once: the user's entities (principals and their groups, validated
//! against the schema), one `Tool::"<id>"` per tool, and the action entities of the schema (so
//! `action in Action::"read-only"` holds for a read-only tool's action, in `forbid`s too).

use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::sync::Arc;

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

/// The stores of principals an identity provider vouched into parents, each built once per
/// principal and parents ([`with_parents`]) and kept: tokens of one principal repeat, and
/// building a store clones the base and recomputes its transitive closure. At most
/// [`Members::CAPACITY`] stores are kept; when full, all are dropped and the next ones rebuilt.
#[derive(Debug, Default)]
pub struct Members {
    stores: std::sync::Mutex<MemberStores>,
}

/// The kept stores, by principal and the parents it was vouched into.
type MemberStores = HashMap<(EntityUid, Vec<escepine_contract::Principal>), Arc<Entities>>;

/// A store requests are evaluated with: the base one, or a principal's with its parents.
#[derive(Debug, Clone)]
pub enum Store<'a> {
    /// The base store (no parents vouched for).
    Base(&'a Entities),
    /// The base store with the principal in its parents.
    Member(Arc<Entities>),
}

impl std::ops::Deref for Store<'_> {
    type Target = Entities;

    fn deref(&self) -> &Entities {
        match self {
            Self::Base(e) => e,
            Self::Member(e) => e,
        }
    }
}

impl Members {
    /// How many stores are kept at most.
    pub const CAPACITY: usize = 256;

    /// The store of `principal` in `parents` over `base` ([`with_parents`]), built once.
    ///
    /// # Errors
    /// As [`with_parents`] (a refused store is not kept).
    pub fn store<'a>(
        &self,
        base: &'a Entities,
        schema: &Schema,
        principal: &EntityUid,
        parents: &[escepine_contract::Principal],
    ) -> Result<Store<'a>, String> {
        if parents.is_empty() {
            return Ok(Store::Base(base));
        }
        let key = (principal.clone(), parents.to_vec());
        if let Some(hit) = self.lock().get(&key) {
            return Ok(Store::Member(Arc::clone(hit)));
        }
        let built = Arc::new(with_parents(base, schema, principal, parents)?);
        let mut stores = self.lock();
        if stores.len() >= Self::CAPACITY {
            stores.clear();
        }
        stores.insert(key, Arc::clone(&built));
        Ok(Store::Member(built))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemberStores> {
        // The map holds no invariant a panic could break halfway.
        self.stores.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The store a request of `principal` is evaluated with when an identity provider vouched for
/// its membership in `parents` (an access token's claims, [`escepine_contract::Attestation`]):
/// a copy of `base` in which the principal's entity —
/// the one `base` holds, with its attributes and parents, or a new one without attributes — is
/// also a member of each parent, validated against `schema` (a parent type the schema does not
/// allow the principal's type to be a member of is refused) and with the transitive closure
/// recomputed, so a parent's own ancestors hold too. Entity ids are used verbatim, never parsed.
///
/// # Errors
/// A sentence naming the principal and what Cedar refused.
pub fn with_parents(
    base: &Entities,
    schema: &Schema,
    principal: &EntityUid,
    parents: &[escepine_contract::Principal],
) -> Result<Entities, String> {
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
    let refused = |e: &dyn std::error::Error| {
        let mut why = format!("{principal} with the parents its token names: {e}");
        let mut source = e.source();
        while let Some(cause) = source {
            why.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        why
    };
    let entity = Entity::new(principal.clone(), attrs, ancestors).map_err(|e| refused(&e))?;
    base.clone()
        .upsert_entities([entity], Some(schema))
        .map_err(|e| refused(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use escepine_contract::Principal;

    fn team(id: &str) -> Principal {
        Principal {
            entity_type: "Team".into(),
            id: id.into(),
        }
    }

    #[test]
    fn a_members_store_is_built_once_and_holds_the_parents_ancestors() {
        let (schema, _) = Schema::from_cedarschema_str(
            "entity Org; entity Region; entity Team in [Org]; entity Agent in [Team];",
        )
        .unwrap();
        let base = Entities::from_json_value(
            serde_json::json!([
                {"uid": {"type": "Org", "id": "acme"}, "attrs": {}, "parents": []},
                {"uid": {"type": "Team", "id": "ops"}, "attrs": {}, "parents": [{"type": "Org", "id": "acme"}]},
            ]),
            Some(&schema),
        )
        .unwrap();
        let alice: EntityUid = r#"Agent::"alice""#.parse().unwrap();
        let acme: EntityUid = r#"Org::"acme""#.parse().unwrap();
        let members = Members::default();
        let Store::Member(first) = members
            .store(&base, &schema, &alice, &[team("ops")])
            .unwrap()
        else {
            panic!("a member store")
        };
        assert!(
            first.is_ancestor_of(&acme, &alice),
            "a parent's ancestors hold"
        );
        let Store::Member(again) = members
            .store(&base, &schema, &alice, &[team("ops")])
            .unwrap()
        else {
            panic!("a member store")
        };
        assert!(Arc::ptr_eq(&first, &again), "built once");
        let Store::Member(other) = members
            .store(&base, &schema, &alice, &[team("dev")])
            .unwrap()
        else {
            panic!("a member store")
        };
        assert!(!other.is_ancestor_of(&acme, &alice));
        assert!(matches!(
            members.store(&base, &schema, &alice, &[]).unwrap(),
            Store::Base(_)
        ));
        // A parent type the schema does not allow (no ancestor type of `Agent`) is refused.
        let region = Principal {
            entity_type: "Region".into(),
            id: "eu".into(),
        };
        let refused = members
            .store(&base, &schema, &alice, &[region])
            .unwrap_err();
        assert!(refused.contains("Region"), "{refused}");
    }
}
