//! The tool host's tools on the governed path: the registry is loaded from the host's own
//! `--describe` output (every registration rule, Cedar strict validation of
//! `tools/rust-tools/policies`, the catalog's envelope), and the Rust-first `text_stats` and the
//! record-first `url_normalize` run through the real runtime — input gate, Cedar, ledger, one
//! `escepine-rust-tools <tool id>` process per attempt over `stdio-json`, output gate — like any
//! other tool.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use escepine_contract::Principal;
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::record::{CallResult, Record};
use escepine_policy::BoundRegistry;
use escepine_registry::registry::Sources;
use escepine_runtime::executor::process::ProcessExecutor;
use escepine_runtime::{CallError, CallKind, CallOptions, CallOutcome, NoOutput, Runtime};
use serde_json::{json, Value};

/// The tool host binary cargo built for these tests.
const HOST: &str = env!("CARGO_BIN_EXE_escepine-rust-tools");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// `escepine-rust-tools --describe --out <dir>/records`.
fn describe(dir: &Path) -> PathBuf {
    let out = dir.join("records");
    let result = Command::new(HOST)
        .args(["--describe", "--out"])
        .arg(&out)
        .output()
        .expect("run the tool host");
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    out
}

fn load(records: &Path, policies: &Path) -> BoundRegistry {
    let ws = workspace();
    escepine_policy::load(
        &Sources::new()
            .records(records)
            .policies(policies)
            .envelope(ws.join("tools/envelope.json"))
            .workspace_root(&ws),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}

struct Fixture {
    _dir: tempfile::TempDir,
    runtime: Runtime,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let records = describe(dir.path());
        let registry = load(&records, &workspace().join("tools/rust-tools/policies"));
        let bin_dir = Path::new(HOST).parent().expect("the binary's directory");
        let runtime = Runtime::builder(registry)
            .ledger(Arc::new(MemoryLedger::new()))
            .executor(Arc::new(ProcessExecutor::new().with_bin_dir(bin_dir)))
            .build()
            .expect("the runtime");
        Self { _dir: dir, runtime }
    }

    async fn call(&self, tool: &str, payload: Value) -> Result<Value, NoOutput> {
        self.runtime
            .call(
                &Principal::agent("alice"),
                tool,
                payload,
                CallOptions::default(),
            )
            .await?
            .into_output()
    }

    fn records(&self) -> Vec<Record> {
        self.runtime
            .ledger()
            .entries()
            .expect("the ledger")
            .into_iter()
            .map(|e| e.record)
            .collect()
    }
}

#[test]
fn describe_output_passes_escepine_check() {
    let dir = tempfile::tempdir().unwrap();
    let records = describe(dir.path());
    let ws = workspace();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = escepine_cli::run(
        [
            "escepine",
            "check",
            "--records",
            records.to_str().unwrap(),
            "--policies",
            ws.join("tools/rust-tools/policies").to_str().unwrap(),
            "--envelope",
            ws.join("tools/envelope.json").to_str().unwrap(),
        ],
        &mut escepine_cli::Io {
            out: &mut out,
            err: &mut err,
        },
    );
    let (out, err) = (String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("2 tools"), "{out}");
    assert!(out.contains("text_stats, url_normalize"), "{out}");
}

#[test]
fn the_record_first_tool_is_registered_as_its_json_record() {
    // What the host describes for `url_normalize` registers exactly as the record it
    // implements: nothing distinguishes the macro tool from the record.
    let dir = tempfile::tempdir().unwrap();
    let described = load(
        &describe(dir.path()),
        &workspace().join("tools/rust-tools/policies"),
    );
    let catalog = load(
        &workspace().join("tools/records/url_normalize.json"),
        &workspace().join("tools/rust-tools/policies"),
    );
    let a = described.get("url_normalize").unwrap();
    let b = catalog.get("url_normalize").unwrap();
    // Every field but the file each came from: the canonical JSON, and how the endpoint
    // resolved (which the JSON does not hold).
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(a.endpoint(), b.endpoint());
}

#[tokio::test]
async fn both_tools_run_through_the_governed_path() {
    let f = Fixture::new();

    let stats = f
        .call(
            "text_stats",
            json!({"text": "the cat and the hat\nthe end", "top_words": 1}),
        )
        .await
        .unwrap();
    assert_eq!(
        stats,
        json!({"characters": 27, "words": 7, "lines": 2,
               "top_words": [{"word": "the", "count": 3}]})
    );

    let url = f
        .call(
            "url_normalize",
            json!({"url": "HTTPS://Example.COM:443/a/./b/../c?z=1&a=2#top"}),
        )
        .await
        .unwrap();
    assert_eq!(
        url,
        json!({"url": "https://example.com/a/c?a=2&z=1", "scheme": "https",
               "host": "example.com", "path": "/a/c"})
    );

    // Each call: an intent (allowed by the crate's policy) before an outcome, one attempt.
    let records = f.records();
    let intents: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Intent(i) => Some(i),
            _ => None,
        })
        .collect();
    assert_eq!(
        intents
            .iter()
            .map(|i| (i.tool_id.as_str(), i.decision.as_str()))
            .collect::<Vec<_>>(),
        [("text_stats", "allow"), ("url_normalize", "allow")]
    );
    assert!(intents.iter().all(|i| i.policy_ids == ["rust-tools-open"]));
    let outcomes: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Outcome(o) => Some(o),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes
        .iter()
        .all(|o| o.result == CallResult::Ok && o.attempts.len() == 1));
}

#[tokio::test]
async fn cedar_sees_the_url_of_the_record_first_tool() {
    // `url-normalize-web-only` forbids other schemes through `context.url`: denied, nothing runs.
    let f = Fixture::new();
    let err = f
        .call(
            "url_normalize",
            json!({"url": "ftp://Example.com/pub/file"}),
        )
        .await
        .unwrap_err();
    match err.outcome() {
        Some(CallOutcome::Denied { policy_ids, .. }) => {
            assert_eq!(policy_ids, &["url-normalize-web-only"]);
        }
        _ => panic!("expected a denial, got {err}"),
    }
    // A URL without a host has no URL facts for Cedar: denied as well (no policy allows it).
    let err = f
        .call("url_normalize", json!({"url": "file:///etc/passwd"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallKind::Denied, "{err}");
    assert!(f.records().iter().all(|r| match r {
        Record::Outcome(o) => o.result == CallResult::Denied && o.attempts.is_empty(),
        _ => true,
    }));
}

#[tokio::test]
async fn the_input_gate_holds_the_derived_schema() {
    // The Rust-first tool's schema (from its payload type) is what the input gate enforces.
    let f = Fixture::new();
    for bad in [
        json!({"text": "x", "extra": true}),
        json!({"text": "x", "top_words": 0}),
        json!({"text": "x", "top_words": null}),
        json!({}),
    ] {
        let err = f.call("text_stats", bad.clone()).await.unwrap_err();
        assert!(
            matches!(err, NoOutput::Refused(CallError::InputRejected(_))),
            "{bad}: expected an input rejection, got {err}"
        );
    }
    assert!(f.records().is_empty(), "nothing recorded, nothing ran");
}
