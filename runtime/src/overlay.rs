//! Runtime overlays: profile entries for named tools that no record can know at build time
//! (a demo's or a test's loopback port), and addresses this deployment treats as public (so that
//! a test or an offline demo exercises `authorized-urls` on loopback). Entries outside the
//! envelope are refused, and `public_addresses` need the envelope's `public`; overlays are
//! recorded in each intent of the tools they widen.
//!
//! ```json
//! { "tools": { "web_search": ["127.0.0.1:8080"] }, "public_addresses": ["127.0.0.1"] }
//! ```
//!
//! Either key may be absent.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use escepine_registry::egress::EgressEntry;
use escepine_registry::egress::PUBLIC;
use escepine_registry::envelope::Envelope;
use serde::Deserialize;

/// `{ "tools": { "<tool_id>": ["127.0.0.1:8080", …] }, "public_addresses": ["127.0.0.1"] }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overlay {
    /// Extra egress entries per tool.
    pub tools: BTreeMap<String, Vec<EgressEntry>>,
    /// Addresses treated as public for every tool's egress (sorted, distinct).
    pub public_addresses: Vec<IpAddr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverlayFile {
    #[serde(default)]
    tools: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    public_addresses: Vec<String>,
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
    /// `public_addresses` while the deployment envelope has no `public` entry.
    #[error(
        "overlay `public_addresses` treats addresses as public, and the deployment envelope has \
         no `{PUBLIC}` entry"
    )]
    PublicWithoutEnvelope,
}

/// How one address is recorded in the intents of the tools it widens.
fn recorded(address: &IpAddr) -> String {
    format!("public_address {address}")
}

impl Overlay {
    /// Parse an overlay from JSON text.
    ///
    /// # Errors
    /// Malformed JSON or a malformed entry.
    pub fn parse(text: &str) -> Result<Self, OverlayError> {
        let value = escepine_contract::strict_json::from_str(text)
            .map_err(|e| OverlayError::Malformed(e.to_string()))?;
        let file: OverlayFile =
            serde_json::from_value(value).map_err(|e| OverlayError::Malformed(e.to_string()))?;
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
        let mut public_addresses = file
            .public_addresses
            .iter()
            .enumerate()
            .map(|(i, a)| {
                a.parse::<IpAddr>().map_err(|e| {
                    OverlayError::Malformed(format!(
                        "/public_addresses/{i}: `{a}` is not an IP address: {e}"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        public_addresses.sort();
        public_addresses.dedup();
        Ok(Self {
            tools,
            public_addresses,
        })
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

    /// Treat `address` as public (used by tests and embedding programs).
    pub fn public_address(mut self, address: IpAddr) -> Self {
        if !self.public_addresses.contains(&address) {
            self.public_addresses.push(address);
            self.public_addresses.sort();
        }
        self
    }

    /// What an intent of a tool records of this overlay: the tool's extra entries, then, for a
    /// tool that reaches the network at all (`reaches_network`), every public address.
    pub fn recorded_for(&self, tool: &str, reaches_network: bool) -> Vec<String> {
        let entries = self.tools.get(tool).into_iter().flatten();
        let public = self
            .public_addresses
            .iter()
            .filter(|_| reaches_network)
            .map(recorded);
        entries.map(ToString::to_string).chain(public).collect()
    }

    /// Refuse entries outside `envelope`, and `public_addresses` without its `public` (when an
    /// envelope is configured).
    ///
    /// # Errors
    /// The first entry outside the envelope, or public addresses it does not allow.
    pub fn check(&self, envelope: Option<&Envelope>) -> Result<(), OverlayError> {
        let Some(env) = envelope else { return Ok(()) };
        if !self.public_addresses.is_empty() && !env.public {
            return Err(OverlayError::PublicWithoutEnvelope);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_key_may_be_absent() {
        assert_eq!(Overlay::parse("{}").ok(), Some(Overlay::default()));
        let o = Overlay::parse(r#"{"public_addresses": ["127.0.0.1", "::1", "127.0.0.1"]}"#)
            .expect("an overlay");
        assert_eq!(o.public_addresses.len(), 2);
        assert_eq!(
            o.recorded_for("t", true),
            ["public_address 127.0.0.1", "public_address ::1"]
        );
        assert!(o.recorded_for("t", false).is_empty());
        let o = Overlay::parse(r#"{"tools": {"t": ["127.0.0.1:80"]}}"#).expect("an overlay");
        assert_eq!(o.recorded_for("t", true), ["127.0.0.1:80"]);
    }

    #[test]
    fn bad_addresses_and_a_missing_public_are_refused() {
        let e = Overlay::parse(r#"{"public_addresses": ["localhost"]}"#).expect_err("refused");
        assert!(e.to_string().contains("/public_addresses/0"), "{e}");
        assert!(Overlay::parse(r#"{"public": []}"#).is_err());
        let src = |v: &str| escepine_registry::diagnostic::SourceFile::new("envelope.json", v);
        let closed = Envelope::parse(&src(r#"{"egress": []}"#)).expect("an envelope");
        let open = Envelope::parse(&src(r#"{"egress": ["public"]}"#)).expect("an envelope");
        let o = Overlay::default().public_address(IpAddr::from([127, 0, 0, 1]));
        assert_eq!(
            o.check(Some(&closed)),
            Err(OverlayError::PublicWithoutEnvelope)
        );
        assert_eq!(o.check(Some(&open)), Ok(()));
        assert_eq!(o.check(None), Ok(()));
    }
}
