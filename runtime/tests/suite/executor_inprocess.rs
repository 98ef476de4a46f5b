//! The in-process executor (feature `in-process`: tests and benchmarks only).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use escepine_contract::{FailureOutcome, Filesystem, RetryPolicy, SideEffectClass, Transport};
use escepine_runtime::executor::{ExecError, Executor, InProcessExecutor, Invocation};
use registry_build::{EndpointSpec, ResolvedCommand, SandboxProfile, ToolRecord};
use serde_json::{json, Value};

fn record(tool_id: &str) -> ToolRecord {
    ToolRecord {
        source: "<test>".into(),
        tool_id: tool_id.into(),
        version: "1.0.0".parse().expect("semver"),
        title: None,
        description: "in-process".into(),
        open_world: None,
        input_schema: json!({ "type": "object" }),
        output_schema: json!({ "type": "object" }),
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

async fn call(
    executor: &InProcessExecutor,
    tool: &ToolRecord,
    payload: Value,
) -> Result<Value, ExecError> {
    let secrets = BTreeMap::new();
    let inv = Invocation {
        tool,
        payload: &payload,
        call_id: "c",
        idempotency_key: "k",
        attempt: 1,
        timeout: Duration::from_secs(1),
        secrets: &secrets,
        scrubber: &escepine_runtime::scrub::Scrubber::new(secrets.values().map(String::as_str)),
        egress: &escepine_contract::EgressGrant::default(),
    };
    executor.execute(inv).await.map(|e| e.output)
}

#[tokio::test]
async fn runs_the_registered_closure() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let executor = InProcessExecutor::new()
        .with_tool("echo", |p: &Value| Ok(json!({ "echo": p })))
        .with_tool("count", move |_: &Value| {
            Ok(json!({ "count": seen.fetch_add(1, Ordering::SeqCst) + 1 }))
        })
        .with_tool("flaky", |_: &Value| {
            Err(ExecError::Transient {
                message: "try again".into(),
                stderr: String::new(),
            })
        });
    assert!(executor.contains("echo"));
    assert_eq!(
        call(&executor, &record("echo"), json!({ "a": 1 })).await,
        Ok(json!({ "echo": { "a": 1 } }))
    );
    call(&executor, &record("count"), json!({}))
        .await
        .expect("count");
    assert_eq!(
        call(&executor, &record("count"), json!({})).await,
        Ok(json!({ "count": 2 }))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let err = call(&executor, &record("flaky"), json!({}))
        .await
        .expect_err("transient");
    assert!(err.is_transient());
    let err = call(&executor, &record("unknown"), json!({}))
        .await
        .expect_err("not registered");
    assert!(matches!(err, ExecError::Spawn(m) if m.contains("unknown")));
}
