//! A job's start in a real sandbox (root): the tool's process is started and confined while
//! the sandbox is built, so a job it cannot start — a working directory or a program missing
//! from the root — is reported by name after the sandbox has long been ready, and a sandbox
//! destroyed without a job leaves no process behind.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use escepine_sandbox::deps::{identity, DepCache};
use escepine_sandbox::{JobStatus, LinuxBackend, SandboxBackend, SandboxError, SandboxSpec};

use escepine_testkit::python_probe::{job, PYTHON, STDLIB};

fn spec() -> SandboxSpec {
    let program = PathBuf::from(PYTHON);
    let id = identity(&program).expect("python");
    let mut read_only = DepCache::default()
        .needs(&program, &id)
        .expect("python's libraries");
    read_only.push(PathBuf::from(STDLIB));
    SandboxSpec {
        program,
        program_identity: id,
        program_sha256: None,
        read_only,
        binds: Vec::new(),
        root_tree: None,
        egress: escepine_contract::EgressGrant::default(),
        limits: Default::default(),
    }
}

/// The error of `argv` in `cwd`, run in a sandbox provisioned and left idle a moment first (as
/// a pooled one is).
async fn failure(backend: &LinuxBackend, argv: &[&str], cwd: Option<&str>) -> String {
    let mut sandbox = backend
        .provision(Arc::new(spec()))
        .await
        .expect("provisioned");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let argv = argv.iter().map(|a| (*a).to_string()).collect();
    let err = backend
        .execute(&mut sandbox, job(argv, cwd))
        .await
        .expect_err("the job cannot start");
    backend.destroy(sandbox).await;
    assert!(matches!(err, SandboxError::Init(_)), "{err:?}");
    err.to_string()
}

/// Host processes whose real uid is one of the backend's sandbox ids.
fn sandbox_processes() -> usize {
    let range = 100_000u32..160_000;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next()?.parse::<u32>().ok())
                .is_some_and(|uid| range.contains(&uid))
        })
        .count()
}

#[tokio::test]
async fn a_job_that_cannot_start_is_reported_by_name_and_a_good_one_still_runs() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = LinuxBackend::new()
        .expect("this test program dispatches the sandbox init")
        .with_run_dir(run_dir.path());

    let err = failure(&backend, &[PYTHON, "-c", "pass"], Some("/no-such-dir")).await;
    assert!(
        err.contains("chdir /no-such-dir: No such file or directory"),
        "{err}"
    );
    let err = failure(&backend, &["/usr/bin/not-in-the-root"], None).await;
    assert!(
        err.contains("cannot execute /usr/bin/not-in-the-root: No such file or directory"),
        "{err}"
    );

    let (status, facts, stderr) = escepine_testkit::python_probe::run(
        &backend,
        spec(),
        job(
            vec![
                PYTHON.into(),
                "-c".into(),
                "import json, os; print(json.dumps({'cwd': os.getcwd(), 'pid': os.getpid()}))"
                    .into(),
            ],
            None,
        ),
    )
    .await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    assert_eq!(facts["cwd"], "/workspace");
    assert_eq!(facts["pid"], 2, "the tool is PID 1's only child");
}

#[tokio::test]
async fn a_sandbox_destroyed_without_a_job_leaves_no_process() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = LinuxBackend::new()
        .expect("this test program dispatches the sandbox init")
        .with_run_dir(run_dir.path());
    let before = sandbox_processes();
    let mut sandboxes = Vec::new();
    for _ in 0..3 {
        sandboxes.push(
            backend
                .provision(Arc::new(spec()))
                .await
                .expect("provisioned"),
        );
    }
    // Each holds PID 1 and the waiting tool's process (its outer process keeps the host's
    // root's id).
    assert_eq!(sandbox_processes(), before + 6);
    for sandbox in sandboxes {
        backend.destroy(sandbox).await;
    }
    let mut left = usize::MAX;
    for _ in 0..100 {
        left = sandbox_processes();
        if left == before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(left, before, "every sandbox's processes ended");
}
