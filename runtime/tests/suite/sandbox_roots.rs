//! Sandbox roots beyond a lone binary, as the sandbox executor makes them: host paths bound
//! read-only at their own path (the development form of interpreter runtimes), a virtualenv,
//! and the executor's self-test. (A whole image tree as the root is the sandbox crate's own
//! test, `runtime/sandbox/tests/suite/roots.rs`.) Real sandboxes (root, namespaces), real
//! interpreters.

use crate::support::host;
use crate::support::sandbox;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::support::sandbox::{backend, record_for, MapResolver};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_sandbox::JobStatus;
use escepine_sandbox::SandboxSpec;
use serde_json::Value;

use escepine_testkit::python_probe::{job, run, PROBE, PYTHON, STDLIB};

/// The spec the executor makes for `python3.11` (its binary and libraries copied), plus `binds`.
async fn python_spec(run_dir: &Path, binds: Vec<PathBuf>) -> SandboxSpec {
    let ex = SandboxExecutor::with_backend(Arc::new(backend(MapResolver::default(), run_dir)));
    let record = record_for("py", Path::new(PYTHON), &[]);
    let spec = ex
        .spec(&record, &escepine_contract::EgressGrant::default())
        .await
        .expect("a spec");
    SandboxSpec {
        binds,
        ..(*spec).clone()
    }
}

#[tokio::test]
async fn a_bound_host_tree_is_read_only_at_its_own_path() {
    let _host = host::shared().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = backend(MapResolver::default(), run_dir.path());
    let spec = python_spec(run_dir.path(), vec![PathBuf::from(STDLIB)]).await;
    let argv = vec![PYTHON.to_string(), "-I".into(), "-c".into(), PROBE.into()];
    let (status, facts, stderr) = run(&backend, spec, job(argv, None)).await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    assert_eq!(
        facts["stdlib"], "/usr/lib/python3.11/json/decoder.py",
        "{facts}"
    );
    assert_eq!(facts["write"], 30, "EROFS expected: {facts}");
    assert_eq!(facts["cwd"], "/workspace");
    let mounts: Vec<&str> = facts["mounts"]
        .as_array()
        .expect("mount points")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(mounts.contains(&STDLIB), "{mounts:?}");
}

#[tokio::test]
async fn without_the_bind_the_interpreter_finds_no_library() {
    let _host = host::shared().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = backend(MapResolver::default(), run_dir.path());
    let spec = python_spec(run_dir.path(), Vec::new()).await;
    let argv = vec![PYTHON.to_string(), "-I".into(), "-c".into(), PROBE.into()];
    let (status, _, stderr) = run(&backend, spec, job(argv, None)).await;
    assert_ne!(status, JobStatus::Exited(0));
    assert!(
        stderr.contains("encodings") || stderr.contains("platform independent libraries"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_virtualenv_keeps_its_environment_through_its_own_python_link() {
    let _host = host::shared().await;
    use escepine_testkit::fixtures;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = backend(MapResolver::default(), run_dir.path());
    let python = fixtures::python_bin().expect("the fixtures are installed");
    let ex = SandboxExecutor::with_backend(Arc::new(sandbox::backend(
        MapResolver::default(),
        run_dir.path(),
    )));
    let record = record_for("venv", &python, &[]);
    let spec = ex
        .spec(&record, &escepine_contract::EgressGrant::default())
        .await
        .expect("a spec");
    let spec = SandboxSpec {
        binds: fixtures::python_read_only_paths().expect("the fixtures are installed"),
        ..(*spec).clone()
    };
    let code =
        "import json, sys, mcp; print(json.dumps({'prefix': sys.prefix, 'mcp': mcp.__file__}))";
    let argv = vec![python.display().to_string(), "-c".into(), code.into()];
    let (status, facts, stderr) = run(&backend, spec, job(argv, None)).await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    let venv = fixtures::python_venv().expect("the venv");
    assert_eq!(facts["prefix"], venv.display().to_string(), "{facts}");
    assert!(
        facts["mcp"]
            .as_str()
            .is_some_and(|p| p.starts_with(&venv.display().to_string())),
        "{facts}"
    );
}

#[tokio::test]
async fn the_self_test_runs_a_program_in_a_fresh_sandbox_and_names_what_fails() {
    let _host = host::shared().await;
    let run_dir = tempfile::tempdir().expect("a run directory");
    let ex =
        SandboxExecutor::with_backend(Arc::new(backend(MapResolver::default(), run_dir.path())));
    let test = ex.self_test().await.expect("sandboxes work here");
    assert_eq!(test.backend, "linux");
    assert!(test.program.ends_with("true"), "{}", test.program.display());

    // An init that cannot start: the self-test fails and says so, rather than the first call.
    let broken = SandboxExecutor::with_backend(Arc::new(
        escepine_sandbox::LinuxBackend::with_init("/nonexistent/init").with_run_dir(run_dir.path()),
    ));
    let err = broken.self_test().await.expect_err("no init, no sandbox");
    assert!(err.to_string().contains("/nonexistent/init"), "{err}");
}
