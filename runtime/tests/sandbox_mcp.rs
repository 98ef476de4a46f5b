//! `mcp-stdio` inside the sandbox: an existing MCP server binary becomes a governed, sandboxed
//! tool. The workspace's rmcp server (`escepine-mcp-demo`) runs through [`Runtime`] with the
//! [`SandboxExecutor`]; an rmcp probe server (`escepine-mcp-probe`) proves where it ran; servers
//! that stay silent, fail transiently or leave a child behind are classified as for a local
//! process, and the host is checked clean after each scenario.

mod sandbox_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_contract::Principal;
use escepine_runtime::executor::{ExecError, Execution, ProcessExecutor};
use escepine_runtime::ledger::sqlite::SqliteLedger;
use escepine_runtime::ledger::{CallResult, Durability, Record};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_runtime::{CallError, Runtime};
use sandbox_support::{
    executor, mcp_demo, mcp_probe, mcp_record, run, workspace_root, HostSnapshot, MapResolver,
    UID_RANGE,
};
use serde_json::json;
use tokio::sync::Mutex;

/// One scenario at a time, so that each host check sees only its own sandboxes.
static SERIAL: Mutex<()> = Mutex::const_new(());

/// One attempt of the probe server started with `args`, with no secrets and no egress.
async fn probe_attempt(
    ex: &SandboxExecutor,
    args: &[&str],
    payload: serde_json::Value,
    timeout: Duration,
) -> Result<Execution, ExecError> {
    let rec = mcp_record("probe", &mcp_probe(), args);
    run(ex, &rec, payload, &BTreeMap::new(), &[], timeout).await
}

#[tokio::test]
async fn the_demo_mcp_server_runs_sandboxed_as_governed_tools() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let demo_fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/demo");
    let registry = registry_build::load(
        &registry_build::Sources::new()
            .records(demo_fixture.join("records"))
            .policies(demo_fixture.join("policies"))
            .workspace_root(workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let bin_dir = mcp_demo().parent().expect("a directory").to_path_buf();
    let ex = executor(MapResolver::default(), dir.path())
        .with_process_executor(ProcessExecutor::new().with_bin_dir(bin_dir));
    let ledger_path = dir.path().join("ledger.db");
    let rt = Runtime::builder(registry)
        .ledger(Arc::new(
            SqliteLedger::open(&ledger_path, Durability::Full).expect("ledger"),
        ))
        .executor(Arc::new(ex))
        .build()
        .expect("runtime");
    let agent = Principal::agent("researcher");

    let out = rt
        .dispatch(&agent, "word_count", json!({ "text": "a bb ccc" }))
        .await
        .expect("word_count");
    assert_eq!(
        out,
        json!({ "words": 3, "characters": 8, "longest": "ccc" })
    );
    let out = rt
        .dispatch(&agent, "lookup_city", json!({ "city": "Oslo" }))
        .await
        .expect("lookup_city");
    assert_eq!(out["country"], "Norway");

    // The tool's own error (`isError`) is a permanent failure, recorded, not retried.
    let err = rt
        .dispatch(&agent, "lookup_city", json!({ "city": "Atlantis" }))
        .await
        .expect_err("unknown city");
    let CallError::Failed { last_error, .. } = &err else {
        panic!("not a failure: {err:?}")
    };
    assert!(
        last_error.contains("unknown city `Atlantis`"),
        "{last_error}"
    );

    // Three calls, three sandboxes, all gone; the evidence names every outcome.
    host.assert_clean().await;
    let outcomes: Vec<_> = rt
        .ledger()
        .entries()
        .expect("entries")
        .into_iter()
        .filter_map(|e| match e.record {
            Record::Outcome(o) => Some(o),
            _ => None,
        })
        .collect();
    let results: Vec<CallResult> = outcomes.iter().map(|o| o.result).collect();
    assert_eq!(
        results,
        [CallResult::Ok, CallResult::Ok, CallResult::Failed]
    );
    assert_eq!(outcomes[2].attempts.len(), 1, "a tool error is not retried");
    assert_eq!(
        outcomes[2].attempts[0].error_class.as_deref(),
        Some("permanent")
    );
}

#[tokio::test]
async fn the_mcp_server_sees_only_its_sandbox() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let planted = dir.path().join("planted");
    std::fs::write(&planted, "host file").expect("plant");
    let outside = dir.path().join("escaped");
    let ex = executor(MapResolver::default(), dir.path());
    let mut rec = mcp_record("probe", &mcp_probe(), &[]);
    rec.secrets = vec!["T_SECRET".to_string()];
    // The executor passes only what the record declares.
    let secrets = BTreeMap::from([
        ("T_SECRET".to_string(), "mcp-s3cret".to_string()),
        ("OTHER_SECRET".to_string(), "undeclared".to_string()),
    ]);
    let payload = json!({
        "planted": planted.display().to_string(),
        "write_outside": outside.display().to_string(),
    });
    let report = run(&ex, &rec, payload, &secrets, &[], Duration::from_secs(20))
        .await
        .expect("the probe answers")
        .output;

    assert_eq!(report["hostname"], "escepine-sandbox", "{report}");
    assert_eq!(report["cwd"], "/workspace", "{report}");
    let pids: Vec<u64> = serde_json::from_value(report["pids"].clone()).expect("pids");
    assert!(pids.contains(&1) && pids.len() <= 3, "{pids:?}");
    assert!(!pids.contains(&u64::from(std::process::id())), "{pids:?}");
    assert_eq!(report["read_planted"], false, "{report}");
    assert_eq!(report["wrote_outside"], false, "{report}");
    assert!(!outside.exists());
    assert_eq!(report["wrote_workspace"], true, "{report}");
    // Uid 0 inside is an unprivileged outside uid.
    let map = report["uid_map"].as_str().expect("a uid map");
    let outside_uid: u32 = map
        .split_whitespace()
        .nth(1)
        .and_then(|u| u.parse().ok())
        .expect("the uid map's outside uid");
    assert!(UID_RANGE.contains(&outside_uid), "{map}");
    // The environment is the tool's: its secret is there, the host's variables are not.
    let env: Vec<String> = serde_json::from_value(report["env"].clone()).expect("env names");
    assert!(env.contains(&"T_SECRET".to_string()), "{env:?}");
    assert!(!env.contains(&"OTHER_SECRET".to_string()), "{env:?}");
    assert!(!env.contains(&"CARGO_MANIFEST_DIR".to_string()), "{env:?}");
    host.assert_clean().await;
}

#[tokio::test]
async fn a_silent_server_times_out_and_its_sandbox_is_destroyed() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let started = Instant::now();
    let err = probe_attempt(&ex, &["silent"], json!({}), Duration::from_millis(800))
        .await
        .expect_err("silent");
    assert!(matches!(err, ExecError::TimedOut(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    host.assert_clean().await;
}

#[tokio::test]
async fn exit_75_before_the_handshake_is_transient() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let err = probe_attempt(&ex, &["tempfail"], json!({}), Duration::from_secs(20))
        .await
        .expect_err("tempfail");
    assert!(err.is_transient(), "exit 75 is transient: {err:?}");
    let err = probe_attempt(&ex, &["no-such-mode"], json!({}), Duration::from_secs(20))
        .await
        .expect_err("exit 2");
    let ExecError::Permanent { message, stderr } = &err else {
        panic!("not permanent: {err:?}")
    };
    assert!(message.contains("exited with status 2"), "{message}");
    assert!(
        stderr.contains("unknown mode"),
        "stderr is kept: {stderr:?}"
    );
    host.assert_clean().await;
}

#[tokio::test]
async fn a_child_left_behind_dies_with_the_sandbox() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let payload = json!({ "planted": "/nonexistent", "write_outside": "/nonexistent/x" });
    let out = probe_attempt(&ex, &["linger"], payload, Duration::from_secs(20))
        .await
        .expect("the probe answers although a child lingers")
        .output;
    // The lingering child shows in the probe's own PID namespace …
    let pids: Vec<u64> = serde_json::from_value(out["pids"].clone()).expect("pids");
    assert!(pids.len() >= 3, "init, server and its child: {pids:?}");
    // … and is gone with the sandbox.
    host.assert_clean().await;
}
