//! `escepine serve --mcp stdio`, driven by rmcp's own client over the process's stdio: list the
//! tools the principal may call, call an allowed one, get a denial naming its policies, get the
//! input gate's pointer and keyword for an unknown field — over the testtool records of
//! `tests/fixtures/mcp`.

use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::process::Command;

use escepine_testkit::mcp::fixture;
use escepine_testkit::testtool::testtool;

/// The `escepine` binary of this package.
fn escepine() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_escepine"))
}

async fn serve(principal: &str, ledger: &std::path::Path) -> RunningService<RoleClient, ()> {
    serve_with(principal, ledger, &[]).await
}

/// [`serve`] with more flags.
async fn serve_with(
    principal: &str,
    ledger: &std::path::Path,
    extra: &[&std::ffi::OsStr],
) -> RunningService<RoleClient, ()> {
    testtool(); // built, so the records' workspace binary resolves
    let mut cmd = Command::new(escepine());
    cmd.arg("serve")
        .args(["--mcp", "stdio"])
        .arg("--records")
        .arg(fixture("records"))
        .arg("--policies")
        .arg(fixture("policies"))
        .args(["--principal", principal])
        .arg("--ledger")
        .arg(ledger)
        .args(extra);
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn escepine serve");
    ().serve(transport).await.expect("initialize")
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("arguments are an object"),
    }
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = Some(args(arguments));
    client.call_tool(params).await
}

#[tokio::test]
async fn an_rmcp_client_lists_calls_and_is_denied_over_stdio() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let client = serve(r#"Agent::"alice""#, &ledger).await;

    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("escepine")
    );

    // tools/list: only what alice could be permitted to call.
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let expected: &[&str] = if cfg!(feature = "mcp-partial-eval") {
        &["m_echo", "m_note"]
    } else {
        &["m_echo", "m_guarded", "m_note"]
    };
    assert_eq!(names, expected);
    let echo = &tools[0];
    assert_eq!(
        echo.annotations.as_ref().and_then(|a| a.read_only_hint),
        Some(true)
    );
    assert!(echo.output_schema.is_some());

    // An allowed call: the gated output as structuredContent.
    let ok = call(&client, "m_echo", json!({ "text": "hello" }))
        .await
        .expect("tools/call");
    assert_eq!(ok.is_error, Some(false));
    assert!(ok
        .meta
        .as_ref()
        .is_some_and(|m| m.0.contains_key("dev.escepine/call_id")));
    assert_eq!(
        ok.structured_content,
        Some(json!({ "echo": { "text": "hello" } }))
    );

    // A forbidden tool (never listed): a denial naming its policy.
    let denied = call(&client, "m_publish", json!({ "text": "hello" }))
        .await
        .expect("tools/call");
    assert_eq!(denied.is_error, Some(true));
    let body = denied.error_details();
    assert_eq!(body["error"]["kind"], "denied");
    assert_eq!(body["error"]["policy_ids"], json!(["forbid-supersede"]));
    assert!(body["error"]["call_id"]
        .as_str()
        .is_some_and(|c| !c.is_empty()));

    // A listed tool denied for this payload only.
    let denied = call(&client, "m_echo", json!({ "text": "forbidden" }))
        .await
        .expect("tools/call");
    let body = denied.error_details();
    assert_eq!(body["error"]["policy_ids"], json!(["forbid-secret-word"]));

    // An unknown field: the input gate's pointer and keyword; nothing ran.
    let rejected = call(&client, "m_echo", json!({ "text": "hi", "txt": "typo" }))
        .await
        .expect("tools/call");
    assert_eq!(rejected.is_error, Some(true));
    let body = rejected.error_details();
    assert_eq!(body["error"]["kind"], "input_rejected");
    let v = &body["error"]["violations"][0];
    assert_eq!(v["keyword"], "additionalProperties");
    assert_eq!(v["pointer"], "");
    assert!(
        v["message"].as_str().is_some_and(|m| m.contains("txt")),
        "{v}"
    );

    // A tool the registry does not hold: a JSON-RPC error (invalid params).
    let err = call(&client, "no_such_tool", json!({}))
        .await
        .expect_err("unknown tool");
    let ServiceError::McpError(e) = err else {
        panic!("not an MCP error: {err:?}")
    };
    assert_eq!(e.code.0, -32602);

    client.cancel().await.expect("close");

    // Evidence: the allowed call and the two denials reached the ledger; the rejected input
    // did not (nothing is recorded before the input gate passes).
    let entries = escepine_ledger::sqlite::read_entries(&ledger).expect("ledger");
    assert_eq!(entries.len(), 6, "three intents, three outcomes");
}

#[tokio::test]
async fn another_principal_sees_and_may_call_less() {
    let dir = tempfile::tempdir().expect("tempdir");
    let client = serve(r#"Agent::"bob""#, &dir.path().join("ledger.db")).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"m_echo") && !names.contains(&"m_note"),
        "{names:?}"
    );
    let denied = call(&client, "m_note", json!({ "text": "x" }))
        .await
        .expect("tools/call");
    let body = denied.error_details();
    assert_eq!(body["error"]["kind"], "denied");
    assert_eq!(
        body["error"]["policy_ids"],
        json!([]),
        "a default deny names no policy"
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_shadow_set_served_over_stdio_is_recorded_and_never_enforced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let candidate = dir.path().join("candidate");
    std::fs::create_dir_all(&candidate).expect("mkdir");
    for e in std::fs::read_dir(fixture("policies")).expect("policies") {
        let path = e.expect("entry").path();
        std::fs::copy(&path, candidate.join(path.file_name().expect("name"))).expect("copied");
    }
    std::fs::write(
        candidate.join("shadow.cedar"),
        "@id(\"shadow-no-hello\")\nforbid (principal, action == Action::\"m_echo\", resource)\n\
         when { context.input.text == \"hello\" };\n",
    )
    .expect("written");
    let client = serve_with(
        r#"Agent::"alice""#,
        &ledger,
        &["--shadow-policies".as_ref(), candidate.as_os_str()],
    )
    .await;
    // The candidate's forbid is not enforced: the call is allowed and answered.
    let ok = call(&client, "m_echo", json!({ "text": "hello" }))
        .await
        .expect("tools/call");
    assert_eq!(
        ok.structured_content,
        Some(json!({ "echo": { "text": "hello" } }))
    );
    let other = call(&client, "m_echo", json!({ "text": "bye" }))
        .await
        .expect("tools/call");
    assert_eq!(other.is_error, Some(false));
    client.cancel().await.expect("close");

    let entries = escepine_ledger::sqlite::read_entries(&ledger).expect("ledger");
    let shadows: Vec<(String, Option<escepine_ledger::record::ShadowDecision>)> = entries
        .iter()
        .filter_map(|e| match &e.record {
            escepine_ledger::record::Record::Intent(i) => {
                Some((i.payload["text"].to_string(), i.shadow.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        shadows,
        [
            (
                "\"hello\"".to_string(),
                Some(escepine_ledger::record::ShadowDecision {
                    decision: escepine_ledger::record::Decision::Deny,
                    policy_ids: vec!["shadow-no-hello".into()]
                })
            ),
            ("\"bye\"".to_string(), None),
        ]
    );
}

#[tokio::test]
async fn stdio_needs_a_principal() {
    let out = std::process::Command::new(escepine())
        .args(["serve", "--mcp", "stdio", "--ledger", "/tmp/unused.db"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--principal"));
}

/// The details of an error result: in `_meta`, and as JSON in the second text block; never
/// as `structuredContent` (a client would validate that against the tool's output schema).
trait ErrorDetails {
    fn error_details(self) -> Value;
}

impl ErrorDetails for rmcp::model::CallToolResult {
    fn error_details(self) -> Value {
        assert_eq!(self.is_error, Some(true));
        assert!(
            self.structured_content.is_none(),
            "an error result carries no structuredContent"
        );
        let meta = self
            .meta
            .as_ref()
            .and_then(|m| m.0.get("dev.escepine/error"))
            .cloned()
            .expect("the error details in _meta");
        let text = self
            .content
            .get(1)
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .expect("a second text block");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), meta);
        meta
    }
}
