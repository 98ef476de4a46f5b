//! Nothing is left behind: 1,000 quick sandboxed calls, 64 concurrent ones with a proxy each,
//! and a warm pool that never hands out a sandbox twice — then no leftover process, child,
//! mount, directory or memory cgroup on the host.

use crate::support::host;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::sandbox::*;
use escepine_contract::Isolation;
use escepine_registry::egress::EgressEntry;
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_testkit::warm_pool::holds;
use futures::stream::{self, StreamExt};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_calls_leave_nothing_behind() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let rec = hostile_record("hostile_noop", "noop");
    let secrets = BTreeMap::new();
    let ok = stream::iter(0..1000)
        .map(|_| run(&ex, &rec, json!({}), &secrets, &[], Duration::from_secs(30)))
        .buffer_unordered(4)
        .filter(|r| std::future::ready(r.as_ref().is_ok_and(|e| e.output == json!({}))))
        .count()
        .await;
    assert_eq!(ok, 1000);
    host.assert_clean().await;
}

/// `n` calls of `rec` at once, each with `{}` and an egress grant (so a proxy each): their
/// results.
async fn at_once_with_proxies(
    ex: &SandboxExecutor,
    rec: &escepine_registry::record::ToolRecord,
    n: usize,
) -> Vec<Result<escepine_runtime::executor::Execution, escepine_runtime::executor::ExecError>> {
    let secrets = BTreeMap::new();
    let egress: Vec<EgressEntry> = vec!["example.test:443".parse().unwrap()];
    let calls = (0..n).map(|_| {
        run(
            ex,
            rec,
            json!({}),
            &secrets,
            &egress,
            Duration::from_secs(60),
        )
    });
    futures::future::join_all(calls).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_calls_with_proxies_leave_nothing_behind() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let rec = hostile_record("hostile_probe", "probe");
    for r in at_once_with_proxies(&ex, &rec, 64).await {
        let out = r.expect("the probe runs").output;
        // Each sees a fresh workspace and only its own processes.
        assert_eq!(out["workspace_before"]["entries"], json!([]), "{out}");
        assert_eq!(out["env"]["HTTP_PROXY"], "http://127.0.0.1:3128");
        // Landlock: loopback is up for the relay, but no other TCP port may be connected to,
        // and PID 1 may not be signalled.
        assert_eq!(out["connect_own"]["ok"], json!(false), "{out}");
        assert!(
            out["connect_own"]["error"]
                .as_str()
                .is_some_and(|e| e.contains("Permission denied")),
            "{out}"
        );
        assert_eq!(out["signal_init"]["errno"], json!(libc::EPERM), "{out}");
    }
    host.assert_clean().await;
}

/// A call returns before its sandbox is torn down; once the executor's teardowns have settled,
/// nothing of the returned calls' sandboxes is left, with nothing more waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_the_teardowns_settle_nothing_of_the_returned_calls_is_left() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let rec = hostile_record("hostile_noop", "noop");
    for _ in 0..3 {
        for r in at_once_with_proxies(&ex, &rec, 8).await {
            assert_eq!(r.expect("the no-op runs").output, json!({}));
        }
        ex.teardowns_settled().await;
        assert_eq!(ex.teardowns_in_flight(), 0);
        host.assert_clean_now();
    }
}

/// A warm call's sandbox goes back to the task its pool prepared for its end: the executor's
/// teardowns count it until that task has destroyed it, once every process the tool left has
/// ended with PID 1, and that task starts the pool's replacement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_calls_sandbox_is_counted_until_destroyed_and_replaced_by_its_pool() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex: SandboxExecutor = executor(MapResolver::default(), dir.path()).with_warm_pool(2);
    // The tool forks children that wait for a signal, and exits.
    let rec = hostile_record("hostile_forkbomb", "forkbomb");
    ex.prewarm(&rec, &escepine_contract::EgressGrant::default())
        .await
        .unwrap();
    let pool = Arc::clone(ex.pool().unwrap());
    let ready = || holds(&pool, 2, Duration::from_secs(5));
    assert!(ready().await, "the pool fills");
    let idle = escepine_testkit::sandbox_host::sandbox_processes().len();
    let secrets = BTreeMap::new();
    for round in 0..3 {
        for _ in 0..2 {
            let out = run(
                &ex,
                &rec,
                json!({"max": 20}),
                &secrets,
                &[],
                Duration::from_secs(20),
            )
            .await
            .expect("the tool runs")
            .output;
            assert_eq!(out["forked"], json!(20), "{out}");
        }
        ex.teardowns_settled().await;
        assert!(ready().await, "round {round}: the pool refills");
        assert_eq!(
            escepine_testkit::sandbox_host::sandbox_processes().len(),
            idle,
            "round {round}: the ready sandboxes' processes alone are left"
        );
    }
    drop(ex);
    pool.drain().await;
    drop(pool);
    host.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_warm_pool_never_reuses_a_sandbox() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex: SandboxExecutor = executor(MapResolver::default(), dir.path()).with_warm_pool(2);
    let rec = hostile_record("hostile_probe", "probe");
    ex.prewarm(&rec, &escepine_contract::EgressGrant::default())
        .await
        .unwrap();
    let pool = Arc::clone(ex.pool().unwrap());
    assert!(
        holds(&pool, 2, Duration::from_secs(2)).await,
        "the pool fills"
    );
    let secrets = BTreeMap::new();
    for _ in 0..6 {
        let out = run(&ex, &rec, json!({}), &secrets, &[], Duration::from_secs(20))
            .await
            .expect("the probe runs")
            .output;
        // A used sandbox would show the previous call's marker.
        assert_eq!(out["workspace_before"]["entries"], json!([]), "{out}");
        assert_eq!(out["workspace_write"]["ok"], json!(true));
    }
    drop(ex);
    pool.drain().await;
    drop(pool);
    host.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_backends_never_share_an_outside_uid() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    // Two backends of one process start their slot cursors at the same place: only the
    // machine-wide lock file keeps them apart (as it keeps two runtimes on one machine apart).
    let a = executor(MapResolver::default(), dir.path());
    let b = executor(MapResolver::default(), dir.path());
    let rec = hostile_record("hostile_noop", "noop");
    let spec = a
        .spec(&rec, &escepine_contract::EgressGrant::default())
        .await
        .unwrap();
    let mut held = Vec::new();
    for ex in [&a, &b] {
        for _ in 0..4 {
            held.push((
                Arc::clone(ex.backend()),
                ex.backend().provision(Arc::clone(&spec)).await.unwrap(),
            ));
        }
    }
    let uids: std::collections::BTreeSet<u32> = sandbox_processes()
        .into_iter()
        .filter_map(|(pid, _)| uid_of(pid))
        .collect();
    assert_eq!(
        uids.len(),
        8,
        "eight live sandboxes, eight outside uids: {uids:?}"
    );
    for (backend, sandbox) in held {
        backend.destroy(sandbox).await;
    }
    host.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_zygote_is_replaced_and_a_dropped_backend_takes_its_zygote_along() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let before = zygotes();
    let ex = executor(MapResolver::default(), dir.path());
    let rec = hostile_record("hostile_noop", "noop");
    let secrets = BTreeMap::new();
    let call = || run(&ex, &rec, json!({}), &secrets, &[], Duration::from_secs(20));
    call().await.expect("the first call");
    let first: Vec<u32> = zygotes().difference(&before).copied().collect();
    assert_eq!(first.len(), 1, "one zygote per backend: {first:?}");

    // Killed behind the backend's back: the next call starts another and succeeds.
    let pid = rustix::process::Pid::from_raw(first[0] as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    while std::fs::read_to_string(format!("/proc/{}/stat", first[0]))
        .is_ok_and(|s| !s.contains(") Z "))
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    call().await.expect("a call after the zygote died");
    let second: Vec<u32> = zygotes().difference(&before).copied().collect();
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(second, first);

    // Dropping the backend ends its zygote.
    drop(ex);
    for _ in 0..200 {
        if zygotes().difference(&before).next().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(zygotes().difference(&before).next().is_none());
    host.assert_clean().await;
}

const CRASH_CHILD_ENV: &str = "ESCEPINE_SANDBOX_CRASH_CHILD";
/// The tier the crash child's tool runs on: `gvisor`, else the namespace tier.
const CRASH_TIER_ENV: &str = "ESCEPINE_SANDBOX_CRASH_TIER";

/// Runs a tool that never ends (with children of its own that ignore SIGTERM) in a sandbox,
/// until the parent test kills this process.
#[test]
#[ignore = "the child process of a_killed_runtime_leaves_no_sandbox_behind"]
fn sandbox_crash_child() {
    let Ok(dir) = std::env::var(CRASH_CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let ex = executor(MapResolver::default(), std::path::Path::new(&dir));
        let tier = match std::env::var(CRASH_TIER_ENV).as_deref() {
            Ok("gvisor") => Isolation::Gvisor,
            _ => Isolation::Namespaces,
        };
        let rec = Target::namespaces(Root::Binary)
            .with_tier(tier)
            .hostile_record("hostile_hang", "hang");
        let payload = json!({ "children": 3 });
        let _ = run(
            &ex,
            &rec,
            payload,
            &BTreeMap::new(),
            &[],
            Duration::from_secs(600),
        )
        .await;
    });
}

/// This test program re-run as the crash child, its run directory `dir`, its tool on `tier`.
fn crash_child(dir: &std::path::Path, tier: &str) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "sandbox_leaks::sandbox_crash_child",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(CRASH_CHILD_ENV, dir)
        .env(CRASH_TIER_ENV, tier)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_runtime_leaves_no_sandbox_behind() {
    let _host = host::exclusive_blocking();
    let dir = tempfile::tempdir().unwrap();
    let _ = hostile();
    let mut child = crash_child(dir.path(), "namespaces");
    // Wait until the tool and its three children run in the sandbox.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while sandbox_processes().len() < 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sandbox did not start: {:?}",
            sandbox_processes()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let zygotes: Vec<u32> = children_of(child.id())
        .into_iter()
        .filter(|p| is_zygote(*p))
        .collect();
    assert_eq!(zygotes.len(), 1, "{zygotes:?}");
    // SIGKILL: no destructor of the runtime runs.
    child.kill().unwrap();
    child.wait().unwrap();
    // The zygote reads end-of-file and ends; PID 1 gets SIGKILL, which ends every process of
    // the sandbox.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = sandbox_processes();
        let zygote_alive = std::path::Path::new(&format!("/proc/{}", zygotes[0])).exists();
        if left.is_empty() && !zygote_alive {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "left behind by a killed runtime: sandbox processes {left:?}, zygote alive: \
             {zygote_alive}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The killed runtime's memory cgroups outlive it (nobody was left to remove them): the next
    // backend below the same cgroup removes them.
    let left = sandbox_cgroups_of(child.id());
    assert!(!left.is_empty(), "the sandbox had no memory cgroup");
    drop(backend(MapResolver::default(), dir.path()));
    assert_eq!(sandbox_cgroups_of(child.id()), Vec::<String>::new());
}

/// The processes whose command line names `dir` (`runsc`, its gofer and its sandbox).
fn naming(dir: &std::path::Path) -> Vec<String> {
    let dir = dir.to_string_lossy().into_owned();
    escepine_testkit::sandbox_host::host_pids()
        .filter_map(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&dir))
        .collect()
}

/// The processes `runsc ps` lists in the container of the sandbox directory `sandbox`.
fn in_container(sandbox: &std::path::Path) -> String {
    let name = sandbox.file_name().unwrap().to_string_lossy().into_owned();
    let out = std::process::Command::new("runsc")
        .arg("--root")
        .arg(sandbox.join("state"))
        .args(["ps", &name])
        .output()
        .expect("runsc ps");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_killed_runtime_leaves_no_gvisor_sandbox_behind() {
    let _host = host::exclusive_blocking();
    let dir = tempfile::tempdir().unwrap();
    let _ = hostile();
    let mut child = crash_child(dir.path(), "gvisor");
    // Wait until the tool and its three children run in the container.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let sandbox = loop {
        let sandbox = std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("escepine-gv-"))
            });
        if let Some(sandbox) = sandbox {
            let ps = in_container(&sandbox);
            if ps.matches("escepine-hosti").count() >= 4 {
                break sandbox;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gVisor sandbox did not start its tool"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !naming(dir.path()).is_empty(),
        "no runsc process names the sandbox"
    );
    // SIGKILL: no destructor of the runtime runs; the guest sees the control socket close.
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let left = naming(dir.path());
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "left running by a killed runtime ({}): {left:#?}",
            sandbox.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Its directory (bundle, state, sockets) outlives it: the next gVisor backend on the same
    // run directory removes it once it has stood unchanged a while (dated back here).
    assert!(sandbox.is_dir());
    std::fs::File::open(&sandbox)
        .and_then(|f| f.set_modified(std::time::SystemTime::now() - Duration::from_secs(60)))
        .unwrap();
    assert_eq!(
        gvisor_backend(MapResolver::default(), dir.path()).sweep_run_dir(),
        vec![sandbox.clone()]
    );
    assert!(!sandbox.exists());
}
