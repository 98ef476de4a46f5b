//! `escepine import mcp` over the workspace's own MCP server (`escepine-mcp-demo`): the drafts
//! name what is left to decide (a credential-looking field, an open map), `escepine check` lists
//! the same, and once the test makes those decisions the records pass `escepine check` and are
//! called through the governed path (over `mcp-stdio`).

mod mcp_support;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use escepine_contract::Principal;
use escepine_runtime::executor::process::ProcessExecutor;
use escepine_runtime::ledger::memory::MemoryLedger;
use escepine_runtime::Runtime;
use serde_json::{json, Value};

use mcp_support::{demo_server, escepine, workspace_root};

fn run(args: &[&str], extra: &[&Path]) -> Output {
    let mut cmd = Command::new(escepine());
    cmd.current_dir(workspace_root()).args(args);
    for p in extra {
        cmd.arg(p);
    }
    cmd.output().expect("run escepine")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

fn write(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).expect("JSON")).expect("write");
}

fn check(drafts: &Path, policies: &Path) -> Output {
    let mut cmd = Command::new(escepine());
    cmd.current_dir(workspace_root())
        .args(["check", "--records"])
        .arg(drafts)
        .arg("--policies")
        .arg(policies);
    cmd.output().expect("run escepine check")
}

#[tokio::test]
async fn imported_drafts_pass_check_once_decided_and_run_governed() {
    let server = demo_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let drafts = dir.path().join("drafts");
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).expect("mkdir");
    std::fs::write(
        policies.join("all.cedar"),
        "@id(\"permit-all\")\npermit(principal, action, resource);\n",
    )
    .expect("policy");

    // 1. Import: three drafts written, two problems reported (and exit 1).
    let out = Command::new(escepine())
        .current_dir(workspace_root())
        .args(["import", "mcp", "--out"])
        .arg(&drafts)
        .arg("--")
        .arg(&server)
        .output()
        .expect("run escepine import");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for file in ["word_count.json", "lookup_city.json", "set_label.json"] {
        assert!(stdout.contains(file), "{stdout}");
        assert!(drafts.join(file).is_file());
    }
    assert!(
        stderr.contains("input/credential-free") && stderr.contains("api_key"),
        "{stderr}"
    );
    assert!(
        stderr.contains("schema/closed") && stderr.contains("labels"),
        "{stderr}"
    );
    assert!(stderr.contains("2 problems in 2 files"), "{stderr}");
    assert!(stdout.contains("REVIEW /side_effect_class"), "{stdout}");

    // What the drafts say: the mapped id, the endpoint (the workspace's binary by name), the
    // guessed classes, the placeholders, the review notes.
    let wc = read(&drafts.join("word_count.json"));
    assert_eq!(wc["tool_id"], "word_count");
    assert_eq!(
        wc["endpoint"],
        json!({ "transport": "mcp-stdio", "command": "escepine-mcp-demo" })
    );
    assert_eq!(wc["side_effect_class"], "read-only");
    assert_eq!(wc["input_schema"]["additionalProperties"], false);
    assert_eq!(
        wc["output_schema"]["required"],
        json!(["words", "characters"])
    );
    assert_eq!(wc["sandbox_profile"]["egress"], json!([]));
    let set = read(&drafts.join("set_label.json"));
    assert_eq!(set["side_effect_class"], "supersede");
    assert!(set["$comment"].as_array().is_some_and(|c| c
        .iter()
        .any(|n| n.as_str().is_some_and(|n| n.starts_with("REVIEW")))));

    // 2. `escepine check` lists what is left to decide.
    let out = check(&drafts, &policies);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("api_key") && stderr.contains("labels"),
        "{stderr}"
    );

    // A second import does not overwrite the drafts.
    let again = run(
        &["import", "mcp", "--out"],
        &[&drafts, Path::new("--"), &server],
    );
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("--force"));

    // 3. The decisions: the server reads no key of ours (drop `api_key`), and labels are not
    //    offered to agents (drop the open map).
    let path = drafts.join("lookup_city.json");
    let mut city = read(&path);
    city["input_schema"]["properties"]
        .as_object_mut()
        .expect("properties")
        .remove("api_key");
    write(&path, &city);
    let path = drafts.join("set_label.json");
    let mut set = read(&path);
    set["input_schema"]["properties"]
        .as_object_mut()
        .expect("properties")
        .remove("labels");
    write(&path, &set);

    let out = check(&drafts, &policies);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("ok: 3 tools"));

    // 4. Called through the governed path, the demo server as their mcp-stdio endpoint.
    let registry = registry_build::load(
        &registry_build::Sources::new()
            .records(&drafts)
            .policies(&policies)
            .workspace_root(workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let runtime = Runtime::builder(registry)
        .ledger(Arc::new(MemoryLedger::new()))
        .executor(Arc::new(
            ProcessExecutor::new().with_bin_dir(server.parent().expect("dir")),
        ))
        .build()
        .expect("runtime");
    let p = Principal::agent("importer");
    let out = runtime
        .dispatch(
            &p,
            "word_count",
            json!({ "text": "a three two", "min_length": 2 }),
        )
        .await
        .expect("word_count");
    assert_eq!(
        out,
        json!({ "words": 2, "characters": 11, "longest": "three" })
    );
    let out = runtime
        .dispatch(&p, "lookup_city", json!({ "city": "Quito" }))
        .await
        .expect("lookup_city");
    assert_eq!(out["country"], "Ecuador");
    let out = runtime
        .dispatch(&p, "set_label", json!({ "key": "a", "value": "b" }))
        .await
        .expect("set_label");
    assert_eq!(out["key"], "a");
    // The decided-away field is now an unknown field for the input gate.
    let err = runtime
        .dispatch(
            &p,
            "lookup_city",
            json!({ "city": "Quito", "api_key": "x" }),
        )
        .await
        .expect_err("api_key is gone");
    assert!(
        matches!(err, escepine_runtime::CallError::InputRejected(_)),
        "{err:?}"
    );
}

#[test]
fn a_server_that_cannot_start_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        &["import", "mcp", "--out"],
        &[
            dir.path(),
            Path::new("--"),
            Path::new("/nonexistent/server"),
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("cannot start"),
        "{}",
        text(&out.stderr)
    );
}
