//! Workspace inputs through the governed path: a file the caller gives is in the call's sandbox
//! at `/workspace/<name>` and the tool cannot change it; its size and SHA-256 are in the intent;
//! a file the tool does not declare, a required one left out and one past its bound are refused
//! before any intent; an executor without a workspace, and an approval (the ledger keeps no
//! bytes), refuse a call given files; and the sandbox's init refuses a name that is a path even
//! when the executor is driven past the governed path.

use std::sync::Arc;

use crate::support::fixtures;
use crate::support::host;
use crate::support::sandbox::*;
use escepine_contract::{Principal, WorkspaceFiles};
use escepine_ledger::entry::sha256_hex;
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::record::{Record, WorkspaceFileDigest};
use escepine_runtime::approval::ApprovalError;
use escepine_runtime::executor::{Executor, ProcessExecutor};
use escepine_runtime::{CallError, CallKind, CallOptions, Runtime};
use serde_json::json;

const CHANGELOG: &str = "# 1.2.0\n- workspace inputs\n";

fn sandboxed(run_dir: &std::path::Path) -> Runtime {
    let tool = testtool();
    let ex = executor(MapResolver::default(), run_dir)
        .with_process_executor(ProcessExecutor::new().with_bin_dir(tool.parent().unwrap()));
    Runtime::builder(fixtures::registry("files"))
        .ledger(Arc::new(MemoryLedger::new()))
        .executor(Arc::new(ex))
        .build()
        .unwrap()
}

/// The same registry over the process executor, which has no workspace.
fn unsandboxed() -> Runtime {
    let tool = testtool();
    Runtime::builder(fixtures::registry("files"))
        .ledger(Arc::new(MemoryLedger::new()))
        .executor(Arc::new(
            ProcessExecutor::new().with_bin_dir(tool.parent().unwrap()),
        ))
        .build()
        .unwrap()
}

fn with_files(files: WorkspaceFiles) -> CallOptions {
    CallOptions {
        files,
        ..CallOptions::default()
    }
}

#[tokio::test]
async fn a_given_file_is_in_the_workspace_read_only_and_its_digest_in_the_intent() {
    let _host = host::shared().await;
    let run_dir = tempfile::tempdir().unwrap();
    let rt = sandboxed(run_dir.path());
    let files = WorkspaceFiles::new()
        .with("changelog", CHANGELOG)
        .with("notes.txt", "short");
    let report = rt
        .call(
            &Principal::agent("alice"),
            "t_file",
            json!({"name": "changelog"}),
            with_files(files),
        )
        .await
        .unwrap();
    let out = report.output().unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(out["text"], CHANGELOG);
    assert_eq!(out["bytes"], CHANGELOG.len());
    assert_eq!(out["mode"], 0o444);
    // The tool is uid 0 of its namespace and owns the workspace, but holds no capability: its
    // mode (0444) refuses writing (EACCES); the read-only bind refuses what the owner could do
    // to its own file otherwise: a mode change (EROFS), unlinking or renaming it (EBUSY, a
    // mount point).
    for (what, errnos) in [
        ("write", &["EACCES", "EROFS"][..]),
        ("truncate", &["EACCES", "EROFS"][..]),
        ("chmod", &["EROFS"][..]),
        ("unlink", &["EBUSY"][..]),
        ("rename", &["EBUSY"][..]),
    ] {
        let got = out[what].as_str().unwrap_or_default();
        assert!(errnos.contains(&got), "{what}: {out}");
    }
    // The rest of the workspace stays the tool's.
    assert_eq!(out["beside"], "ok");

    let entries = rt.ledger().entries().unwrap();
    let intent = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Intent(i) if i.call_id == report.call_id() => Some(i.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        intent.files,
        vec![
            WorkspaceFileDigest {
                name: "changelog".into(),
                bytes: CHANGELOG.len() as u64,
                sha256: sha256_hex(CHANGELOG.as_bytes()),
            },
            WorkspaceFileDigest {
                name: "notes.txt".into(),
                bytes: 5,
                sha256: sha256_hex(b"short"),
            },
        ]
    );
    // Only digests: the intent holds no byte of the files (the output, which this tool makes
    // of the file's text, is the tool's to return).
    let text = serde_json::to_string(&intent).unwrap();
    assert!(!text.contains("workspace inputs"), "{text}");

    // The optional input is placed too, and another call starts from an empty workspace.
    let report = rt
        .call(
            &Principal::agent("alice"),
            "t_file",
            json!({"name": "notes.txt"}),
            with_files(
                WorkspaceFiles::new()
                    .with("changelog", "x")
                    .with("notes.txt", "notes"),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        report.output().map(|o| o["text"].clone()),
        Some(json!("notes"))
    );
    let report = rt
        .call(
            &Principal::agent("alice"),
            "t_file",
            json!({"name": "notes.txt"}),
            with_files(WorkspaceFiles::new().with("changelog", "x")),
        )
        .await
        .unwrap();
    assert_eq!(report.kind(), CallKind::Failed, "{report:?}");
}

#[tokio::test]
async fn undeclared_missing_and_oversized_files_are_refused_before_the_intent() {
    let run_dir = tempfile::tempdir().unwrap();
    let rt = sandboxed(run_dir.path());
    let refusal = |files: WorkspaceFiles| {
        let rt = &rt;
        async move {
            let err = rt
                .call(
                    &Principal::agent("alice"),
                    "t_file",
                    json!({"name": "changelog"}),
                    with_files(files),
                )
                .await
                .unwrap_err();
            assert_eq!(err.kind(), CallKind::InputRejected, "{err}");
            let CallError::FilesRejected(problems) = err else {
                panic!("{err}")
            };
            problems
        }
    };
    let problems = refusal(
        WorkspaceFiles::new()
            .with("changelog", "x")
            .with("secrets.env", "x"),
    )
    .await;
    assert_eq!(
        problems,
        ["`secrets.env` is not a workspace input of `t_file` (it declares `changelog`, `notes.txt`)"]
    );
    let problems = refusal(WorkspaceFiles::new().with("notes.txt", "x")).await;
    assert_eq!(
        problems,
        ["the workspace input `changelog` of `t_file` is required and was not given"]
    );
    // Every problem at once: past the bound by one byte, and the required one missing.
    let problems = refusal(WorkspaceFiles::new().with("notes.txt", "x".repeat(17))).await;
    assert_eq!(
        problems,
        [
            "the workspace input `notes.txt` has 17 bytes, more than its max_bytes 16",
            "the workspace input `changelog` of `t_file` is required and was not given",
        ]
    );
    assert!(
        rt.ledger().entries().unwrap().is_empty(),
        "nothing recorded"
    );
}

#[tokio::test]
async fn an_executor_without_a_workspace_refuses_files() {
    let rt = unsandboxed();
    let report = rt
        .call(
            &Principal::agent("alice"),
            "t_file",
            json!({"name": "changelog"}),
            with_files(WorkspaceFiles::new().with("changelog", CHANGELOG)),
        )
        .await
        .unwrap();
    assert_eq!(report.kind(), CallKind::Failed);
    let message = format!("{:?}", report.outcome());
    assert!(
        message.contains("only the sandbox executor places"),
        "{message}"
    );
}

#[tokio::test]
async fn a_call_given_files_cannot_be_approved_and_can_be_rejected() {
    let rt = unsandboxed();
    let waiting = rt
        .call(
            &Principal::agent("bob"),
            "t_file",
            json!({"name": "changelog"}),
            with_files(WorkspaceFiles::new().with("changelog", CHANGELOG)),
        )
        .await
        .unwrap();
    assert_eq!(waiting.kind(), CallKind::AwaitingApproval);
    let err = rt
        .approve(&Principal::agent("carol"), waiting.call_id())
        .await
        .unwrap_err();
    assert!(matches!(err, ApprovalError::FilesNotKept { .. }), "{err}");
    assert!(err.to_string().contains("changelog"), "{err}");
    let rejected = rt
        .reject(&Principal::agent("carol"), waiting.call_id())
        .await
        .unwrap();
    assert_eq!(rejected.kind(), CallKind::Rejected);
}

#[tokio::test]
async fn the_sandbox_refuses_a_name_that_is_a_path_even_past_the_governed_path() {
    // An executor driven directly (no input stage): the sandbox's init checks each name again
    // before it writes anything, so a caller that skips the governed path still cannot write
    // outside the workspace.
    let _host = host::shared().await;
    let run_dir = tempfile::tempdir().unwrap();
    let tool = testtool();
    let ex = executor(MapResolver::default(), run_dir.path())
        .with_process_executor(ProcessExecutor::new().with_bin_dir(tool.parent().unwrap()));
    let registry = fixtures::registry("files");
    let record = registry.get("t_file").unwrap();
    let secrets = std::collections::BTreeMap::new();
    let payload = json!({"name": "changelog"});
    for name in ["../escaped", "/etc/escaped", ".hidden", ""] {
        let files = WorkspaceFiles::new().with(name, "x");
        let attempted = ex
            .attempt(escepine_runtime::executor::Invocation {
                tool: record,
                payload: &payload,
                call_id: "call-files",
                idempotency_key: "idem-files",
                attempt: 1,
                timeout: std::time::Duration::from_secs(10),
                secrets: &secrets,
                scrubber: &escepine_runtime::scrub::Scrubber::default(),
                egress: &escepine_contract::EgressGrant::default(),
                files: &files,
                caller_token: None,
                trace: None,
            })
            .await;
        let err = attempted.result.unwrap_err().to_string();
        assert!(
            err.contains("not a workspace input name"),
            "{name:?}: {err}"
        );
    }
    assert!(!std::path::Path::new("/etc/escaped").exists());
}
