//! The typed tool record, built only from a record that passed every registration rule.

use std::path::{Path, PathBuf};

use escepine_contract::{
    FailureOutcome, Filesystem, ImageRef, RetryPolicy, SideEffectClass, Transport,
};
use serde_json::Value;

use crate::egress::EgressEntry;
use crate::schema::names;

pub use crate::schema::names::CredentialExemption;

/// A registered tool record (the union of both source documents' spellings).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRecord {
    /// The file the record came from (or a pseudo-path such as `<macro>`).
    pub(crate) source: PathBuf,
    /// `tool_id` (alias `name`).
    pub(crate) tool_id: String,
    /// The semver version.
    pub(crate) version: semver::Version,
    /// A short human-readable name (MCP's `title`).
    pub(crate) title: Option<String>,
    /// What the planner reads.
    pub(crate) description: String,
    /// Whether the tool reaches an open world of external entities (MCP's `openWorldHint`).
    pub(crate) open_world: Option<bool>,
    /// `input_schema` (alias `payload_schema`), as written.
    pub(crate) input_schema: Value,
    /// `output_schema`, as written.
    pub(crate) output_schema: Value,
    /// The id of the tool's Cedar action (always the tool id).
    pub(crate) cedar_action: String,
    /// Extra Cedar action groups the action joins.
    pub(crate) action_groups: Vec<String>,
    /// The side-effect class.
    pub(crate) side_effect_class: SideEffectClass,
    /// The declared inverse, for a compensatable tool.
    pub(crate) compensation: Option<CompensationSpec>,
    /// Bound of each attempt.
    pub(crate) timeout_ms: u64,
    /// Retry budget for transient failures.
    pub(crate) retry: RetryPolicy,
    /// Outcomes an SOP step may choose on failure.
    pub(crate) on_failure: Vec<FailureOutcome>,
    /// How the sandbox runs the tool.
    pub(crate) endpoint: EndpointSpec,
    /// Names of the secrets the tool needs.
    pub(crate) secrets: Vec<String>,
    /// The sandbox profile.
    pub(crate) sandbox_profile: SandboxProfile,
    /// The information-flow labels the tool's output brings and its reads carry.
    pub(crate) data_labels: crate::labels::DataLabels,
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
    /// The command as written (empty when an image's `Entrypoint`/`Cmd` apply).
    pub command: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Expected SHA-256 digest of the binary (lower-case hex); never beside `image`.
    pub sha256: Option<String>,
    /// The OCI image whose root the sandbox runs the tool on, pinned by digest.
    pub image: Option<ImageRef>,
    /// For `mcp-stdio`: SHA-256 (lower-case hex) of the canonical JSON of the tool as the
    /// server listed it at import, minus `_meta`.
    pub definition_sha256: Option<String>,
    /// How the command resolved at registration.
    pub resolved: ResolvedCommand,
    /// For `mcp-http`: the remote server, the tool's name there, and how to authenticate.
    pub remote: Option<crate::remote::RemoteSpec>,
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
    /// A tool host linked into the program that loads the registry: the program serves the
    /// call from its own binary, started with [`escepine_contract::linked::FLAG`] and the host's
    /// name before the endpoint's arguments.
    Linked(String),
    /// A command inside the endpoint's image, not resolved on the host: an absolute path in
    /// the image or a bare name on the image's `PATH`; `None` when the image's `Entrypoint` and
    /// `Cmd` apply.
    InImage(Option<String>),
    /// No command: a remote server (`mcp-http`) the runtime's own MCP client calls.
    Remote,
}

/// The sandbox profile: egress allowlist and file-system access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxProfile {
    /// Hosts (and ports) the tool may reach.
    pub egress: Vec<EgressEntry>,
    /// `authorized-urls` in `egress`: each call may also reach the origins of the URLs its
    /// authorization allowed.
    pub authorized_urls: bool,
    /// File-system access.
    pub filesystem: Filesystem,
    /// Host paths bound read-only at the same path (absolute, lexically normal, distinct).
    pub read_only: Vec<PathBuf>,
    /// Files each call may give, placed read-only at `/workspace/<name>` (distinct names).
    pub workspace_inputs: Vec<escepine_contract::WorkspaceInput>,
    /// The isolation tier its sandboxes run on (`namespaces` when absent).
    pub isolation: escepine_contract::Isolation,
}

impl ToolRecord {
    /// The file the record came from (or a pseudo-path such as `<macro>`).
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// `tool_id` (alias `name`).
    pub fn tool_id(&self) -> &str {
        &self.tool_id
    }

    /// The semver version.
    pub fn version(&self) -> &semver::Version {
        &self.version
    }

    /// A short human-readable name (MCP's `title`).
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// What the planner reads.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Whether the tool reaches an open world of external entities (MCP's `openWorldHint`).
    pub fn open_world(&self) -> Option<bool> {
        self.open_world
    }

    /// `input_schema` (alias `payload_schema`), as written.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// `output_schema`, as written.
    pub fn output_schema(&self) -> &Value {
        &self.output_schema
    }

    /// The id of the tool's Cedar action (always the tool id).
    pub fn cedar_action(&self) -> &str {
        &self.cedar_action
    }

    /// Extra Cedar action groups the action joins.
    pub fn action_groups(&self) -> &[String] {
        &self.action_groups
    }

    /// The side-effect class.
    pub fn side_effect_class(&self) -> SideEffectClass {
        self.side_effect_class
    }

    /// The declared inverse, for a compensatable tool.
    pub fn compensation(&self) -> Option<&CompensationSpec> {
        self.compensation.as_ref()
    }

    /// Bound of each attempt, in milliseconds.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    /// Retry budget for transient failures.
    pub fn retry(&self) -> RetryPolicy {
        self.retry
    }

    /// Outcomes an SOP step may choose on failure.
    pub fn on_failure(&self) -> &[FailureOutcome] {
        &self.on_failure
    }

    /// How the sandbox runs the tool.
    pub fn endpoint(&self) -> &EndpointSpec {
        &self.endpoint
    }

    /// The information-flow labels the tool's output brings and its reads carry.
    pub fn data_labels(&self) -> &crate::labels::DataLabels {
        &self.data_labels
    }

    /// Names of the secrets the tool needs.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// The sandbox profile.
    pub fn sandbox_profile(&self) -> &SandboxProfile {
        &self.sandbox_profile
    }

    /// The canonical JSON form of the record (both schemas included, preferred spellings).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("tool_id".into(), Value::from(self.tool_id.clone()));
        m.insert("version".into(), Value::from(self.version.to_string()));
        if let Some(t) = &self.title {
            m.insert("title".into(), Value::from(t.clone()));
        }
        m.insert("description".into(), Value::from(self.description.clone()));
        if let Some(o) = self.open_world {
            m.insert("open_world".into(), Value::from(o));
        }
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
        if let Some(image) = &self.endpoint.image {
            ep.insert("image".into(), Value::from(image.raw.clone()));
        }
        if self.endpoint.image.is_none() || !self.endpoint.command.is_empty() {
            ep.insert("command".into(), Value::from(self.endpoint.command.clone()));
        }
        if !self.endpoint.args.is_empty() {
            ep.insert("args".into(), Value::from(self.endpoint.args.clone()));
        }
        if let Some(d) = &self.endpoint.sha256 {
            ep.insert("sha256".into(), Value::from(d.clone()));
        }
        if let Some(d) = &self.endpoint.definition_sha256 {
            ep.insert("definition_sha256".into(), Value::from(d.clone()));
        }
        if let Some(remote) = &self.endpoint.remote {
            ep.remove("command");
            ep.insert("url".into(), Value::from(remote.url.to_string()));
            ep.insert("tool".into(), Value::from(remote.tool.clone()));
            if let Some(auth) = crate::remote::auth_json(&remote.auth) {
                ep.insert("auth".into(), auth);
            }
        }
        m.insert("endpoint".into(), Value::Object(ep));
        m.insert(
            "auth".into(),
            serde_json::json!({ "secrets": self.secrets }),
        );
        let mut profile = serde_json::Map::new();
        profile.insert(
            "egress".into(),
            Value::from(
                self.sandbox_profile
                    .egress
                    .iter()
                    .map(|e| e.to_string())
                    .chain(
                        self.sandbox_profile
                            .authorized_urls
                            .then(|| crate::egress::AUTHORIZED_URLS.to_string()),
                    )
                    .collect::<Vec<_>>(),
            ),
        );
        profile.insert(
            "filesystem".into(),
            Value::from(self.sandbox_profile.filesystem.as_str()),
        );
        if self.sandbox_profile.isolation != escepine_contract::Isolation::default() {
            profile.insert(
                "isolation".into(),
                Value::from(self.sandbox_profile.isolation.as_str()),
            );
        }
        if !self.sandbox_profile.read_only.is_empty() {
            profile.insert(
                "read_only".into(),
                Value::from(
                    self.sandbox_profile
                        .read_only
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>(),
                ),
            );
        }
        if !self.sandbox_profile.workspace_inputs.is_empty() {
            let inputs = self
                .sandbox_profile
                .workspace_inputs
                .iter()
                .map(|w| {
                    let mut input = serde_json::json!({"name": w.name, "max_bytes": w.max_bytes});
                    if !w.required {
                        input["required"] = Value::Bool(false);
                    }
                    input
                })
                .collect::<Vec<_>>();
            profile.insert("workspace_inputs".into(), Value::from(inputs));
        }
        m.insert("sandbox_profile".into(), Value::Object(profile));
        if let Some(labels) = self.data_labels.to_json() {
            m.insert("data_labels".into(), labels);
        }
        Value::Object(m)
    }

    /// The input properties the credential-name rule lets through although it catches their
    /// names: the reviewed exemptions (`"x-not-credential": "<why>"`) with their reasons, and
    /// the recognised shapes ([`names::Shape`]) with a reason naming the shape and its rule;
    /// each with the pointer of the property in a payload (`/session_name`,
    /// `/pages/-/session_name` inside a list).
    pub fn credential_exemptions(&self) -> Vec<CredentialExemption> {
        names::credential_exemptions(&self.input_schema)
    }
}
