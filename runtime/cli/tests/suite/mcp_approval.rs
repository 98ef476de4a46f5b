//! Approval over MCP (`escepine serve --mcp http`, rmcp's streamable HTTP client, two bearer
//! tokens): a call needing approval becomes a task whose id is the call id for a client that
//! declares the tasks extension, and a tool error `awaiting_approval` carrying the call id for
//! one that does not; the requester's `approve` is refused, and another principal can neither
//! read nor cancel the task; the approver's runs the call once
//! (a host file counts runs); `tasks/get` reads the completed result from the ledger, also after
//! `escepine serve` restarts on the same ledger.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, GetTaskParams, Implementation, TaskPayload, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use escepine_testkit::mcp::{serve_http, HttpServe};
use escepine_testkit::testtool::testtool;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";
const CAROL: &str = "carol-token-0123456789ab";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/mcp-approval")
        .join(rel)
}

/// `escepine serve --mcp http` on `dir`'s ledger, with the three principals' tokens.
fn start(dir: &Path, extra: &[&str]) -> HttpServe {
    testtool();
    let tokens = dir.join("tokens.json");
    std::fs::write(
        &tokens,
        json!({
            ALICE: "Agent::\"alice\"",
            BOB: "Agent::\"bob\"",
            CAROL: "Agent::\"carol\"",
        })
        .to_string(),
    )
    .expect("tokens");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_escepine"));
    serve
        .args(["serve", "--mcp", "http", "--listen", "127.0.0.1:0"])
        .arg("--records")
        .arg(fixture("records"))
        .arg("--policies")
        .arg(fixture("policies"))
        .arg("--tokens")
        .arg(&tokens)
        .arg("--ledger")
        .arg(dir.join("ledger.db"))
        // The counter is a host file: the unsandboxed executor writes it.
        .args(["--executor", "process"])
        .args(extra);
    serve_http(serve)
}

fn config(url: &str, token: &str) -> StreamableHttpClientTransportConfig {
    StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token)
}

/// A client declaring the tasks extension.
async fn tasks_client(url: &str, token: &str) -> RunningService<RoleClient, ClientConfig> {
    ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("approval-test", "1.0.0"),
    )
    .serve(StreamableHttpClientTransport::from_config(config(
        url, token,
    )))
    .await
    .expect("initialize over HTTP")
}

/// A client declaring no extension.
async fn plain_client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    ().serve(StreamableHttpClientTransport::from_config(config(
        url, token,
    )))
    .await
    .expect("initialize over HTTP")
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_string());
    p.arguments = args.as_object().cloned();
    p
}

/// The `_meta` error details of a tool error result.
fn error_of(r: &CallToolResult) -> Value {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(r.structured_content.is_none());
    r.meta
        .as_ref()
        .and_then(|m| m.0.get("dev.escepine/error"))
        .cloned()
        .expect("error details in _meta")
}

fn runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn is_call_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[tokio::test]
async fn a_task_waits_for_the_approver_and_its_result_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let input = json!({ "counter": counter.to_str().expect("utf-8 path") });
    let server = start(dir.path(), &[]);
    let alice = tasks_client(&server.url, ALICE).await;
    let bob = plain_client(&server.url, BOB).await;

    // `approve` is listed for both.
    for tools in [
        alice.list_all_tools().await.expect("tools/list"),
        bob.list_all_tools().await.expect("tools/list"),
    ] {
        assert!(tools.iter().any(|t| t.name == "approve"), "{tools:?}");
    }

    let created = match alice
        .call_tool_once(params("a_count", input.clone()))
        .await
        .expect("tools/call")
    {
        CallToolResponse::Task(t) => t,
        other => panic!("a task, not {other:?}"),
    };
    let call_id = created.task.task_id.clone();
    assert!(is_call_id(&call_id), "{call_id}");
    assert_eq!(created.task.status, TaskStatus::Working);
    assert_eq!(runs(&counter), 0, "nothing runs before approval");

    let task = alice
        .get_task(GetTaskParams::new(call_id.clone()))
        .await
        .expect("tasks/get");
    assert_eq!(task.task.status(), TaskStatus::Working);
    assert_eq!(task.task.task.task_id, call_id);

    // The requester cannot approve; another principal neither sees nor cancels the task.
    let own = alice
        .call_tool(params("approve", json!({ "call_id": call_id })))
        .await
        .expect("tools/call approve");
    let own = error_of(&own);
    assert_eq!(own["error"]["kind"], "approval_refused");
    assert_eq!(own["error"]["reason"], "self_approval");
    assert_eq!(own["error"]["call_id"], call_id.as_str());
    let carol = tasks_client(&server.url, CAROL).await;
    carol
        .get_task(GetTaskParams::new(call_id.clone()))
        .await
        .expect_err("another principal's task is unknown");
    carol
        .cancel_task(CancelTaskParams::new(call_id.clone()))
        .await
        .expect_err("another principal cannot cancel the task");
    let not_permitted = carol
        .call_tool(params("approve", json!({ "call_id": call_id })))
        .await
        .expect("tools/call approve");
    assert_eq!(error_of(&not_permitted)["error"]["reason"], "not_permitted");
    assert_eq!(runs(&counter), 0);
    let still = alice
        .get_task(GetTaskParams::new(call_id.clone()))
        .await
        .expect("tasks/get");
    assert_eq!(still.task.status(), TaskStatus::Working);

    // The approver approves: the call runs once.
    let approved = bob
        .call_tool(params(
            "approve",
            json!({ "call_id": call_id, "decision": "approve" }),
        ))
        .await
        .expect("tools/call approve");
    assert_ne!(approved.is_error, Some(true), "{approved:?}");
    assert_eq!(
        approved.structured_content,
        Some(json!({
            "call_id": call_id, "decision": "approved", "kind": "ok", "output": { "count": 1 }
        }))
    );
    assert_eq!(runs(&counter), 1);
    let again = bob
        .call_tool(params("approve", json!({ "call_id": call_id })))
        .await
        .expect("tools/call approve");
    assert_eq!(error_of(&again)["error"]["reason"], "already_decided");
    assert_eq!(runs(&counter), 1);

    let completed = |t: rmcp::model::GetTaskResult| match t.task.payload {
        TaskPayload::Completed { result } => {
            serde_json::from_value::<CallToolResult>(Value::Object(result)).expect("a result")
        }
        other => panic!("completed, not {other:?}"),
    };
    let done = completed(
        alice
            .get_task(GetTaskParams::new(call_id.clone()))
            .await
            .expect("tasks/get"),
    );
    assert_eq!(done.structured_content, Some(json!({ "count": 1 })));

    // A restarted server on the same ledger answers from the ledger.
    alice.cancel().await.expect("close");
    bob.cancel().await.expect("close");
    carol.cancel().await.expect("close");
    drop(server);
    let server = start(dir.path(), &[]);
    let alice = tasks_client(&server.url, ALICE).await;
    let done = completed(
        alice
            .get_task(GetTaskParams::new(call_id.clone()))
            .await
            .expect("tasks/get after a restart"),
    );
    assert_eq!(done.structured_content, Some(json!({ "count": 1 })));
    assert_eq!(runs(&counter), 1, "the call ran once");
    alice.cancel().await.expect("close");
}

#[tokio::test]
async fn without_the_tasks_extension_a_waiting_call_is_a_tool_error_with_its_call_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let input = json!({ "counter": counter.to_str().expect("utf-8 path") });
    let server = start(dir.path(), &[]);
    let alice = plain_client(&server.url, ALICE).await;
    let bob = plain_client(&server.url, BOB).await;

    let waiting = alice
        .call_tool(params("a_count", input.clone()))
        .await
        .expect("tools/call");
    let details = error_of(&waiting);
    assert_eq!(details["error"]["kind"], "awaiting_approval");
    let call_id = details["error"]["call_id"]
        .as_str()
        .expect("a call id")
        .to_string();
    assert!(is_call_id(&call_id), "{call_id}");
    assert!(
        details["error"]["expires_at_ms"].as_u64().is_some(),
        "{details}"
    );
    assert_eq!(
        details["error"]["policy_ids"],
        json!(["permit-alice-count"])
    );
    assert_eq!(runs(&counter), 0);

    // Rejected: recorded, nothing runs; the task (for a client with tasks) has failed.
    let rejected = bob
        .call_tool(params(
            "approve",
            json!({ "call_id": call_id, "decision": "reject" }),
        ))
        .await
        .expect("tools/call approve");
    assert_eq!(
        rejected.structured_content,
        Some(json!({ "call_id": call_id, "decision": "rejected", "kind": "rejected" }))
    );
    let late = bob
        .call_tool(params("approve", json!({ "call_id": call_id })))
        .await
        .expect("tools/call approve");
    assert_eq!(error_of(&late)["error"]["reason"], "already_decided");
    assert_eq!(runs(&counter), 0);
    let with_tasks = tasks_client(&server.url, ALICE).await;
    let task = with_tasks
        .get_task(GetTaskParams::new(call_id.clone()))
        .await
        .expect("tasks/get");
    match task.task.payload {
        TaskPayload::Failed { error } => assert_eq!(error["data"]["kind"], "rejected"),
        other => panic!("failed, not {other:?}"),
    }

    // A bad input to `approve` names the field.
    let bad = bob
        .call_tool(params("approve", json!({ "call_id": "nope" })))
        .await
        .expect("tools/call approve");
    let bad = error_of(&bad);
    assert_eq!(bad["error"]["kind"], "input_rejected");
    assert_eq!(bad["error"]["violations"][0]["pointer"], "/call_id");

    alice.cancel().await.expect("close");
    bob.cancel().await.expect("close");
    with_tasks.cancel().await.expect("close");
}

#[tokio::test]
async fn an_approval_after_expiry_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let input = json!({ "counter": counter.to_str().expect("utf-8 path") });
    let server = start(dir.path(), &["--approval-ttl", "1"]);
    let alice = tasks_client(&server.url, ALICE).await;
    let bob = plain_client(&server.url, BOB).await;
    let call_id = match alice
        .call_tool_once(params("a_count", input))
        .await
        .expect("tools/call")
    {
        CallToolResponse::Task(t) => t.task.task_id,
        other => panic!("a task, not {other:?}"),
    };
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let late = bob
        .call_tool(params("approve", json!({ "call_id": call_id })))
        .await
        .expect("tools/call approve");
    assert_eq!(error_of(&late)["error"]["reason"], "expired");
    assert_eq!(runs(&counter), 0);
    let task = alice
        .get_task(GetTaskParams::new(call_id.clone()))
        .await
        .expect("tasks/get");
    match task.task.payload {
        TaskPayload::Failed { error } => assert_eq!(error["data"]["kind"], "expired"),
        other => panic!("failed, not {other:?}"),
    }
    alice.cancel().await.expect("close");
    bob.cancel().await.expect("close");
}
