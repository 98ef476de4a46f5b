//! The governed path's scenarios (`tests/fixtures/path`) through the sandbox executor, and the
//! secrets end to end: a declared secret is visible inside, an undeclared one and the host's
//! environment are not, and no secret reaches the ledger, the logs or the caller.

use crate::support::fixtures;
use crate::support::{host, logs};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::support::sandbox::*;
use escepine_contract::Principal;
use escepine_ledger::entry::Entry;
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::record::{CallResult, Record};
use escepine_runtime::executor::ProcessExecutor;
use escepine_runtime::secrets::MapSecrets;
use escepine_runtime::{CallKind, NoOutput, Runtime};
use serde_json::{json, Value};

const SECRET: &str = "sandboxed-s3cret-VALUE";
const UNDECLARED: &str = "undeclared-s3cret-VALUE";
pub(crate) const HOST_VAR: &str = "ESCEPINE_GOVERNED_HOST_VAR";

struct Fixture {
    runtime: Runtime,
    _run_dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let run_dir = tempfile::tempdir().unwrap();
        let tool = testtool();
        let ex = executor(MapResolver::default(), run_dir.path())
            .with_process_executor(ProcessExecutor::new().with_bin_dir(tool.parent().unwrap()));
        let secrets = MapSecrets(BTreeMap::from([
            ("T_SECRET".to_string(), SECRET.to_string()),
            ("OTHER_SECRET".to_string(), UNDECLARED.to_string()),
        ]));
        let runtime = Runtime::builder(fixtures::registry("path"))
            .ledger(Arc::new(MemoryLedger::new()))
            .executor(Arc::new(ex))
            .secrets(Arc::new(secrets))
            .build()
            .unwrap();
        Self {
            runtime,
            _run_dir: run_dir,
        }
    }

    async fn call(&self, who: &str, tool: &str, payload: Value) -> Result<Value, NoOutput> {
        self.runtime
            .dispatch(&Principal::agent(who), tool, payload)
            .await
    }

    fn entries(&self) -> Vec<Entry> {
        self.runtime.ledger().entries().unwrap()
    }
}

fn outcomes(entries: &[Entry]) -> Vec<escepine_ledger::record::Outcome> {
    entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Outcome(o) => Some(o.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn allowed_calls_run_each_in_a_fresh_workspace() {
    let _host = host::shared().await;
    let f = Fixture::new();
    // The counter file lives in the sandbox's workspace: every call starts from nothing.
    for _ in 0..2 {
        let out = f
            .call("alice", "t_count", json!({"counter": "/workspace/counter"}))
            .await
            .unwrap();
        assert_eq!(out, json!({"count": 1}));
    }
    // A host path is not writable from inside.
    let host_file = tempfile::tempdir().unwrap();
    let counter = host_file.path().join("counter");
    let err = f
        .call("alice", "t_count", json!({"counter": counter}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallKind::Failed, "{err}");
    assert!(!counter.exists());
}

#[tokio::test]
async fn denied_failed_flaky_and_bad_output_calls_behave_as_on_the_process_executor() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let err = f
        .call("mallory", "t_count", json!({"counter": "/workspace/c"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallKind::Denied, "{err}");

    let err = f
        .call("alice", "t_fail", json!({"counter": "/workspace/c"}))
        .await
        .unwrap_err();
    assert!(
        err.kind() == CallKind::Failed && err.report().map(|r| r.attempts()) == Some(1),
        "{err}"
    );

    // Each attempt gets a fresh sandbox, so a tool failing its first run fails every attempt:
    // retried exactly up to the budget.
    let err = f
        .call(
            "alice",
            "t_flaky",
            json!({"counter": "/workspace/c", "fail_times": 1}),
        )
        .await
        .unwrap_err();
    assert!(
        err.kind() == CallKind::Failed && err.report().map(|r| r.attempts()) == Some(3),
        "{err}"
    );

    let err = f
        .call("alice", "t_bad_output", json!({"counter": "/workspace/c"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallKind::OutputRejected, "{err}");

    let results: Vec<CallResult> = outcomes(&f.entries()).iter().map(|o| o.result).collect();
    assert_eq!(
        results,
        [
            CallResult::Denied,
            CallResult::Failed,
            CallResult::Failed,
            CallResult::OutputRejected
        ]
    );
    let flaky = &outcomes(&f.entries())[2];
    assert!(flaky
        .attempts
        .iter()
        .all(|a| a.error_class.map(|c| c.as_str()) == Some("transient")));
}

#[tokio::test]
async fn a_secret_straddling_the_stderr_bound_is_not_half_kept() {
    let _host = host::shared().await;
    use escepine_runtime::executor::process::DEFAULT_STDERR_LIMIT;
    let f = Fixture::new();
    let straddles = [1, 9, 10, SECRET.len() - 1];
    for straddle in straddles {
        // The secret starts `straddle` bytes before the sandbox backend's stderr bound.
        let pad = DEFAULT_STDERR_LIMIT - straddle;
        let err = f
            .call(
                "alice",
                "t_secret",
                json!({"name": "T_SECRET", "pad": pad, "fail": true}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallKind::Failed, "{err:?}");
    }
    let padded: Vec<String> = outcomes(&f.entries())
        .into_iter()
        .flat_map(|o| o.attempts)
        .filter_map(|a| a.stderr)
        .filter(|s| s.starts_with("xxxx"))
        .collect();
    assert_eq!(padded.len(), straddles.len());
    for stderr in padded {
        // Right after the padding: the marker, or the truncation note — no part of the secret.
        let rest = stderr.trim_start_matches('x');
        assert!(
            rest.starts_with("[REDACTED]") || rest.starts_with("\n[stderr truncated"),
            "{}",
            &rest[..rest.len().min(40)]
        );
    }
}

#[tokio::test]
async fn declared_secrets_only_and_never_recorded_or_returned() {
    let _host = host::shared().await;
    let logs = logs::capture();
    let f = Fixture::new();
    // Declared: the tool sees it (the output says so, scrubbed before the gate).
    let out = f
        .call("alice", "t_secret", json!({"name": "T_SECRET"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"leak": "[REDACTED]"}));
    // Undeclared, or any other host variable: not in the sandbox.
    let out = f
        .call("alice", "t_secret", json!({"name": "OTHER_SECRET"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"leak": ""}));
    let out = f
        .call("alice", "t_secret", json!({"name": HOST_VAR}))
        .await
        .unwrap();
    assert_eq!(out, json!({"leak": ""}));
    // On a failure, in the message and on stderr.
    let err = f
        .call(
            "alice",
            "t_secret",
            json!({"name": "T_SECRET", "fail": true}),
        )
        .await
        .unwrap_err();
    assert!(!err.to_string().contains(SECRET), "{err}");
    for e in f.entries() {
        let text = serde_json::to_string(&e.record).unwrap();
        assert!(
            !text.contains(SECRET),
            "the ledger holds the secret: {text}"
        );
        assert!(
            !text.contains(UNDECLARED),
            "the ledger holds the other secret"
        );
    }
    let logged = logs.text();
    assert!(
        logged.contains("execute_tool"),
        "spans are logged: {logged}"
    );
    assert!(!logged.contains(SECRET), "the logs hold the secret");
    assert!(
        !logged.contains(UNDECLARED),
        "the logs hold the other secret"
    );
}
