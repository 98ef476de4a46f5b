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
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}::{:?}", self.entity_type, self.id)
    }
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
        let valid_ty = !ty.is_empty()
            && ty.split("::").all(|seg| {
                let mut chars = seg.chars();
                chars
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
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
