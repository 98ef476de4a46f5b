//! `escepine serve` as the edge agents meet, driven by the official SDKs' own clients: the
//! Python SDK 2.x over streamable HTTP and over stdio lands on the stateless 2026-07-28
//! revision; the TypeScript SDK 1.x speaks 2025-11-25 with a session. Each lists and calls the
//! tools, gets a denial with its policy ids, and an approval task it polls to completion after
//! `escepine approve` (run by the test, as another principal). A cancelled task withdraws the
//! waiting call (recorded, nothing runs). On the wire: no session in the stateless revision
//! (`GET`/`DELETE` `405`, a stray `Mcp-Session-Id` ignored), the `Mcp-Method`/`Mcp-Name` headers
//! checked against the body, a 2025 session its opener's alone, its `DELETE` answered `204`.
//!
//! Principals come from a development token file here; `mcp_oauth` runs the same with OAuth.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use escepine_testkit::mcp::{serve_http, HttpServe};
use escepine_testkit::mcp_clients::{events_named, Sdk, SdkClient};
use escepine_testkit::testtool::testtool;

pub(crate) const ALICE: &str = "alice-token-0123456789";
pub(crate) const BOB: &str = "bob-token-0123456789abc";
pub(crate) const MALLORY: &str = "mallory-token-0123456789";

/// A file of the edge fixture.
pub(crate) fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/mcp-edge")
        .join(rel)
}

/// The registry flags of the fixture.
pub(crate) fn registry_args(command: &mut Command) {
    command
        .arg("--records")
        .arg(fixture("records"))
        .arg("--policies")
        .arg(fixture("policies"))
        // The counter is a host file: the unsandboxed executor writes it.
        .args(["--executor", "process"]);
}

/// `escepine serve --mcp http` on `dir`'s ledger, with the three principals' tokens.
fn serve(dir: &Path) -> HttpServe {
    testtool();
    let tokens = dir.join("tokens.json");
    std::fs::write(
        &tokens,
        json!({
            ALICE: "Agent::\"alice\"",
            BOB: "Agent::\"bob\"",
            MALLORY: "Agent::\"mallory\"",
        })
        .to_string(),
    )
    .expect("tokens");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_escepine"));
    serve.args(["serve", "--mcp", "http", "--listen", "127.0.0.1:0"]);
    registry_args(&mut serve);
    serve
        .arg("--entities")
        .arg(fixture("entities.json"))
        .arg("--tokens")
        .arg(&tokens)
        .arg("--ledger")
        .arg(dir.join("ledger.db"));
    serve_http(serve)
}

/// `escepine approve CALL_ID` (or `reject`) as `principal` on `ledger`, the fixture's entities
/// giving the principal its teams, with `extra` flags.
pub(crate) fn decide(verb: &str, call_id: &str, principal: &str, ledger: &Path, extra: &[&str]) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_escepine"));
    c.args([verb, call_id, "--principal", principal]);
    registry_args(&mut c);
    c.arg("--entities")
        .arg(fixture("entities.json"))
        .arg("--ledger")
        .arg(ledger)
        .args(extra);
    let out = c.output().expect("escepine approve");
    assert!(
        out.status.success(),
        "{verb}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The runs the counter file records.
pub(crate) fn runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The steps every client runs: list; an allowed call; a denied one; a call that waits for
/// approval, polled as a task until it ends.
pub(crate) fn steps(counter: &Path) -> Value {
    json!([
        { "op": "list" },
        { "op": "call", "tool": "e_echo", "arguments": { "text": "hello" } },
        { "op": "call", "tool": "e_echo", "arguments": { "text": "forbidden" } },
        { "op": "call_task", "tool": "e_count",
          "arguments": { "counter": counter.to_str().expect("utf-8 path") }, "timeout_s": 60 },
    ])
}

/// Runs `client` through [`steps`]: asserts the revision, the listing, the allowed call, the
/// denial with its policy ids, then approves the task's call with `approve` (the caller says
/// how: the CLI on the server's ledger) and asserts the completed task, which ran once.
/// Returns every event of the client.
pub(crate) fn drive(
    mut client: SdkClient,
    revision: &str,
    listed: &[&str],
    counter: &Path,
    approve: impl FnOnce(&str),
) -> Vec<Value> {
    let connected = client.wait_for("connected", Duration::from_secs(60));
    assert_eq!(connected["protocol_version"], revision, "{connected}");
    assert_eq!(connected["server"], "escepine");
    let list = client.wait_for("list", Duration::from_secs(30));
    assert_eq!(list["tools"], json!(listed), "{list}");

    let ok = client.wait_for("call", Duration::from_secs(30));
    assert_eq!(ok["is_error"], false, "{ok}");
    assert_eq!(ok["structured"], json!({ "echo": { "text": "hello" } }));
    let call_id = ok["meta"]["dev.escepine/call_id"]
        .as_str()
        .expect("call id");
    assert_eq!(call_id.len(), 32);

    let denied = client.wait_for("call", Duration::from_secs(30));
    assert_eq!(denied["is_error"], true, "{denied}");
    assert!(denied["structured"].is_null());
    let details = &denied["meta"]["dev.escepine/error"]["error"];
    assert_eq!(details["kind"], "denied", "{denied}");
    assert_eq!(details["policy_ids"], json!(["no-forbidden-text"]));

    let task = client.wait_for("task", Duration::from_secs(30));
    assert_eq!(task["status"], "working", "{task}");
    let task_id = task["task_id"].as_str().expect("task id").to_string();
    assert_eq!(runs(counter), 0, "nothing runs before approval");
    approve(&task_id);
    let done = client.wait_for("task_done", Duration::from_secs(60));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"], json!({ "count": 1 }));
    assert_eq!(runs(counter), 1);
    let events = client.finish(Duration::from_secs(30));
    assert_eq!(events_named(&events, "error").count(), 0, "{events:#?}");
    events
}

/// The Python SDK 2.x over streamable HTTP: 2026-07-28, stateless.
#[test]
fn the_python_sdk_lands_on_2026_07_28_over_http() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path());
    let counter = dir.path().join("counter");
    let ledger = dir.path().join("ledger.db");
    let client = SdkClient::start(
        Sdk::Python,
        &json!({ "transport": "http", "url": server.url, "bearer": ALICE, "steps": steps(&counter) }),
    );
    drive(
        client,
        "2026-07-28",
        &["e_count", "e_echo", "approve"],
        &counter,
        |id| decide("approve", id, "Agent::\"bob\"", &ledger, &[]),
    );
}

/// The Python SDK 2.x over stdio (it starts `escepine serve --mcp stdio` itself): 2026-07-28.
#[test]
fn the_python_sdk_lands_on_2026_07_28_over_stdio() {
    testtool();
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let ledger = dir.path().join("ledger.db");
    let command = stdio_command(&ledger);
    let client = SdkClient::start(
        Sdk::Python,
        &json!({ "transport": "stdio", "command": command, "steps": steps(&counter) }),
    );
    drive(
        client,
        "2026-07-28",
        &["e_count", "e_echo", "approve"],
        &counter,
        |id| decide("approve", id, "Agent::\"bob\"", &ledger, &[]),
    );
}

/// The command line of `escepine serve --mcp stdio` for alice on `ledger`.
fn stdio_command(ledger: &Path) -> Vec<String> {
    let mut command = vec![
        env!("CARGO_BIN_EXE_escepine").to_string(),
        "serve".into(),
        "--mcp".into(),
        "stdio".into(),
        "--principal".into(),
        "Agent::\"alice\"".into(),
        "--entities".into(),
        fixture("entities.json").display().to_string(),
        "--ledger".into(),
        ledger.display().to_string(),
    ];
    let mut registry = Command::new("unused");
    registry_args(&mut registry);
    command.extend(
        registry
            .get_args()
            .map(|a| a.to_string_lossy().into_owned()),
    );
    command
}

/// The TypeScript SDK 1.x over stdio: an `initialize` selects 2025-11-25 on the same server.
#[test]
fn the_typescript_sdk_speaks_2025_11_25_over_stdio() {
    testtool();
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let ledger = dir.path().join("ledger.db");
    let client = SdkClient::start(
        Sdk::TypeScript,
        &json!({ "transport": "stdio", "command": stdio_command(&ledger), "steps": steps(&counter) }),
    );
    drive(
        client,
        "2025-11-25",
        &["e_count", "e_echo", "approve"],
        &counter,
        |id| decide("approve", id, "Agent::\"bob\"", &ledger, &[]),
    );
}

/// The TypeScript SDK 1.x over streamable HTTP: 2025-11-25, with a session it ends with
/// `DELETE` (answered `204`, which it accepts).
#[test]
fn the_typescript_sdk_speaks_2025_11_25_with_a_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path());
    let counter = dir.path().join("counter");
    let ledger = dir.path().join("ledger.db");
    let mut plan_steps = steps(&counter);
    plan_steps
        .as_array_mut()
        .expect("steps")
        .push(json!({ "op": "terminate" }));
    let client = SdkClient::start(
        Sdk::TypeScript,
        &json!({ "transport": "http", "url": server.url, "bearer": ALICE, "steps": plan_steps }),
    );
    let events = drive(
        client,
        "2025-11-25",
        &["e_count", "e_echo", "approve"],
        &counter,
        |id| decide("approve", id, "Agent::\"bob\"", &ledger, &[]),
    );
    let connected = events_named(&events, "connected")
        .next()
        .expect("connected");
    assert!(
        connected["session"].as_str().is_some_and(|s| !s.is_empty()),
        "a 2025 client gets a session: {connected}"
    );
    let terminated = events_named(&events, "terminated")
        .next()
        .expect("terminated");
    assert!(terminated["session"].is_null(), "{terminated}");
}

/// A client cancels the task of its waiting call: the call is withdrawn (recorded), the task
/// ends `cancelled`, nothing runs, and an approver can no longer approve it. Both revisions.
#[test]
fn a_cancelled_task_withdraws_the_waiting_call_in_both_revisions() {
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = serve(dir.path());
        let counter = dir.path().join("counter");
        let mut client = SdkClient::start(
            sdk,
            &json!({
                "transport": "http", "url": server.url, "bearer": ALICE,
                "steps": [{ "op": "call_task", "tool": "e_count", "cancel": true, "timeout_s": 30,
                            "arguments": { "counter": counter.to_str().expect("utf-8") } }],
            }),
        );
        let task = client.wait_for("task", Duration::from_secs(60));
        let id = task["task_id"].as_str().expect("task id").to_string();
        let done = client.wait_for("task_done", Duration::from_secs(60));
        assert_eq!(done["status"], "cancelled", "{sdk:?}: {done}");
        drop(client);
        let shown = Command::new(env!("CARGO_BIN_EXE_escepine"))
            .args(["ledger", "show"])
            .arg(dir.path().join("ledger.db"))
            .output()
            .expect("ledger show");
        let shown = String::from_utf8_lossy(&shown.stdout).to_string();
        assert!(
            shown.contains("approval   withdrawn by Agent::\"alice\""),
            "{sdk:?}: {shown}"
        );
        let mut late = Command::new(env!("CARGO_BIN_EXE_escepine"));
        late.args(["approve", &id, "--principal", "Agent::\"bob\""]);
        registry_args(&mut late);
        let late = late
            .arg("--entities")
            .arg(fixture("entities.json"))
            .arg("--ledger")
            .arg(dir.path().join("ledger.db"))
            .output()
            .expect("approve");
        assert!(
            !late.status.success(),
            "{sdk:?}: a withdrawn call is decided"
        );
        assert!(
            String::from_utf8_lossy(&late.stderr).contains("already decided"),
            "{sdk:?}: {}",
            String::from_utf8_lossy(&late.stderr)
        );
        assert_eq!(runs(&counter), 0, "{sdk:?}");
        drop(server);
    }
}

/// Another principal can neither read nor cancel a task that is not theirs (it does not
/// exist for them), in either revision; the requester's task is untouched.
#[test]
fn another_principals_task_does_not_exist_for_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path());
    let counter = dir.path().join("counter");
    let mut alice = SdkClient::start(
        Sdk::Python,
        &json!({
            "transport": "http", "url": server.url, "bearer": ALICE,
            "steps": [{ "op": "call_task", "tool": "e_count", "timeout_s": 5,
                        "arguments": { "counter": counter.to_str().expect("utf-8") } }],
        }),
    );
    let task = alice.wait_for("task", Duration::from_secs(60));
    let id = task["task_id"].as_str().expect("task id").to_string();
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        let events = SdkClient::start(
            sdk,
            &json!({
                "transport": "http", "url": server.url, "bearer": MALLORY,
                "steps": [{ "op": "get_task", "task_id": id }, { "op": "cancel_task", "task_id": id }],
            }),
        )
        .finish(Duration::from_secs(60));
        let errors: Vec<&Value> = events_named(&events, "error").collect();
        assert_eq!(errors.len(), 2, "{sdk:?}: {events:#?}");
        for e in errors {
            assert!(
                e["message"].as_str().is_some_and(|m| m.contains("no task")),
                "{sdk:?}: {e}"
            );
        }
    }
    // Still waiting: the requester's poll times out, it was neither cancelled nor run.
    assert_still_waiting(alice, &counter);
}

/// `requester`'s task poll ends timed out on a task still `working`, and nothing ran.
pub(crate) fn assert_still_waiting(requester: SdkClient, counter: &Path) {
    let events = requester.finish(Duration::from_secs(30));
    assert!(
        events_named(&events, "error").any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("still working"))),
        "{events:#?}"
    );
    assert_eq!(runs(counter), 0);
}
