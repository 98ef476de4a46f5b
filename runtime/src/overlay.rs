//! Runtime overlays: profile entries for named tools that no record can know at build time
//! (a demo's or a test's loopback port). Entries outside the envelope are refused; overlays are
//! recorded in each intent of the tools they widen.

use std::collections::BTreeMap;
use std::path::Path;

use registry_build::{EgressEntry, Envelope};
use serde::Deserialize;

/// `{ "tools": { "<tool_id>": ["127.0.0.1:8080", …] } }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overlay {
    /// Extra egress entries per tool.
    pub tools: BTreeMap<String, Vec<EgressEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverlayFile {
    tools: BTreeMap<String, Vec<String>>,
}

/// Why an overlay is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverlayError {
    /// The file is unreadable or malformed.
    #[error("overlay {0}")]
    Malformed(String),
    /// An entry names a tool the registry does not hold.
    #[error("overlay names the unknown tool `{0}`")]
    UnknownTool(String),
    /// An entry is outside the deployment envelope.
    #[error("overlay entry `{entry}` for `{tool}` is outside the deployment envelope")]
    OutsideEnvelope {
        /// The tool.
        tool: String,
        /// The entry.
        entry: String,
    },
}

impl Overlay {
    /// Parse an overlay from JSON text.
    ///
    /// # Errors
    /// Malformed JSON or a malformed entry.
    pub fn parse(text: &str) -> Result<Self, OverlayError> {
        let file: OverlayFile =
            serde_json::from_str(text).map_err(|e| OverlayError::Malformed(e.to_string()))?;
        let mut tools = BTreeMap::new();
        for (tool, entries) in file.tools {
            let parsed = entries
                .iter()
                .map(|e| {
                    e.parse::<EgressEntry>()
                        .map_err(|err| OverlayError::Malformed(format!("/tools/{tool}: {err}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            tools.insert(tool, parsed);
        }
        Ok(Self { tools })
    }

    /// Read an overlay file.
    ///
    /// # Errors
    /// Unreadable or malformed.
    pub fn load(path: &Path) -> Result<Self, OverlayError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| OverlayError::Malformed(format!("{}: {e}", path.display())))?;
        Self::parse(&text).map_err(|e| match e {
            OverlayError::Malformed(m) => {
                OverlayError::Malformed(format!("{}: {m}", path.display()))
            }
            other => other,
        })
    }

    /// Admit `entry` for `tool` (used by tests and embedding programs).
    pub fn admit(mut self, tool: &str, entry: EgressEntry) -> Self {
        self.tools.entry(tool.to_string()).or_default().push(entry);
        self
    }

    /// Refuse entries outside `envelope` (when one is configured).
    ///
    /// # Errors
    /// The first entry outside the envelope.
    pub fn check(&self, envelope: Option<&Envelope>) -> Result<(), OverlayError> {
        let Some(env) = envelope else { return Ok(()) };
        for (tool, entries) in &self.tools {
            for e in entries {
                if !env.covers(e) {
                    return Err(OverlayError::OutsideEnvelope {
                        tool: tool.clone(),
                        entry: e.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}
