//! One attempt of a remote (`mcp-http`) tool, handed straight to a [`RemoteExecutor`].

use std::collections::BTreeMap;
use std::time::Duration;

use escepine_contract::{EgressEntry, EgressGrant};
use escepine_registry::record::ToolRecord;
use escepine_runtime::executor::{Attempted, Executor, Invocation};
use escepine_runtime::remote::RemoteExecutor;
use escepine_runtime::scrub::Scrubber;
use serde_json::Value;

/// The grant of one `host:port` entry.
pub fn grant(entry: &str) -> EgressGrant {
    let entry: EgressEntry = entry.parse().expect("an egress entry");
    EgressGrant::new(vec![entry])
}

/// One attempt of `record` with `payload` and the secret values `secrets`, within 10 s.
pub async fn attempt(
    executor: &RemoteExecutor,
    record: &ToolRecord,
    payload: &Value,
    grant: &EgressGrant,
    secrets: &[(&str, &str)],
) -> Attempted {
    attempt_in(executor, record, payload, grant, secrets, None).await
}

/// [`attempt`], continuing `trace`.
pub async fn attempt_in(
    executor: &RemoteExecutor,
    record: &ToolRecord,
    payload: &Value,
    grant: &EgressGrant,
    secrets: &[(&str, &str)],
    trace: Option<&escepine_runtime::telemetry::TraceContext>,
) -> Attempted {
    let secrets: BTreeMap<String, String> = secrets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let scrubber = Scrubber::new(secrets.values().map(String::as_str));
    executor
        .attempt(Invocation {
            tool: record,
            payload,
            call_id: "call-1",
            idempotency_key: "key-1",
            attempt: 1,
            timeout: Duration::from_secs(10),
            secrets: &secrets,
            scrubber: &scrubber,
            egress: grant,
            files: &escepine_contract::WorkspaceFiles::new(),
            caller_token: None,
            trace,
        })
        .await
}
