//! The process executor against real processes (`escepine-testtool`, see
//! `escepine_testkit::testtool`).

use crate::support::host;
use crate::support::pin;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use escepine_contract::{Transport, ENV_CALL_ID, ENV_IDEMPOTENCY_KEY};
use escepine_registry::record::ResolvedCommand;
use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::executor::{ExecError, Execution, Executor, Invocation, ProcessExecutor};
use escepine_testkit::testtool::{testtool, testtool_builder, testtool_record, TESTTOOL};
use serde_json::{json, Value};

pub(crate) const HOST_SECRET: &str = "ESCEPINE_TEST_HOST_SECRET";

/// The testtool. [`HOST_SECRET`] is a host variable no tool may see, planted before any test
/// starts (`main.rs`).
fn tool() -> PathBuf {
    testtool()
}

async fn run_with(
    executor: &ProcessExecutor,
    record: &ToolRecord,
    payload: Value,
    secrets: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<Execution, ExecError> {
    let inv = Invocation {
        tool: record,
        payload: &payload,
        call_id: "call-0001",
        idempotency_key: "idem-0001",
        attempt: 1,
        timeout,
        secrets,
        scrubber: &escepine_runtime::scrub::Scrubber::new(secrets.values().map(String::as_str)),
        egress: &escepine_contract::EgressGrant::default(),
        files: &escepine_contract::WorkspaceFiles::new(),
        caller_token: None,
        trace: None,
    };
    executor.execute(inv).await
}

async fn run(record: &ToolRecord, payload: Value) -> Result<Execution, ExecError> {
    run_with(
        &ProcessExecutor::new(),
        record,
        payload,
        &BTreeMap::new(),
        Duration::from_secs(20),
    )
    .await
}

/// Whether `pid` is gone (or a zombie nobody reaped yet: dead all the same).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // pid (comm) S ...: the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

async fn wait_dead(pid: u32) -> bool {
    for _ in 0..50 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .expect("the tool wrote its grandchild's pid")
        .trim()
        .parse()
        .expect("a pid")
}

#[tokio::test]
async fn echo_round_trip() {
    let _host = host::shared().await;
    tool();
    let payload = json!({ "url": "https://example.com/a?b=c", "n": [1, 2.5, {"deep": null}] });
    let done = run(&testtool_record("echo_tool", "echo"), payload.clone())
        .await
        .expect("echo succeeds");
    assert_eq!(done.output, json!({ "echo": payload }));
    assert_eq!(done.stderr, "");
}

#[tokio::test]
async fn the_environment_holds_only_the_allowed_variables() {
    let _host = host::shared().await;
    tool();
    assert!(std::env::var_os("PATH").is_some());
    let record = testtool_builder("env_tool", "env")
        .secrets(["TEST_API_KEY"])
        .registered();
    let secrets = BTreeMap::from([
        ("TEST_API_KEY".to_string(), "s3cr3t-value".to_string()),
        ("UNDECLARED".to_string(), "not-for-this-tool".to_string()),
    ]);
    let done = run_with(
        &ProcessExecutor::new(),
        &record,
        json!({}),
        &secrets,
        Duration::from_secs(20),
    )
    .await
    .expect("env succeeds");
    let env = done.output["env"].as_object().expect("an env object");
    let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            ENV_CALL_ID,
            ENV_IDEMPOTENCY_KEY,
            "LANG",
            "PATH",
            "TEST_API_KEY"
        ]
    );
    assert_eq!(env[ENV_CALL_ID], "call-0001");
    assert_eq!(env[ENV_IDEMPOTENCY_KEY], "idem-0001");
    assert_eq!(env["TEST_API_KEY"], "s3cr3t-value");
    assert_eq!(env["LANG"], "C.UTF-8");
    assert_eq!(env["PATH"], escepine_runtime::executor::process::SAFE_PATH);
    assert!(!env.contains_key("HOME"));
    assert!(!env.contains_key(HOST_SECRET));
}

#[tokio::test]
async fn call_id_and_idempotency_key_reach_the_tool() {
    let _host = host::shared().await;
    tool();
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let done = run(
        &testtool_record("count_tool", "count"),
        json!({ "counter": counter }),
    )
    .await
    .expect("count succeeds");
    assert_eq!(done.output, json!({ "count": 1 }));
    assert_eq!(
        std::fs::read_to_string(&counter).expect("counter"),
        "call-0001 idem-0001\n"
    );
}

#[tokio::test]
async fn exit_75_is_transient() {
    let _host = host::shared().await;
    tool();
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let record = testtool_record("flaky_tool", "flaky");
    let payload = json!({ "counter": counter, "fail_times": 1 });
    let err = run(&record, payload.clone())
        .await
        .expect_err("the first attempt fails");
    assert!(err.is_transient(), "{err:?}");
    assert_eq!(err.class().as_str(), "transient");
    let ExecError::Transient { message, stderr } = &err else {
        panic!("not transient: {err:?}")
    };
    assert!(message.contains("75"), "{message}");
    assert!(stderr.contains("transient failure 1 of 1"), "{stderr}");
    let done = run(&record, payload).await.expect("the second succeeds");
    assert_eq!(done.output, json!({ "count": 2 }));
}

#[tokio::test]
async fn exit_1_is_permanent() {
    let _host = host::shared().await;
    tool();
    let err = run(&testtool_record("fail_tool", "fail"), json!({}))
        .await
        .expect_err("fail fails");
    let ExecError::Permanent { message, stderr } = &err else {
        panic!("not permanent: {err:?}")
    };
    assert!(!err.is_transient());
    assert!(message.contains("exited with status 1"), "{message}");
    assert!(stderr.contains("deliberate permanent failure"), "{stderr}");
}

#[tokio::test]
async fn a_signal_is_permanent_and_named() {
    let _host = host::shared().await;
    tool();
    let err = run(&testtool_record("abort_tool", "abort"), json!({}))
        .await
        .expect_err("abort fails");
    let ExecError::Permanent { message, .. } = &err else {
        panic!("not permanent: {err:?}")
    };
    assert!(message.contains("signal 6 (SIGABRT)"), "{message}");
}

#[tokio::test]
async fn garbage_on_stdout_is_a_protocol_violation() {
    let _host = host::shared().await;
    tool();
    let err = run(&testtool_record("garbage_tool", "garbage"), json!({}))
        .await
        .expect_err("garbage fails");
    assert!(matches!(err, ExecError::Protocol(_)), "{err:?}");
    assert_eq!(err.class().as_str(), "protocol");
    assert!(!err.is_transient());
}

#[tokio::test]
async fn an_undeclared_shape_is_left_to_the_output_gate() {
    let _host = host::shared().await;
    tool();
    let done = run(&testtool_record("bad_tool", "bad_output"), json!({}))
        .await
        .expect("one JSON value is the protocol's success");
    assert_eq!(done.output, json!({ "unexpected": true }));
}

#[tokio::test]
async fn stdout_beyond_the_bound_is_a_protocol_violation() {
    let _host = host::shared().await;
    tool();
    let executor = ProcessExecutor::new().with_stdout_limit(1024);
    let record = testtool_record("big_tool", "big");
    let err = run_with(
        &executor,
        &record,
        json!({ "bytes": 1 << 20 }),
        &BTreeMap::new(),
        Duration::from_secs(20),
    )
    .await
    .expect_err("too much output");
    let ExecError::Protocol(message) = &err else {
        panic!("not a protocol error: {err:?}")
    };
    assert!(message.contains("more than 1024 bytes"), "{message}");
    // Within the bound it is fine.
    let done = run_with(
        &executor,
        &record,
        json!({ "bytes": 100 }),
        &BTreeMap::new(),
        Duration::from_secs(20),
    )
    .await
    .expect("small output");
    assert_eq!(done.output["data"].as_str().map(str::len), Some(100));
}

#[tokio::test]
async fn stderr_is_bounded_and_the_rest_counted() {
    let _host = host::shared().await;
    tool();
    let total: usize = 1 << 20;
    let done = run(
        &testtool_record("noisy_tool", "noisy"),
        json!({ "stderr_bytes": total }),
    )
    .await
    .expect("noisy succeeds: its stderr is drained, never blocking it");
    assert_eq!(done.output, json!({ "noisy": total }));
    let kept = escepine_runtime::executor::process::DEFAULT_STDERR_LIMIT;
    assert!(done.stderr.starts_with(&"x".repeat(kept)));
    assert!(done.stderr.len() < kept + 100, "{}", done.stderr.len());
    let note = format!("[stderr truncated: {} more bytes not kept]", total - kept);
    assert!(done.stderr.ends_with(&note), "{}", &done.stderr[kept..]);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let _host = host::shared().await;
    tool();
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("grandchild.pid");
    let started = Instant::now();
    let err = run_with(
        &ProcessExecutor::new(),
        &testtool_record("sleep_tool", "sleep"),
        json!({ "ms": 60_000, "pidfile": pidfile }),
        &BTreeMap::new(),
        Duration::from_millis(1500),
    )
    .await
    .expect_err("the attempt times out");
    assert_eq!(err, ExecError::TimedOut(Duration::from_millis(1500)));
    assert!(err.is_transient());
    assert!(started.elapsed() < Duration::from_secs(10));
    let grandchild = read_pid(&pidfile);
    assert!(
        wait_dead(grandchild).await,
        "the grandchild {grandchild} outlived the timeout"
    );
}

#[tokio::test]
async fn leftovers_die_when_the_tool_exits() {
    let _host = host::shared().await;
    tool();
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("grandchild.pid");
    let started = Instant::now();
    // The grandchild holds the stdout and stderr pipes open; the attempt still ends promptly.
    let done = run(
        &testtool_record("sleep_tool", "sleep"),
        json!({ "ms": 50, "pidfile": pidfile }),
    )
    .await
    .expect("sleep succeeds");
    assert_eq!(done.output, json!({ "slept": 50 }));
    assert!(started.elapsed() < Duration::from_secs(10));
    let grandchild = read_pid(&pidfile);
    assert!(
        wait_dead(grandchild).await,
        "the grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn dropping_the_attempt_kills_the_group() {
    let _host = host::shared().await;
    tool();
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("grandchild.pid");
    let executor = ProcessExecutor::new();
    let record = testtool_record("sleep_tool", "sleep");
    let cancelled = tokio::time::timeout(
        Duration::from_millis(1500),
        run_with(
            &executor,
            &record,
            json!({ "ms": 60_000, "pidfile": pidfile }),
            &BTreeMap::new(),
            Duration::from_secs(60),
        ),
    )
    .await;
    assert!(cancelled.is_err(), "the outer timeout drops the attempt");
    let grandchild = read_pid(&pidfile);
    assert!(
        wait_dead(grandchild).await,
        "the grandchild {grandchild} outlived the dropped attempt"
    );
}

#[tokio::test]
async fn a_digest_mismatch_refuses_before_running() {
    let _host = host::shared().await;
    tool();
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let wrong = "0".repeat(64);
    let record = testtool_builder("count_tool", "count")
        .sha256(&wrong)
        .registered();
    let err = run(&record, json!({ "counter": counter }))
        .await
        .expect_err("refused");
    let ExecError::Spawn(message) = &err else {
        panic!("not a spawn error: {err:?}")
    };
    let actual = sha256_of(&tool());
    assert!(message.contains(&wrong), "{message}");
    assert!(message.contains(&actual), "{message}");
    assert!(!counter.exists(), "the tool ran");

    let record = testtool_builder("count_tool", "count")
        .sha256(&actual)
        .registered();
    let done = run(&record, json!({ "counter": counter }))
        .await
        .expect("the right digest runs");
    assert_eq!(done.output, json!({ "count": 1 }));
}

fn sha256_of(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(
        std::fs::read(path).expect("read the testtool"),
    ))
}

#[tokio::test]
async fn workspace_binaries_are_found_beside_the_executable_or_in_a_configured_dir() {
    let _host = host::shared().await;
    let path = tool();
    let record = testtool_builder("echo_tool", "echo")
        .command(TESTTOOL)
        .workspace_bin(TESTTOOL)
        .registered();
    assert_eq!(
        record.endpoint().resolved,
        ResolvedCommand::WorkspaceBin(TESTTOOL.into())
    );
    // target/<profile>/deps/<test> finds target/<profile>/escepine-testtool.
    if std::env::var_os("ESCEPINE_TESTTOOL").is_none() {
        let done = run(&record, json!({ "a": 1 })).await.expect("found");
        assert_eq!(done.output, json!({ "echo": { "a": 1 } }));
    }
    let dir = path.parent().expect("the testtool's directory");
    let executor = ProcessExecutor::new()
        .with_bin_dir("/nonexistent")
        .with_bin_dir(dir);
    let done = run_with(
        &executor,
        &record,
        json!({ "a": 2 }),
        &BTreeMap::new(),
        Duration::from_secs(20),
    )
    .await
    .expect("found in the configured dir");
    assert_eq!(done.output, json!({ "echo": { "a": 2 } }));

    let record = testtool_builder("echo_tool", "echo")
        .command("escepine-no-such-bin")
        .workspace_bin("escepine-no-such-bin")
        .registered();
    let err = run(&record, json!({})).await.expect_err("not built");
    let ExecError::Spawn(message) = &err else {
        panic!("not a spawn error: {err:?}")
    };
    assert!(message.contains("escepine-no-such-bin"), "{message}");
    assert!(message.contains("not built"), "{message}");
}

#[tokio::test]
async fn a_missing_binary_is_a_spawn_error() {
    let _host = host::shared().await;
    tool();
    // Registered while it existed, gone by the call.
    let dir = tempfile::tempdir().expect("tempdir");
    let gone = dir.path().join("escepine-gone");
    std::fs::copy(tool(), &gone).expect("copy the testtool");
    let record = testtool_builder("gone_tool", "echo")
        .binary(&gone)
        .registered();
    assert_eq!(
        record.endpoint().resolved,
        ResolvedCommand::Path(gone.clone())
    );
    std::fs::remove_file(&gone).expect("remove the copy");
    let err = run(&record, json!({})).await.expect_err("missing");
    assert!(matches!(err, ExecError::Spawn(_)), "{err:?}");
    assert_eq!(err.class().as_str(), "spawn");
}

#[tokio::test]
async fn an_mcp_stdio_endpoint_that_is_not_an_mcp_server_fails_cleanly() {
    let _host = host::shared().await;
    tool();
    // A binary that exits at once instead of answering the MCP handshake: the transport must
    // report a failure promptly, never an output.
    let record = RecordBuilder::new("mcp_tool")
        .transport(Transport::McpStdio)
        .binary(Path::new("/bin/false"))
        .registered();
    let err = run(&record, json!({}))
        .await
        .expect_err("echo is not an MCP server");
    assert!(
        !err.is_transient() || matches!(err, ExecError::TimedOut(_)),
        "{err:?}"
    );
}

#[tokio::test]
async fn declared_secrets_reach_the_tool_and_reserved_names_are_refused() {
    let _host = host::shared().await;
    tool();
    let record = testtool_builder("secret_tool", "secret")
        .secrets(["TEST_API_KEY"])
        .registered();
    // Not provided: left unset, the tool decides.
    let done = run(&record, json!({ "name": "TEST_API_KEY" }))
        .await
        .expect("the tool runs without it");
    assert_eq!(done.output, json!({ "leak": "" }));

    let secrets = BTreeMap::from([("TEST_API_KEY".to_string(), "s3cr3t-value".to_string())]);
    let err = run_with(
        &ProcessExecutor::new(),
        &record,
        json!({ "name": "TEST_API_KEY", "fail": true }),
        &secrets,
        Duration::from_secs(20),
    )
    .await
    .expect_err("fails on purpose");
    // The tool had the value (it printed it), and the executor scrubbed the stderr it kept
    // before cutting it to its bound.
    assert!(
        err.stderr()
            .contains("the value of TEST_API_KEY is [REDACTED]"),
        "{err:?}"
    );
    assert!(!err.stderr().contains("s3cr3t-value"), "{err:?}");

    let record = testtool_builder("secret_tool", "secret")
        .secrets(["PATH"])
        .registered();
    let secrets = BTreeMap::from([("PATH".to_string(), "/evil".to_string())]);
    let err = run_with(
        &ProcessExecutor::new(),
        &record,
        json!({ "name": "PATH" }),
        &secrets,
        Duration::from_secs(20),
    )
    .await
    .expect_err("a secret may not replace PATH");
    let ExecError::Spawn(message) = &err else {
        panic!("not a spawn error: {err:?}")
    };
    assert!(message.contains("`PATH`"), "{message}");
}

#[tokio::test]
async fn many_attempts_run_concurrently() {
    let _host = host::shared().await;
    tool();
    let executor = ProcessExecutor::new();
    let record = testtool_record("echo_tool", "echo");
    let secrets = BTreeMap::new();
    let calls = (0..16).map(|i| {
        run_with(
            &executor,
            &record,
            json!({ "i": i }),
            &secrets,
            Duration::from_secs(30),
        )
    });
    let results = futures::future::join_all(calls).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r.expect("echo").output, json!({ "echo": { "i": i } }));
    }
}

#[tokio::test]
async fn a_pinned_tool_runs_only_its_pinned_content_while_its_path_is_swapped() {
    let _host = host::shared().await;
    tool();
    let race = pin::PinRace::start();
    let record = RecordBuilder::new("pinned_script")
        .binary(race.path())
        .sha256(race.digest())
        .registered();
    let executor = ProcessExecutor::new();
    let mut outcomes = pin::Outcomes::default();
    // Bounded: at least 300 calls, then until both outcomes were seen a few times, at most
    // 2000.
    for i in 0..2000 {
        if outcomes.enough(i, 300) {
            break;
        }
        outcomes.count(
            run_with(
                &executor,
                &record,
                json!({}),
                &BTreeMap::new(),
                Duration::from_secs(20),
            )
            .await,
        );
    }
    outcomes.assert_raced(race.stop());
}
