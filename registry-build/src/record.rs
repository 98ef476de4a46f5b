//! The typed tool record, built only from a record that passed every registration rule.

use std::path::PathBuf;

use escepine_contract::{FailureOutcome, Filesystem, RetryPolicy, SideEffectClass, Transport};
use serde_json::Value;

use crate::egress::EgressEntry;

/// A registered tool record (the union of both source documents' spellings).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRecord {
    /// The file the record came from (or a pseudo-path such as `<macro>`).
    pub source: PathBuf,
    /// `tool_id` (alias `name`).
    pub tool_id: String,
    /// The semver version.
    pub version: semver::Version,
    /// What the planner reads.
    pub description: String,
    /// `input_schema` (alias `payload_schema`), as written.
    pub input_schema: Value,
    /// `output_schema`, as written.
    pub output_schema: Value,
    /// The id of the tool's Cedar action (always the tool id).
    pub cedar_action: String,
    /// Extra Cedar action groups the action joins.
    pub action_groups: Vec<String>,
    /// The side-effect class.
    pub side_effect_class: SideEffectClass,
    /// The declared inverse, for a compensatable tool.
    pub compensation: Option<CompensationSpec>,
    /// Bound of each attempt.
    pub timeout_ms: u64,
    /// Retry budget for transient failures.
    pub retry: RetryPolicy,
    /// Outcomes an SOP step may choose on failure.
    pub on_failure: Vec<FailureOutcome>,
    /// How the sandbox runs the tool.
    pub endpoint: EndpointSpec,
    /// Names of the secrets the tool needs.
    pub secrets: Vec<String>,
    /// The sandbox profile.
    pub sandbox_profile: SandboxProfile,
}

/// The declared inverse of a compensatable tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompensationSpec {
    /// The inverse tool's id.
    pub tool: String,
    /// Inverse input field → JSON pointer into `{"input": …, "output": …}`, in record order.
    pub map: Vec<(String, String)>,
}

/// How the sandbox obtains and invokes the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSpec {
    /// The wire protocol.
    pub transport: Transport,
    /// The command as written.
    pub command: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Expected SHA-256 digest of the binary (lower-case hex).
    pub sha256: Option<String>,
    /// `mcp-stdio` only: the SHA-256 (lower-case hex) of the canonical JSON of the tool
    /// definition the server listed when the record was made, minus `_meta`. A server whose
    /// current listing of the tool has another digest is refused before any `tools/call`.
    pub definition_sha256: Option<String>,
    /// How the command resolved at registration.
    pub resolved: ResolvedCommand,
}

/// Where an endpoint's command was found at registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolvedCommand {
    /// An absolute path that exists.
    Path(PathBuf),
    /// A name found on `PATH`, at this path.
    OnPath(PathBuf),
    /// A binary the workspace declares (it may not be built yet).
    WorkspaceBin(String),
}

/// The sandbox profile: egress allowlist and file-system access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxProfile {
    /// Hosts (and ports) the tool may reach.
    pub egress: Vec<EgressEntry>,
    /// File-system access.
    pub filesystem: Filesystem,
}

impl ToolRecord {
    /// The canonical JSON form of the record (both schemas included, preferred spellings).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("tool_id".into(), Value::from(self.tool_id.clone()));
        m.insert("version".into(), Value::from(self.version.to_string()));
        m.insert("description".into(), Value::from(self.description.clone()));
        m.insert("input_schema".into(), self.input_schema.clone());
        m.insert("output_schema".into(), self.output_schema.clone());
        m.insert(
            "cedar_action".into(),
            Value::from(format!("Action::\"{}\"", self.cedar_action)),
        );
        if !self.action_groups.is_empty() {
            m.insert(
                "action_groups".into(),
                Value::from(self.action_groups.clone()),
            );
        }
        m.insert(
            "side_effect_class".into(),
            Value::from(self.side_effect_class.as_str()),
        );
        if let Some(c) = &self.compensation {
            let map: serde_json::Map<String, Value> = c
                .map
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect();
            m.insert(
                "compensation".into(),
                serde_json::json!({ "tool": c.tool, "map": map }),
            );
        }
        m.insert("accepts_credentials".into(), Value::from(false));
        m.insert("timeout_ms".into(), Value::from(self.timeout_ms));
        m.insert(
            "retry".into(),
            serde_json::json!({ "max_attempts": self.retry.max_attempts, "backoff_ms": self.retry.backoff_ms }),
        );
        m.insert(
            "on_failure".into(),
            Value::from(
                self.on_failure
                    .iter()
                    .map(|o| o.as_str())
                    .collect::<Vec<_>>(),
            ),
        );
        let mut ep = serde_json::Map::new();
        ep.insert(
            "transport".into(),
            Value::from(self.endpoint.transport.as_str()),
        );
        ep.insert("command".into(), Value::from(self.endpoint.command.clone()));
        if !self.endpoint.args.is_empty() {
            ep.insert("args".into(), Value::from(self.endpoint.args.clone()));
        }
        if let Some(d) = &self.endpoint.sha256 {
            ep.insert("sha256".into(), Value::from(d.clone()));
        }
        if let Some(d) = &self.endpoint.definition_sha256 {
            ep.insert("definition_sha256".into(), Value::from(d.clone()));
        }
        m.insert("endpoint".into(), Value::Object(ep));
        m.insert(
            "auth".into(),
            serde_json::json!({ "secrets": self.secrets }),
        );
        m.insert(
            "sandbox_profile".into(),
            serde_json::json!({
                "egress": self.sandbox_profile.egress.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
                "filesystem": self.sandbox_profile.filesystem.as_str(),
            }),
        );
        Value::Object(m)
    }
}
