//! Bearer tokens of `escepine serve --mcp http`: a token file maps each token to a principal.
//!
//! The file is one JSON object, `{"<token>": "Agent::\"id\"", …}`. A token is at least
//! [`MIN_TOKEN_LEN`] characters of visible ASCII (no spaces); a principal is a Cedar entity
//! `Type::"id"`. Tokens are kept only as SHA-256 digests, and a presented token is looked up by
//! its digest, so the lookup time does not depend on how much of a token matches.

use std::collections::HashMap;
use std::path::Path;

use escepine_contract::Principal;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// Why a token file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokensError {
    /// The file could not be read.
    #[error("{path}: cannot read: {why}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// The file is not a JSON object of strings.
    #[error("{path}: {why}")]
    Shape {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The file maps no token.
    #[error("{0}: no token: every request would be refused")]
    Empty(String),
}

/// Token digests and their principals.
#[derive(Clone, Default)]
pub struct Tokens {
    by_digest: HashMap<[u8; 32], Principal>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("count", &self.by_digest.len())
            .finish()
    }
}

impl Tokens {
    /// Read a token file.
    ///
    /// # Errors
    /// [`TokensError`], naming the file and the offending entry (never the token itself).
    pub fn load(path: &Path) -> Result<Self, TokensError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokensError::Read {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parse a token file's text; `name` names it in errors.
    ///
    /// # Errors
    /// [`TokensError`].
    pub fn parse(text: &str, name: &str) -> Result<Self, TokensError> {
        let shape = |why: String| TokensError::Shape {
            path: name.to_string(),
            why,
        };
        let value: Value =
            escepine_contract::strict_json::from_str(text).map_err(|e| shape(e.to_string()))?;
        let Value::Object(map) = value else {
            return Err(shape(
                "a token file is one JSON object {\"<token>\": \"Agent::\\\"id\\\"\"}".into(),
            ));
        };
        let mut tokens = Self::default();
        for (n, (token, principal)) in map.iter().enumerate() {
            let entry = n + 1;
            if token.chars().count() < MIN_TOKEN_LEN || !token.chars().all(|c| c.is_ascii_graphic())
            {
                return Err(shape(format!(
                    "entry {entry}: a token must be at least {MIN_TOKEN_LEN} visible ASCII \
                     characters without spaces"
                )));
            }
            let principal: Principal = principal
                .as_str()
                .ok_or_else(|| shape(format!("entry {entry}: the principal must be a string")))?
                .parse()
                .map_err(|e| shape(format!("entry {entry}: {e}")))?;
            tokens.insert(token, principal);
        }
        if tokens.by_digest.is_empty() {
            return Err(TokensError::Empty(name.to_string()));
        }
        Ok(tokens)
    }

    /// Map `token` to `principal` (replacing an earlier mapping).
    pub fn insert(&mut self, token: &str, principal: Principal) {
        self.by_digest.insert(digest(token), principal);
    }

    /// The principal of a presented token.
    pub fn principal(&self, token: &str) -> Option<&Principal> {
        self.by_digest.get(&digest(token))
    }

    /// How many tokens are mapped.
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether no token is mapped.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_maps_tokens_to_principals() {
        let t = Tokens::parse(r#"{"0123456789abcdef": "Agent::\"alice\""}"#, "t.json").unwrap();
        assert_eq!(
            t.principal("0123456789abcdef"),
            Some(&Principal::agent("alice"))
        );
        assert_eq!(t.principal("0123456789abcdeX"), None);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn bad_files_are_refused() {
        assert!(Tokens::parse("[]", "t").is_err());
        // A token given twice would map to whichever principal the reader keeps.
        let twice = Tokens::parse(
            r#"{"0123456789abcdef": "Agent::\"a\"", "0123456789abcdef": "Agent::\"root\""}"#,
            "t.json",
        )
        .expect_err("a key given twice");
        assert!(twice.to_string().contains("/0123456789abcdef"), "{twice}");
        assert!(Tokens::parse("{}", "t").is_err());
        assert!(Tokens::parse(r#"{"short": "Agent::\"a\""}"#, "t").is_err());
        assert!(Tokens::parse(r#"{"0123456789abcdef": "alice"}"#, "t").is_err());
        assert!(Tokens::parse(r#"{"0123456789 abcdef": "Agent::\"a\""}"#, "t").is_err());
    }
}
