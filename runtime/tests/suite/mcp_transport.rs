//! The `mcp-stdio` transport: the workspace's MCP server (`escepine-mcp-demo`, written with
//! rmcp) runs as governed tools through [`Runtime`] — real processes, a SQLite ledger, the
//! records and policies of `tests/fixtures/mcp/demo` — and the transport's failure classes on
//! servers that misbehave.

use crate::support::host;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use escepine_contract::{Principal, RetryPolicy, Transport};
use escepine_ledger::record::{CallResult, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::Durability;
use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::executor::process::ProcessExecutor;
use escepine_runtime::executor::{ExecError, Executor, Invocation};
use escepine_runtime::secrets::MapSecrets;
use escepine_runtime::{CallError, CallOutcome, NoOutput, Runtime};
use serde_json::{json, Value};

use escepine_testkit::bins::workspace_root;
use escepine_testkit::mcp::{demo_server, fixture, probe_server};

fn runtime(dir: &std::path::Path) -> Runtime {
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(fixture("demo/records"))
            .policies(fixture("demo/policies"))
            .workspace_root(workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let bin_dir = demo_server().parent().expect("a directory").to_path_buf();
    Runtime::builder(registry)
        .ledger(Arc::new(
            SqliteLedger::open(dir.join("ledger.db"), Durability::Full).expect("ledger"),
        ))
        .executor(Arc::new(ProcessExecutor::new().with_bin_dir(bin_dir)))
        .build()
        .expect("runtime")
}

fn agent() -> Principal {
    Principal::agent("researcher")
}

#[tokio::test]
async fn the_demo_mcp_server_runs_as_governed_tools() {
    let _host = host::shared().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = runtime(dir.path());

    // `word_count` is the MCP tool `word-count`: the transport maps the name.
    let out = rt
        .dispatch(&agent(), "word_count", json!({ "text": "a bb ccc" }))
        .await
        .expect("word_count");
    assert_eq!(
        out,
        json!({ "words": 3, "characters": 8, "longest": "ccc" })
    );

    // The server answers `"longest": null`; null for an optional output property is absent.
    let out = rt
        .dispatch(&agent(), "word_count", json!({ "text": "" }))
        .await
        .expect("empty text");
    assert_eq!(out, json!({ "words": 0, "characters": 0 }));

    let out = rt
        .dispatch(&agent(), "lookup_city", json!({ "city": "Oslo" }))
        .await
        .expect("lookup_city");
    assert_eq!(out["country"], "Norway");

    let first = rt
        .dispatch(&agent(), "set_label", json!({ "key": "k", "value": "v" }))
        .await
        .expect("set_label");
    let again = rt
        .dispatch(&agent(), "set_label", json!({ "key": "k", "value": "v" }))
        .await
        .expect("set_label again");
    assert_eq!(first, again, "a supersede write: same value, same revision");

    // A tool error (`isError: true`) is a permanent failure, recorded, not retried.
    let err = rt
        .dispatch(&agent(), "lookup_city", json!({ "city": "Atlantis" }))
        .await
        .expect_err("unknown city");
    let Some(CallOutcome::Failed { last_error }) = err.outcome() else {
        panic!("not a failure: {err:?}")
    };
    assert_eq!(err.report().map(|r| r.attempts()), Some(1));
    assert!(
        last_error.contains("unknown city `Atlantis`"),
        "{last_error}"
    );

    // The gates and Cedar stand in front of the server as for any tool.
    let err = rt
        .dispatch(
            &agent(),
            "lookup_city",
            json!({ "city": "Oslo", "api_key": "k" }),
        )
        .await
        .expect_err("unknown field");
    assert!(
        matches!(err, NoOutput::Refused(CallError::InputRejected(_))),
        "{err:?}"
    );
    let err = rt
        .dispatch(
            &Principal::agent("mallory"),
            "word_count",
            json!({ "text": "x" }),
        )
        .await
        .expect_err("mallory");
    let Some(CallOutcome::Denied { policy_ids, .. }) = err.outcome() else {
        panic!("not a denial: {err:?}")
    };
    assert_eq!(policy_ids, &["forbid-mallory".to_string()]);

    // Evidence: an intent and an outcome per call; the failure's class is `permanent`.
    let entries = rt.ledger().entries().expect("entries");
    let outcomes: Vec<_> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Outcome(o) => Some(o),
            _ => None,
        })
        .collect();
    // Seven calls reached Cedar (the rejected input did not): five ok, one failed, one denied.
    assert_eq!(outcomes.len(), 7);
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| o.result == CallResult::Ok)
            .count(),
        5
    );
    let failed = outcomes
        .iter()
        .find(|o| o.result == CallResult::Failed)
        .expect("the failed call");
    assert_eq!(
        failed.attempts[0].error_class.map(|c| c.as_str()),
        Some("permanent")
    );
}

const SECRET: &str = "sup3r-s3cret-V4LUE";

/// The record of `escepine-mcp-probe`'s tool `leak`, which is given `T_SECRET`.
const LEAK_RECORD: &str = r#"{
  "tool_id": "leak",
  "version": "1.0.0",
  "description": "Fail with a secret at a chosen offset of the error text.",
  "input_schema": {
    "type": "object",
    "additionalProperties": false,
    "required": ["name", "pad"],
    "properties": {
      "name": {"type": "string"},
      "pad": {"type": "integer", "minimum": 0}
    }
  },
  "output_schema": {"type": "object", "additionalProperties": false},
  "side_effect_class": "read-only",
  "accepts_credentials": false,
  "timeout_ms": 10000,
  "retry": {"max_attempts": 1, "backoff_ms": 0},
  "on_failure": ["halt"],
  "endpoint": {"transport": "mcp-stdio", "command": "escepine-mcp-probe"},
  "auth": {"secrets": ["T_SECRET"]},
  "sandbox_profile": {"egress": [], "filesystem": "workspace"}
}"#;

#[tokio::test]
async fn a_secret_straddling_the_error_text_bound_is_not_half_kept() {
    let _host = host::shared().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let records = dir.path().join("records");
    std::fs::create_dir(&records).expect("records dir");
    std::fs::write(records.join("leak.json"), LEAK_RECORD).expect("record");
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(&records)
            .policies(fixture("policies-open"))
            .workspace_root(workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let bin_dir = probe_server().parent().expect("a directory").to_path_buf();
    let secrets = MapSecrets(BTreeMap::from([(
        "T_SECRET".to_string(),
        SECRET.to_string(),
    )]));
    let rt = Runtime::builder(registry)
        .ledger(Arc::new(
            SqliteLedger::open(dir.path().join("ledger.db"), Durability::Full).expect("ledger"),
        ))
        .executor(Arc::new(ProcessExecutor::new().with_bin_dir(bin_dir)))
        .secrets(Arc::new(secrets))
        .build()
        .expect("runtime");
    // The error text is kept to 4096 bytes; the secret starts `straddle` bytes before that.
    for straddle in [1, 4, 9, 10, SECRET.len() - 1] {
        let err = rt
            .dispatch(
                &agent(),
                "leak",
                json!({ "name": "T_SECRET", "pad": 4096 - straddle }),
            )
            .await
            .expect_err("leak fails");
        let Some(CallOutcome::Failed { last_error }) = err.outcome() else {
            panic!("not a failure: {err:?}")
        };
        let after = last_error.rfind('x').map_or("", |at| &last_error[at + 1..]);
        assert!(
            after == " […]" || after.starts_with("[REDACTED]"),
            "{straddle}: the error text ends {after:?}"
        );
    }
    drop(rt);
    let bytes = std::fs::read(dir.path().join("ledger.db")).expect("ledger file");
    let needle = format!("xxxx{}", &SECRET[..4]);
    assert!(
        !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
        "the ledger holds the start of the secret"
    );
}

/// A record speaking `mcp-stdio` to `command args…`.
fn record(
    tool_id: &str,
    command: PathBuf,
    args: &[&str],
    timeout_ms: u64,
    attempts: u32,
) -> ToolRecord {
    RecordBuilder::new(tool_id)
        .description("test")
        .timeout_ms(timeout_ms)
        .retry(RetryPolicy {
            max_attempts: attempts,
            backoff_ms: 0,
        })
        .transport(Transport::McpStdio)
        .binary(&command)
        .args(args)
        .registered()
}

async fn attempt(record: &ToolRecord, payload: Value) -> Result<Value, ExecError> {
    let secrets = BTreeMap::new();
    ProcessExecutor::new()
        .execute(Invocation {
            tool: record,
            payload: &payload,
            call_id: "call-1",
            idempotency_key: "key-1",
            attempt: 1,
            timeout: Duration::from_millis(record.timeout_ms()),
            secrets: &secrets,
            scrubber: &escepine_runtime::scrub::Scrubber::new(secrets.values().map(String::as_str)),
            egress: &escepine_contract::EgressGrant::default(),
            files: &escepine_contract::WorkspaceFiles::new(),
            caller_token: None,
            trace: None,
        })
        .await
        .map(|e| e.output)
}

#[tokio::test]
async fn an_exact_tool_name_is_called_and_a_missing_one_is_a_permanent_failure() {
    let _host = host::shared().await;
    let exact = record("lookup_city", demo_server(), &[], 10_000, 1);
    let out = attempt(&exact, json!({ "city": "kyoto" }))
        .await
        .expect("call");
    assert_eq!(out["city"], "Kyoto");

    let missing = record("no_such_tool", demo_server(), &[], 10_000, 1);
    let err = attempt(&missing, json!({})).await.expect_err("missing");
    let ExecError::Permanent { message, .. } = &err else {
        panic!("not permanent: {err:?}")
    };
    assert!(
        message.contains("offers no tool `no_such_tool`"),
        "{message}"
    );
    assert!(
        message.contains("word-count"),
        "names what it offers: {message}"
    );
}

#[tokio::test]
async fn a_server_that_dies_before_answering_is_permanent_or_transient_by_its_status() {
    let _host = host::shared().await;
    let sh = PathBuf::from("/bin/sh");
    let err = attempt(
        &record(
            "dies",
            sh.clone(),
            &["-c", "echo broken >&2; exit 3"],
            10_000,
            1,
        ),
        json!({}),
    )
    .await
    .expect_err("dies");
    let ExecError::Permanent { message, stderr } = &err else {
        panic!("not permanent: {err:?}")
    };
    assert!(message.contains("exited with status 3"), "{message}");
    assert!(stderr.contains("broken"), "stderr is kept: {stderr:?}");

    let err = attempt(
        &record("tempfail", sh, &["-c", "exit 75"], 10_000, 1),
        json!({}),
    )
    .await
    .expect_err("tempfail");
    assert!(err.is_transient(), "exit 75 is transient: {err:?}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_its_group_is_killed() {
    let _host = host::shared().await;
    // `sleep` as an MCP server: it never answers `initialize`.
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let started = std::time::Instant::now();
    let err = attempt(
        &record("silent", PathBuf::from("/bin/sh"), &["-c", &script], 500, 1),
        json!({}),
    )
    .await
    .expect_err("silent");
    assert!(matches!(err, ExecError::TimedOut(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("pid written")
        .trim()
        .parse()
        .expect("a pid");
    // Killed (and reaped): no such process any more.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "process {pid} survived its timeout"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn the_payload_must_be_an_object() {
    let _host = host::shared().await;
    let rec = record("lookup_city", demo_server(), &[], 10_000, 1);
    let err = attempt(&rec, json!([1])).await.expect_err("array");
    assert!(matches!(err, ExecError::Protocol(_)), "{err:?}");
}

/// The Python server that dies at start: a traceback on stderr, exit 1.
fn py_dies() -> PathBuf {
    fixture("py/dies.py")
}

/// A record file for `py_dies` speaking `transport`, in `dir`.
fn dies_record(dir: &std::path::Path, tool_id: &str, transport: &str) {
    let record = json!({
        "tool_id": tool_id,
        "version": "1.0.0",
        "description": "Dies at start.",
        "input_schema": {"type": "object", "additionalProperties": false, "properties": {}},
        "output_schema": {"type": "object", "additionalProperties": false, "properties": {}},
        "side_effect_class": "read-only",
        "accepts_credentials": false,
        "timeout_ms": 10_000,
        "retry": {"max_attempts": 1, "backoff_ms": 0},
        "on_failure": ["halt"],
        "endpoint": {"transport": transport, "command": py_dies().display().to_string()},
        "auth": {"secrets": []},
        "sandbox_profile": {"egress": [], "filesystem": "workspace"}
    });
    std::fs::write(
        dir.join(format!("{tool_id}.json")),
        serde_json::to_string_pretty(&record).expect("JSON"),
    )
    .expect("write record");
}

#[tokio::test]
async fn a_server_exiting_before_it_answers_names_its_stderr_in_the_error_and_the_ledger() {
    let _host = host::shared().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (records, policies) = (dir.path().join("records"), dir.path().join("policies"));
    std::fs::create_dir(&records).expect("mkdir");
    std::fs::create_dir(&policies).expect("mkdir");
    std::fs::write(
        policies.join("all.cedar"),
        "permit(principal, action, resource);\n",
    )
    .expect("policy");
    dies_record(&records, "dies_mcp", "mcp-stdio");
    dies_record(&records, "dies_json", "stdio-json");
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(&records)
            .policies(&policies),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let rt = Runtime::builder(registry)
        .ledger(Arc::new(
            SqliteLedger::open(dir.path().join("ledger.db"), Durability::Full).expect("ledger"),
        ))
        .executor(Arc::new(ProcessExecutor::new()))
        .build()
        .expect("runtime");
    let why = "ModuleNotFoundError: No module named 'mcp_not_installed'";
    for (tool, ended) in [
        (
            "dies_mcp",
            "did not answer (initialize: connection closed); it exited with status 1",
        ),
        ("dies_json", "exited with status 1"),
    ] {
        let err = rt
            .dispatch(&agent(), tool, json!({}))
            .await
            .expect_err(tool);
        let Some(CallOutcome::Failed { last_error }) = err.outcome() else {
            panic!("{tool}: not a failure: {err:?}")
        };
        assert!(last_error.contains(ended), "{tool}: {last_error}");
        assert!(
            last_error.contains("its stderr ends: ") && last_error.contains(why),
            "{tool}: the error says why: {last_error}"
        );
    }
    let attempts: Vec<_> = rt
        .ledger()
        .entries()
        .expect("entries")
        .into_iter()
        .filter_map(|e| match e.record {
            Record::Outcome(o) => Some(o.attempts),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(attempts.len(), 2);
    for a in &attempts {
        assert!(a.error.as_deref().is_some_and(|e| e.contains(why)), "{a:?}");
        assert!(
            a.stderr
                .as_deref()
                .is_some_and(|s| s.contains("Traceback") && s.contains(why)),
            "the whole stderr is recorded: {a:?}"
        );
    }
}
