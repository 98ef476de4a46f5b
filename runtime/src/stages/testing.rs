//! What the stages' unit tests share: a loaded tool and a context over it.

use escepine_contract::Principal;
use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use serde_json::{json, Value};

use super::context::{CallContext, CallIds, CallOptions, LoadedTool};
use crate::secrets::SecretSource;
use escepine_policy::gate::SchemaGate;

/// The builder of a record of `tool_id` with these schemas, one attempt of 1 s, no secrets.
pub(crate) fn builder(tool_id: &str, input: Value, output: Value) -> RecordBuilder {
    RecordBuilder::new(tool_id)
        .description("unit")
        .input_schema(input)
        .output_schema(output)
        .timeout_ms(1000)
}

/// [`builder`]'s record, registered.
pub(crate) fn record(tool_id: &str, input: Value, output: Value) -> ToolRecord {
    builder(tool_id, input, output).registered()
}

/// `record` loaded: its gates compiled.
pub(crate) fn loaded(record: ToolRecord) -> LoadedTool {
    LoadedTool {
        input_gate: SchemaGate::new(record.input_schema()).expect("input schema compiles"),
        output_gate: SchemaGate::new(record.output_schema()).expect("output schema compiles"),
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
