//! The in-process executor (feature `in-process`: tests and benchmarks only).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::executor::{ExecError, Executor, InProcessExecutor, Invocation};
use serde_json::{json, Value};

fn record(tool_id: &str) -> ToolRecord {
    RecordBuilder::new(tool_id)
        .description("in-process")
        .timeout_ms(1000)
        .registered()
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
        files: &escepine_contract::WorkspaceFiles::new(),
        caller_token: None,
        trace: None,
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
