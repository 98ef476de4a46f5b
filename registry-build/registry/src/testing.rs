//! Records and registries for tests (feature `testing`), made the one way records are made:
//! written as a record file and registered by the record rules.
//!
//! ```
//! # #[cfg(feature = "testing")] {
//! use escepine_registry::testing::RecordBuilder;
//!
//! let record = RecordBuilder::new("text_stats").timeout_ms(500).build().unwrap();
//! assert_eq!(record.timeout_ms(), 500);
//! # }
//! ```
//!
//! [`RecordBuilder::build`] applies every per-record rule to the record it writes (no envelope
//! is compared: the rules that need one are skipped, as [`load`](crate::registry::load) skips
//! them without an envelope); `escepine_policy::testing::RegistryBuilder` loads records,
//! policies, an envelope and SOPs, so the cross-record rules and Cedar's strict validation
//! apply too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use escepine_contract::{FailureOutcome, Filesystem, RetryPolicy, SideEffectClass, Transport};
use serde_json::{json, Map, Value};

use crate::diagnostic::{Diagnostics, SourceFile};
use crate::endpoint::WorkspaceBins;
use crate::record::ToolRecord;
use crate::rules::record::{self as record_rules, Context};

/// A tool record under construction, held as the JSON of its record file.
///
/// [`new`](Self::new) starts from a minimal read-only `stdio-json` record: version `1.0.0`,
/// closed empty object schemas (the schema rules refuse an open object), one attempt of
/// 10 s, no secrets, no egress, the `workspace` file system, and the command `tool_id`,
/// resolved as a binary the workspace declares (so the record registers wherever the test
/// runs; point [`command`](Self::command) or [`binary`](Self::binary) at a real binary to run
/// the tool).
#[derive(Debug, Clone)]
pub struct RecordBuilder {
    record: Map<String, Value>,
    source: PathBuf,
    workspace_bins: BTreeSet<String>,
}

impl RecordBuilder {
    /// A minimal record of `tool_id`.
    pub fn new(tool_id: &str) -> Self {
        let record = json!({
            "tool_id": tool_id,
            "version": "1.0.0",
            "description": format!("The test tool `{tool_id}`."),
            "input_schema": { "type": "object", "additionalProperties": false },
            "output_schema": { "type": "object", "additionalProperties": false },
            "side_effect_class": SideEffectClass::ReadOnly.as_str(),
            "accepts_credentials": false,
            "timeout_ms": 10_000,
            "retry": { "max_attempts": 1, "backoff_ms": 0 },
            "on_failure": [FailureOutcome::Halt.as_str()],
            "endpoint": { "transport": Transport::StdioJson.as_str(), "command": tool_id },
            "auth": { "secrets": [] },
            "sandbox_profile": { "egress": [], "filesystem": Filesystem::Workspace.as_str() },
        });
        let Value::Object(record) = record else {
            unreachable!("a JSON object literal")
        };
        Self {
            record,
            source: PathBuf::from(format!("<test>/{tool_id}.json")),
            workspace_bins: BTreeSet::from([tool_id.to_string()]),
        }
    }

    fn set(mut self, key: &str, value: Value) -> Self {
        self.record.insert(key.into(), value);
        self
    }

    fn object(&mut self, key: &str) -> &mut Map<String, Value> {
        let entry = self
            .record
            .entry(key)
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        match entry {
            Value::Object(m) => m,
            _ => unreachable!("made an object above"),
        }
    }

    fn set_in(mut self, object: &str, key: &str, value: Value) -> Self {
        self.object(object).insert(key.into(), value);
        self
    }

    /// The path naming the record's file in diagnostics and [`ToolRecord::source`] (default
    /// `<test>/<tool_id>.json`).
    pub fn source(mut self, path: impl Into<PathBuf>) -> Self {
        self.source = path.into();
        self
    }

    /// Set the semver version.
    pub fn version(self, version: &str) -> Self {
        self.set("version", Value::from(version))
    }

    /// Set the title.
    pub fn title(self, title: &str) -> Self {
        self.set("title", Value::from(title))
    }

    /// Set the description.
    pub fn description(self, description: &str) -> Self {
        self.set("description", Value::from(description))
    }

    /// Set `open_world`.
    pub fn open_world(self, open_world: bool) -> Self {
        self.set("open_world", Value::from(open_world))
    }

    /// Set the input schema.
    pub fn input_schema(self, schema: Value) -> Self {
        self.set("input_schema", schema)
    }

    /// Set the output schema.
    pub fn output_schema(self, schema: Value) -> Self {
        self.set("output_schema", schema)
    }

    /// Set the Cedar action groups the tool's action joins.
    pub fn action_groups<S: Into<String>>(self, groups: impl IntoIterator<Item = S>) -> Self {
        let groups: Vec<String> = groups.into_iter().map(Into::into).collect();
        self.set("action_groups", Value::from(groups))
    }

    /// Set the side-effect class.
    pub fn class(self, class: SideEffectClass) -> Self {
        self.set("side_effect_class", Value::from(class.as_str()))
    }

    /// Declare the inverse `tool`, with its input fields mapped to JSON pointers into
    /// `{"input": …, "output": …}` (a compensatable record needs one).
    pub fn compensation<K: Into<String>, V: Into<String>>(
        self,
        tool: &str,
        map: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let map: Map<String, Value> = map
            .into_iter()
            .map(|(k, v)| (k.into(), Value::from(v.into())))
            .collect();
        self.set("compensation", json!({ "tool": tool, "map": map }))
    }

    /// Set the bound of each attempt.
    pub fn timeout_ms(self, timeout_ms: u64) -> Self {
        self.set("timeout_ms", Value::from(timeout_ms))
    }

    /// Set the retry budget.
    pub fn retry(self, retry: RetryPolicy) -> Self {
        self.set(
            "retry",
            json!({ "max_attempts": retry.max_attempts, "backoff_ms": retry.backoff_ms }),
        )
    }

    /// Set the outcomes an SOP step may choose on failure.
    pub fn on_failure(self, outcomes: impl IntoIterator<Item = FailureOutcome>) -> Self {
        let outcomes: Vec<&str> = outcomes.into_iter().map(FailureOutcome::as_str).collect();
        self.set("on_failure", Value::from(outcomes))
    }

    /// Set the endpoint's wire protocol.
    pub fn transport(self, transport: Transport) -> Self {
        self.set_in("endpoint", "transport", Value::from(transport.as_str()))
    }

    /// Set the endpoint's command: an absolute path that exists, a name on `PATH`, a binary
    /// the workspace declares (see [`workspace_bin`](Self::workspace_bin)), or — after
    /// [`image`](Self::image) — a command inside the image.
    pub fn command(self, command: impl AsRef<str>) -> Self {
        self.set_in("endpoint", "command", Value::from(command.as_ref()))
    }

    /// Set the endpoint's command to the absolute path of `binary` (which must exist).
    pub fn binary(self, binary: &Path) -> Self {
        self.command(binary.display().to_string())
    }

    /// Set the endpoint's arguments.
    pub fn args<S: AsRef<str>>(self, args: impl IntoIterator<Item = S>) -> Self {
        let args: Vec<String> = args.into_iter().map(|a| a.as_ref().to_string()).collect();
        self.set_in("endpoint", "args", Value::from(args))
    }

    /// Set the expected SHA-256 digest of the endpoint's binary (lower-case hex).
    pub fn sha256(self, digest: &str) -> Self {
        self.set_in("endpoint", "sha256", Value::from(digest))
    }

    /// Run the tool on the root of the OCI image `reference` (pinned by digest). The command
    /// is dropped, so the image's `Entrypoint` and `Cmd` apply; set one inside the image with
    /// [`command`](Self::command) afterwards.
    pub fn image(mut self, reference: &str) -> Self {
        self.object("endpoint").remove("command");
        self.set_in("endpoint", "image", Value::from(reference))
    }

    /// Set the digest of the MCP tool definition pinned at import (`mcp-stdio`).
    pub fn definition_sha256(self, digest: &str) -> Self {
        self.set_in("endpoint", "definition_sha256", Value::from(digest))
    }

    /// Set the names of the secrets the tool needs.
    pub fn secrets<S: Into<String>>(self, names: impl IntoIterator<Item = S>) -> Self {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        self.set_in("auth", "secrets", Value::from(names))
    }

    /// Set the egress allowlist (`host`, `host:port`, `*.suffix`, …).
    pub fn egress<S: Into<String>>(self, entries: impl IntoIterator<Item = S>) -> Self {
        let entries: Vec<String> = entries.into_iter().map(Into::into).collect();
        self.set_in("sandbox_profile", "egress", Value::from(entries))
    }

    /// Set the file-system access.
    pub fn filesystem(self, filesystem: Filesystem) -> Self {
        self.set_in(
            "sandbox_profile",
            "filesystem",
            Value::from(filesystem.as_str()),
        )
    }

    /// Set the sandbox's isolation tier.
    pub fn isolation(self, isolation: escepine_contract::Isolation) -> Self {
        self.set_in(
            "sandbox_profile",
            "isolation",
            Value::from(isolation.as_str()),
        )
    }

    /// Set the host paths bound read-only.
    pub fn read_only<P: AsRef<Path>>(self, paths: impl IntoIterator<Item = P>) -> Self {
        let paths: Vec<String> = paths
            .into_iter()
            .map(|p| p.as_ref().display().to_string())
            .collect();
        self.set_in("sandbox_profile", "read_only", Value::from(paths))
    }

    /// Declare workspace inputs: `(name, max_bytes)`, each required.
    pub fn workspace_inputs<'a>(self, inputs: impl IntoIterator<Item = (&'a str, u64)>) -> Self {
        let inputs: Vec<Value> = inputs
            .into_iter()
            .map(|(name, max_bytes)| serde_json::json!({"name": name, "max_bytes": max_bytes}))
            .collect();
        self.set_in("sandbox_profile", "workspace_inputs", Value::from(inputs))
    }

    /// `data_labels`: the labels the tool's output brings and its reads carry.
    pub fn data_labels<S: AsRef<str>>(
        self,
        output: impl IntoIterator<Item = S>,
        reads: impl IntoIterator<Item = S>,
    ) -> Self {
        let list =
            |l: Vec<S>| Value::from(l.iter().map(|s| s.as_ref().to_string()).collect::<Vec<_>>());
        self.set(
            "data_labels",
            json!({ "output": list(output.into_iter().collect()), "reads": list(reads.into_iter().collect()) }),
        )
    }

    /// Set any top-level field of the record file to `value` (`null` removes it): for a
    /// field no setter covers, or a value a rule must refuse.
    pub fn field(mut self, key: &str, value: Value) -> Self {
        if value.is_null() {
            self.record.remove(key);
        } else {
            self.record.insert(key.into(), value);
        }
        self
    }

    /// Declare `name` a binary of the workspace, so that a command naming it resolves.
    pub fn workspace_bin(mut self, name: &str) -> Self {
        self.workspace_bins.insert(name.to_string());
        self
    }

    /// The record file this builder writes.
    pub fn to_json(&self) -> Value {
        Value::Object(self.record.clone())
    }

    /// The binaries of the workspace this record's endpoint names (its command, by default).
    pub fn workspace_bins(&self) -> &BTreeSet<String> {
        &self.workspace_bins
    }

    /// The record file as a [`SourceFile`] named by [`source`](Self::source).
    pub fn to_source(&self) -> SourceFile {
        let text = serde_json::to_string_pretty(&self.record).unwrap_or_default();
        SourceFile::new(&self.source, text)
    }

    /// [`build`](Self::build), for a test whose record must register.
    ///
    /// # Panics
    /// With the rendered diagnostics, when the record breaks a rule.
    #[track_caller]
    pub fn registered(&self) -> ToolRecord {
        match self.build() {
            Ok(record) => record,
            Err(d) => panic!(
                "the test record {} does not register:\n{}",
                self.source.display(),
                d.render()
            ),
        }
    }

    /// A registered record whose input schema is then replaced by `schema`, unchecked: the
    /// record no registration can produce, for tests of a later stage that must refuse it on
    /// its own rather than rely on the record rules.
    ///
    /// # Panics
    /// As [`registered`](Self::registered).
    #[track_caller]
    pub fn registered_with_input_schema(&self, schema: Value) -> ToolRecord {
        let mut record = self.registered();
        record.input_schema = schema;
        record
    }

    /// The registered record: the record file written, then checked by every per-record
    /// rule (the cross-record rules need the other records: use `escepine_policy::testing::RegistryBuilder`).
    ///
    /// # Errors
    /// The rules' diagnostics, when the record breaks one.
    pub fn build(&self) -> Result<ToolRecord, Diagnostics> {
        let bins = WorkspaceBins {
            root: None,
            names: self.workspace_bins.clone(),
            ..WorkspaceBins::default()
        };
        let ctx = Context {
            envelope: None,
            bins: &bins,
        };
        record_rules::check_file(&self.to_source(), &ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ResolvedCommand;
    use crate::rule::Rule;

    #[test]
    fn a_built_record_is_what_its_file_registers() {
        let record = RecordBuilder::new("text_stats")
            .timeout_ms(500)
            .secrets(["API_KEY"])
            .egress(["api.example.com:443"])
            .registered();
        assert_eq!(record.tool_id(), "text_stats");
        assert_eq!(record.timeout_ms(), 500);
        assert_eq!(record.secrets(), ["API_KEY"]);
        assert_eq!(record.sandbox_profile().egress.len(), 1);
        assert_eq!(
            record.endpoint().resolved,
            ResolvedCommand::WorkspaceBin("text_stats".into())
        );
        assert_eq!(record.source(), Path::new("<test>/text_stats.json"));
    }

    #[test]
    fn a_record_breaking_a_rule_is_refused_naming_its_file_and_field() {
        let d = RecordBuilder::new("text_stats")
            .timeout_ms(0)
            .command("escepine-no-such-binary-anywhere")
            .build()
            .expect_err("refused");
        assert!(d.has(Rule::EndpointResolvable), "{}", d.render());
        assert!(
            d.iter()
                .all(|d| d.file == Path::new("<test>/text_stats.json")),
            "{}",
            d.render()
        );
        assert!(
            d.iter()
                .any(|d| d.pointer.as_deref() == Some("/timeout_ms")),
            "{}",
            d.render()
        );
    }
}
