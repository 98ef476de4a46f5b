//! The principal a call is made for: a Cedar entity such as `Agent::"researcher"`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A Cedar principal entity (`Type::"id"`), by default of type `Agent`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Principal {
    /// The entity type (`Agent`).
    pub entity_type: String,
    /// The entity id.
    pub id: String,
}

impl Principal {
    /// An `Agent::"<id>"` principal.
    pub fn agent(id: impl Into<String>) -> Self {
        Self {
            entity_type: "Agent".into(),
            id: id.into(),
        }
    }
}

impl fmt::Display for Principal {
    /// `Type::"id"`, the id quoted as a JSON string, so that [`Principal::from_str`] reads back
    /// exactly the same id whatever characters it holds (an identity provider's `sub` may hold
    /// quotes, backslashes or control characters).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted = serde_json::to_string(&self.id).map_err(|_| fmt::Error)?;
        write!(f, "{}::{quoted}", self.entity_type)
    }
}

/// What an identity provider vouched for about the principal of a call, beside its name: the
/// Cedar entities the principal is a member of (from the access token's claims) and which token
/// it was — its issuer and a digest of its `jti`, never the token itself. The runtime authorizes
/// the call with the principal in those parents, and records all three in the call's intent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attestation {
    /// The token's issuer (`iss`), as configured.
    pub issuer: String,
    /// Hex SHA-256 of the token's `jti` claim, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti_sha256: Option<String>,
    /// The entities the principal is a member of, as the token's claims name them, in claim
    /// order, without duplicates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<Principal>,
}

/// Whether `name` is spelled as a Cedar entity type: identifiers (`[A-Za-z_][A-Za-z0-9_]*`)
/// separated by `::`, such as `Agent` or `Org::Team`.
pub fn is_entity_type(name: &str) -> bool {
    !name.is_empty()
        && name.split("::").all(|seg| {
            let mut chars = seg.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// A principal string that is not of the form `Type::"id"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrincipalParseError(pub String);

impl fmt::Display for PrincipalParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "principal `{}` is not of the form Agent::\"id\" (an entity type, `::`, a quoted id)",
            self.0
        )
    }
}

impl std::error::Error for PrincipalParseError {}

impl FromStr for Principal {
    type Err = PrincipalParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || PrincipalParseError(s.to_string());
        let (ty, rest) = s.split_once("::").ok_or_else(err)?;
        let valid_ty = is_entity_type(ty);
        let id: String = serde_json::from_str(rest).map_err(|_| err())?;
        if !valid_ty {
            return Err(err());
        }
        Ok(Self {
            entity_type: ty.to_string(),
            id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_agent() {
        let p: Principal = r#"Agent::"researcher""#.parse().unwrap();
        assert_eq!(p, Principal::agent("researcher"));
        assert_eq!(p.to_string(), r#"Agent::"researcher""#);
    }

    #[test]
    fn any_id_reads_back_as_written() {
        for id in [
            "a\"b",
            "back\\slash",
            "bell\u{7}",
            "zero\u{200b}width",
            "é",
            "",
        ] {
            let p = Principal::agent(id);
            let back: Principal = p.to_string().parse().unwrap();
            assert_eq!(back, p, "{p}");
        }
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "Agent",
            "Agent::researcher",
            "::\"x\"",
            "1A::\"x\"",
            "Agent::\"x",
        ] {
            assert!(bad.parse::<Principal>().is_err(), "{bad}");
        }
    }
}
