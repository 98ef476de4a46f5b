//! A hostile tool against the Linux sandbox, as root with real namespaces: every escape it tries
//! fails, each outcome asserted, and the host is checked clean after each scenario.

mod sandbox_support;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use escepine_runtime::executor::ExecError;
use escepine_runtime::sandbox::{Limits, SandboxExecutor};
use sandbox_support::*;
use serde_json::{json, Value};
use tokio::sync::Mutex;

/// Scenarios run one at a time, so that each host check sees only its own sandboxes.
static SERIAL: Mutex<()> = Mutex::const_new(());

const HOST_VAR: &str = "ESCEPINE_SANDBOX_TEST_HOST_VAR";

fn no_secrets() -> BTreeMap<String, String> {
    BTreeMap::new()
}

fn assert_failed(v: &Value, what: &str) {
    assert_eq!(v["ok"], json!(false), "{what} succeeded: {v}");
}

fn assert_eperm(v: &Value, what: &str) {
    assert_eq!(v["ok"], json!(false), "{what} succeeded: {v}");
    assert_eq!(v["errno"], json!(libc::EPERM), "{what}: {v}");
}

#[tokio::test]
async fn every_escape_of_the_probe_fails() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let planted = format!("/root/escepine-planted-{}", std::process::id());
    std::fs::write(&planted, "host secret file").unwrap();
    // SAFETY of the test: set once, before any sandbox starts, read by nobody else.
    std::env::set_var(HOST_VAR, "host-only-value");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    let ex = executor(MapResolver::default(), dir.path());
    let rec = hostile_record("hostile_probe", "probe");
    let payload = json!({
        "planted": planted,
        "host_pid": std::process::id(),
        "loopback_port": port,
        "write_also": [ dir.path().join("escaped").display().to_string(), "/workspace/../escaped" ],
    });
    let first = run(
        &ex,
        &rec,
        payload.clone(),
        &no_secrets(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect("the probe runs")
    .output;
    let second = run(
        &ex,
        &rec,
        payload,
        &no_secrets(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect("the probe runs again")
    .output;
    std::fs::remove_file(&planted).unwrap();

    for out in [&first, &second] {
        // A file planted in /root is not there at all.
        assert_failed(&out["read_planted"], "reading the planted file");
        // Nothing outside the workspace is writable; the workspace is.
        let writes = out["writes"].as_object().unwrap();
        assert!(writes.len() >= 8, "{writes:?}");
        for (target, r) in writes {
            assert_failed(r, target);
        }
        assert!(!dir.path().join("escaped").exists());
        assert_eq!(out["workspace_write"]["ok"], json!(true), "{out}");
        // Only the sandbox's own processes are visible; the host's cannot be signalled.
        let pids: Vec<u64> = serde_json::from_value(out["proc"].clone()).unwrap();
        assert!(!pids.is_empty() && pids.len() <= 3, "{pids:?}");
        assert!(pids.contains(&1), "{pids:?}");
        assert!(!pids.contains(&u64::from(std::process::id())), "{pids:?}");
        assert_eq!(out["kill_host"]["errno"], json!(libc::ESRCH), "{out}");
        // The root holds only what the tool needs.
        let root: Vec<String> = serde_json::from_value(out["root"]["entries"].clone()).unwrap();
        // The top directory of the probe's own path (`/var` when CI keeps its target in
        // /var/tmp) exists only as the way to the mounted binary: one entry, nothing of the host's.
        let exe_top = out["exe_top"]["dir"]
            .as_str()
            .expect("the probe names its top dir");
        assert_eq!(
            out["exe_top"]["list"]["entries"].as_array().map(Vec::len),
            Some(1),
            "{exe_top} holds more than the way to the binary: {}",
            out["exe_top"]
        );
        for absent in ["root", "home", "boot", "var", "sys", "srv", "opt", "mnt"] {
            if exe_top.trim_start_matches('/') == absent {
                continue;
            }
            assert!(!root.contains(&absent.to_string()), "/{absent} in {root:?}");
        }
        for present in ["workspace", "proc", "dev", "etc"] {
            assert!(
                root.contains(&present.to_string()),
                "no /{present} in {root:?}"
            );
        }
        // No raw, packet or netlink sockets; no ptrace, namespaces, mounts, io_uring, bpf,
        // keyrings.
        for (name, r) in out["sockets"].as_object().unwrap() {
            assert_eperm(r, name);
        }
        for (name, r) in out["syscalls"].as_object().unwrap() {
            assert_eperm(r, name);
        }
        // Without egress, not even the sandbox's own loopback works; PID 1 cannot be signalled
        // (Landlock's signal scope).
        assert_failed(&out["connect_own"], "connecting to its own loopback");
        assert_eq!(out["signal_init"]["errno"], json!(libc::EPERM), "{out}");
        // The host's loopback is not the sandbox's.
        assert_failed(&out["connect_host"], "connecting to the host's loopback");
        // Identity: uid 0 of its own namespace, no capabilities, no_new_privs, seccomp.
        let id = &out["identity"];
        assert_eq!(id["cap_eff"], "0000000000000000", "{id}");
        assert_eq!(id["cap_bnd"], "0000000000000000", "{id}");
        assert_eq!(id["no_new_privs"], "1", "{id}");
        assert_eq!(id["seccomp"], "2", "{id}");
        assert_eq!(id["cwd"], "/workspace", "{id}");
        assert_eq!(id["hostname"], "escepine-sandbox", "{id}");
        // The environment is exactly the tool's.
        let env = out["env"].as_object().unwrap();
        let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "ESCEPINE_CALL_ID",
                "ESCEPINE_IDEMPOTENCY_KEY",
                "HOME",
                "LANG",
                "PATH",
                "TMPDIR"
            ]
        );
        assert_eq!(env["HOME"], "/workspace");
    }
    // The second call does not find the first call's workspace.
    assert_eq!(first["workspace_before"]["entries"], json!([]), "{first}");
    assert_eq!(second["workspace_before"]["entries"], json!([]), "{second}");
    // No connection reached the host's loopback server.
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a connection reached the host: {other:?}"),
    }
    host.assert_clean().await;
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_process_limit() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path()).with_limits(Limits {
        processes: 16,
        ..Limits::default()
    });
    let out = run(
        &ex,
        &hostile_record("hostile_forkbomb", "forkbomb"),
        json!({ "max": 100_000 }),
        &no_secrets(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect("the bomb reports")
    .output;
    let forked = out["forked"].as_u64().unwrap();
    assert!(forked < 16, "{out}");
    assert!(
        out["error"]
            .as_str()
            .is_some_and(|e| e.contains("Resource temporarily unavailable")),
        "{out}"
    );
    host.assert_clean().await;
}

#[tokio::test]
async fn memory_beyond_the_limit_is_refused() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path()).with_limits(Limits {
        memory_bytes: 256 << 20,
        ..Limits::default()
    });
    let out = run(
        &ex,
        &hostile_record("hostile_alloc", "alloc"),
        json!({ "mb": 4096 }),
        &no_secrets(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect("the allocation reports")
    .output;
    let got = out["allocated_mb"].as_u64().unwrap();
    assert!(got < 256, "{out}");
    assert!(out["refused"].is_string(), "{out}");
    host.assert_clean().await;
}

#[tokio::test]
async fn a_tool_cannot_outlive_its_timeout() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let started = Instant::now();
    let err = run(
        &ex,
        &hostile_record("hostile_hang", "hang"),
        json!({ "children": 4 }),
        &no_secrets(),
        &[],
        Duration::from_millis(1500),
    )
    .await
    .expect_err("it hangs");
    assert_eq!(err, ExecError::TimedOut(Duration::from_millis(1500)));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The tool and its session-leaving, SIGTERM-ignoring children are all gone.
    host.assert_clean().await;
}

#[tokio::test]
async fn a_digest_mismatch_refuses_before_any_sandbox() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let mut rec = hostile_record("hostile_noop", "noop");
    rec.endpoint.sha256 = Some("0".repeat(64));
    let err = run(
        &ex,
        &rec,
        json!({}),
        &no_secrets(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect_err("refused");
    let ExecError::Spawn(message) = &err else {
        panic!("{err:?}")
    };
    assert!(message.contains("refusing to run"), "{message}");
    host.assert_clean().await;
}

#[tokio::test]
async fn a_missing_init_is_a_clear_error() {
    let _serial = SERIAL.lock().await;
    let backend = escepine_runtime::sandbox::LinuxBackend::with_init("/nonexistent/init");
    let ex = SandboxExecutor::with_backend(std::sync::Arc::new(backend));
    let err = run(
        &ex,
        &hostile_record("hostile_noop", "noop"),
        json!({}),
        &no_secrets(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect_err("no init");
    assert!(
        matches!(err, ExecError::Spawn(ref m) if m.contains("/nonexistent/init")),
        "{err:?}"
    );
}
