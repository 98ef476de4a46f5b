//! The Cedar principal and parents a verified token's claims name, per its issuer's mapping.
//!
//! - The principal: an entity of the mapping's type whose id is the claim's value, a non-empty
//!   string used verbatim (never parsed as Cedar: `Agent::"x\" || true"` is an id like any
//!   other).
//! - Each parents mapping: its claim absent (no parents), a string (one), or a list of strings;
//!   each an entity of the mapping's type, in claim order, without duplicates. Anything else —
//!   a number, an object, an empty string, more than [`MAX_PARENTS`] — refuses the token: a
//!   principal is never authorized with parents read half-way.
//! - Scopes: `scope` (space-separated, RFC 9068) or `scp` (a list, or a string).

use escepine_contract::Principal;
use serde_json::{Map, Value};

use crate::config::{ClaimMapping, IssuerConfig};

/// The most parents one token may give its principal.
pub const MAX_PARENTS: usize = 1024;
/// The longest entity id taken from a claim, in bytes.
pub const MAX_ID_LEN: usize = 1024;

/// The principal the token's claims name.
///
/// # Errors
/// A sentence naming the claim and what is wrong with it.
pub fn principal(claims: &Map<String, Value>, issuer: &IssuerConfig) -> Result<Principal, String> {
    let ClaimMapping { entity_type, claim } = &issuer.principal;
    match claims.get(claim) {
        Some(Value::String(id)) => Ok(Principal {
            entity_type: entity_type.clone(),
            id: entity_id(id, claim)?,
        }),
        None => Err(format!(
            "the claim `{claim}` naming the principal is missing"
        )),
        Some(_) => Err(format!(
            "the claim `{claim}` naming the principal is not a string"
        )),
    }
}

/// The parents the token's claims name, across the issuer's mappings.
///
/// # Errors
/// A sentence naming the claim and what is wrong with it.
pub fn parents(
    claims: &Map<String, Value>,
    issuer: &IssuerConfig,
) -> Result<Vec<Principal>, String> {
    let mut out: Vec<Principal> = Vec::new();
    for ClaimMapping { entity_type, claim } in &issuer.parents {
        let ids: Vec<&str> = match claims.get(claim) {
            None => continue,
            Some(Value::String(s)) => vec![s],
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().ok_or_else(|| {
                        format!("the claim `{claim}` must hold strings only, not {v}")
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(format!(
                    "the claim `{claim}` must be a string or a list of strings, not {}",
                    escepine_contract::strict_json::kind(other)
                ))
            }
        };
        for id in ids {
            let parent = Principal {
                entity_type: entity_type.clone(),
                id: entity_id(id, claim)?,
            };
            if !out.contains(&parent) {
                if out.len() == MAX_PARENTS {
                    return Err(format!(
                        "the token names more than {MAX_PARENTS} parents for its principal"
                    ));
                }
                out.push(parent);
            }
        }
    }
    Ok(out)
}

/// The token's scopes: `scope` (space-separated) and `scp` (a list or a string).
pub fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |s: &str| {
        for scope in s.split(' ').filter(|s| !s.is_empty()) {
            if !out.iter().any(|have| have == scope) {
                out.push(scope.to_string());
            }
        }
    };
    if let Some(Value::String(s)) = claims.get("scope") {
        add(s);
    }
    match claims.get("scp") {
        Some(Value::String(s)) => add(s),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).for_each(&mut add),
        _ => {}
    }
    out
}

fn entity_id(id: &str, claim: &str) -> Result<String, String> {
    if id.is_empty() {
        return Err(format!("the claim `{claim}` holds an empty id"));
    }
    if id.len() > MAX_ID_LEN {
        return Err(format!(
            "the claim `{claim}` holds an id longer than {MAX_ID_LEN} bytes"
        ));
    }
    Ok(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OAuthConfig;
    use serde_json::json;

    fn issuer() -> IssuerConfig {
        OAuthConfig::parse(
            r#"{"resource": "http://127.0.0.1/mcp", "issuers": [{"issuer": "http://127.0.0.1:1",
               "principal": {"type": "Agent", "claim": "sub"},
               "parents": [{"claim": "groups", "type": "Team"}, {"claim": "org", "type": "Org"}]}]}"#,
            "t",
        )
        .unwrap()
        .issuers
        .remove(0)
    }

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_principal_and_parents_are_ids_taken_verbatim() {
        let c = claims(json!({
            "sub": "a\" || principal == Agent::\"admin",
            "groups": ["editors", "editors", "ops"],
            "org": "acme",
        }));
        let p = principal(&c, &issuer()).unwrap();
        assert_eq!(p.id, "a\" || principal == Agent::\"admin");
        assert_eq!(p.entity_type, "Agent");
        let parents = parents(&c, &issuer()).unwrap();
        let shown: Vec<String> = parents.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["Team::\"editors\"", "Team::\"ops\"", "Org::\"acme\""]
        );
    }

    #[test]
    fn a_claim_of_the_wrong_shape_refuses_the_token() {
        let i = issuer();
        assert!(principal(&claims(json!({})), &i)
            .unwrap_err()
            .contains("missing"));
        assert!(principal(&claims(json!({"sub": 7})), &i)
            .unwrap_err()
            .contains("not a string"));
        assert!(principal(&claims(json!({"sub": ""})), &i)
            .unwrap_err()
            .contains("empty"));
        for bad in [json!(3), json!({"a": 1}), json!(["ok", 4]), json!([""])] {
            let e = parents(&claims(json!({"sub": "x", "groups": bad})), &i).unwrap_err();
            assert!(e.contains("`groups`"), "{e}");
        }
        let many: Vec<String> = (0..=MAX_PARENTS).map(|n| format!("g{n}")).collect();
        assert!(parents(&claims(json!({"groups": many})), &i).is_err());
        assert!(parents(&claims(json!({"sub": "x"})), &i)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn scopes_come_from_scope_and_scp() {
        assert_eq!(
            scopes(&claims(json!({"scope": "a  b", "scp": ["b", "c"]}))),
            ["a", "b", "c"]
        );
        assert_eq!(scopes(&claims(json!({"scp": "d"}))), ["d"]);
        assert!(scopes(&claims(json!({"scope": 5}))).is_empty());
    }
}
