//! What the stages' unit tests share: a loaded tool and a context over it.

use escepine_contract::{
    FailureOutcome, Filesystem, Principal, RetryPolicy, SideEffectClass, Transport,
};
use registry_build::{EndpointSpec, ResolvedCommand, SandboxProfile, ToolRecord};
use serde_json::{json, Value};

use super::context::{CallContext, CallIds, CallOptions, LoadedTool};
use crate::gate::SchemaGate;
use crate::secrets::SecretSource;

/// A record of `tool_id` with these schemas, one attempt of 1 s, no secrets.
pub(crate) fn record(tool_id: &str, input: Value, output: Value) -> ToolRecord {
    ToolRecord {
        source: "<unit>".into(),
        tool_id: tool_id.into(),
        version: semver::Version::new(1, 0, 0),
        title: None,
        description: "unit".into(),
        open_world: None,
        input_schema: input,
        output_schema: output,
        cedar_action: tool_id.into(),
        action_groups: Vec::new(),
        side_effect_class: SideEffectClass::ReadOnly,
        compensation: None,
        timeout_ms: 1000,
        retry: RetryPolicy {
            max_attempts: 1,
            backoff_ms: 0,
        },
        on_failure: vec![FailureOutcome::Halt],
        endpoint: EndpointSpec {
            transport: Transport::StdioJson,
            command: "unused".into(),
            args: Vec::new(),
            sha256: None,
            image: None,
            definition_sha256: None,
            resolved: ResolvedCommand::WorkspaceBin("unused".into()),
        },
        secrets: Vec::new(),
        sandbox_profile: SandboxProfile {
            egress: Vec::new(),
            authorized_urls: false,
            filesystem: Filesystem::Workspace,
            read_only: Vec::new(),
        },
    }
}

/// `record` loaded: its gates compiled.
pub(crate) fn loaded(record: ToolRecord) -> LoadedTool {
    LoadedTool {
        input_gate: SchemaGate::new(&record.input_schema).expect("input schema compiles"),
        output_gate: SchemaGate::new(&record.output_schema).expect("output schema compiles"),
        record,
        egress: escepine_contract::EgressGrant::default(),
        overlay: Vec::new(),
    }
}

/// A closed object with one integer property `n` (required).
pub(crate) fn n_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "n": { "type": "integer", "maximum": 9 } },
        "required": ["n"],
        "additionalProperties": false
    })
}

/// Secrets from a fixed list.
pub(crate) struct Fixed(pub(crate) Vec<(&'static str, &'static str)>);

impl SecretSource for Fixed {
    fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_string())
    }
}

/// The principal the unit tests call as.
pub(crate) fn alice() -> Principal {
    Principal::agent("alice")
}

/// A context for `tool` with `secrets`, fixed ids `c`/`k`.
pub(crate) fn context<'a>(
    tool: &'a LoadedTool,
    principal: &'a Principal,
    opts: &'a CallOptions,
    secrets: &Fixed,
) -> CallContext<'a> {
    let ids = CallIds {
        call_id: "c".into(),
        idempotency_key: "k".into(),
    };
    CallContext::new(ids, principal, opts, tool, secrets)
}
