//! The warm pool's sandboxes end off their caller's path: the pool makes each with a task that
//! destroys it once it has been handed back and its processes have ended, and that starts its
//! replacement. Handing back is refused for a sandbox no pool made or whose job did not report;
//! a pool dropped with sandboxes ready leaves nothing behind.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use escepine_sandbox::{JobStatus, SandboxBackend, SandboxSpec, Teardowns, WarmPool};
use escepine_testkit::python_probe::script;
use escepine_testkit::sandbox_host::sandbox_processes;

/// A tool that leaves five children behind, which ignore SIGTERM and SIGHUP and hold its
/// stdout open: they end only with the sandbox's PID 1.
const LEAVES_CHILDREN: &str = r#"
import os, signal, time
for _ in range(5):
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        time.sleep(1000)
        os._exit(0)
print('{"left": 5}')
"#;

/// A pool of one on the Linux backend, counting what is handed back to it in `teardowns`.
fn pool_of_one(run_dir: &Path) -> (Arc<dyn SandboxBackend>, Arc<Teardowns>, WarmPool) {
    let backend: Arc<dyn SandboxBackend> = Arc::new(crate::backend(run_dir));
    let teardowns = Arc::new(Teardowns::default());
    let pool = WarmPool::new(Arc::clone(&backend), 1, Arc::clone(&teardowns));
    (backend, teardowns, pool)
}

/// A spec with egress: each of its sandboxes has a proxy directory in the run directory.
fn spec() -> Arc<SandboxSpec> {
    Arc::new(crate::cgroups::spec_with_egress())
}

/// Waits (up to 10 s) until `pool` holds `n` ready sandboxes.
async fn until_ready(pool: &WarmPool, n: usize) {
    let held = escepine_testkit::warm_pool::holds(pool, n, Duration::from_secs(10)).await;
    assert!(
        held,
        "the pool holds {} ready sandboxes, not {n}",
        pool.ready()
    );
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).expect("the run directory").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_handed_back_is_destroyed_once_its_processes_end_and_replaced() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let (backend, teardowns, pool) = pool_of_one(run_dir.path());
    let spec = spec();
    pool.fill(&spec);
    until_ready(&pool, 1).await;
    // What one ready sandbox holds on the host.
    let (processes, dirs) = (sandbox_processes().len(), entries(run_dir.path()));
    assert_eq!(dirs, 1, "one proxy directory");
    for round in 0..3 {
        let (mut sandbox, warm) = pool.take_warm(Arc::clone(&spec)).await.expect("taken");
        assert!(warm, "round {round}: taken ready from the pool");
        let out = backend
            .execute(&mut sandbox, script(LEAVES_CHILDREN))
            .await
            .expect("the job runs");
        assert_eq!(out.status, JobStatus::Exited(0), "stderr: {}", out.stderr);
        assert_eq!(out.stdout, b"{\"left\": 5}\n");
        sandbox
            .retire()
            .expect("a pooled sandbox whose job reported is handed back");
        // Counted from the hand-over until destroyed; its replacement is started by the task
        // that destroys it (nothing here calls `fill`).
        tokio::time::timeout(Duration::from_secs(10), teardowns.settled())
            .await
            .expect("the sandbox handed back is destroyed");
        until_ready(&pool, 1).await;
        assert_eq!(
            (sandbox_processes().len(), entries(run_dir.path())),
            (processes, dirs),
            "round {round}: the replacement's processes and directory alone are left"
        );
    }
    pool.drain().await;
    assert_eq!(entries(run_dir.path()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_pooled_sandbox_whose_job_reported_is_handed_back() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let before = sandbox_processes().len();
    let (backend, teardowns, pool) = pool_of_one(run_dir.path());
    let spec = spec();
    pool.fill(&spec);
    until_ready(&pool, 1).await;

    // From the pool, no job run: given back to its caller.
    let sandbox = pool.take(Arc::clone(&spec)).await.expect("taken");
    let sandbox = sandbox.retire().expect_err("no job has run");
    backend.destroy(sandbox).await;

    // From the pool, a job that could not start: given back.
    assert_eq!(pool.ready(), 0);
    pool.fill(&spec);
    until_ready(&pool, 1).await;
    let mut sandbox = pool.take(Arc::clone(&spec)).await.expect("taken");
    let job = escepine_testkit::python_probe::job(vec!["/usr/bin/not-in-the-root".into()], None);
    backend
        .execute(&mut sandbox, job)
        .await
        .expect_err("the job cannot start");
    let sandbox = sandbox.retire().expect_err("the job did not report");
    backend.destroy(sandbox).await;

    // Provisioned on demand, its job reported: given back, no pool prepared its end.
    let mut sandbox = backend.provision(Arc::clone(&spec)).await.expect("made");
    let out = backend
        .execute(&mut sandbox, script("print('{}')"))
        .await
        .expect("the job runs");
    assert_eq!(out.status, JobStatus::Exited(0), "stderr: {}", out.stderr);
    let sandbox = sandbox.retire().expect_err("no pool made it");
    backend.destroy(sandbox).await;
    assert_eq!(teardowns.in_flight(), 0, "none of them was handed back");

    // The pool dropped with a sandbox ready (whose end was prepared): nothing is left.
    pool.fill(&spec);
    until_ready(&pool, 1).await;
    drop(pool);
    for _ in 0..500 {
        if sandbox_processes().len() == before && entries(run_dir.path()) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sandbox_processes().len(), before, "no sandbox process left");
    assert_eq!(entries(run_dir.path()), 0, "no proxy directory left");
}
