//! The hostile-tool scenarios, each a function of the sandbox's [`Root`]: [`on_root!`] makes them
//! the tests of a module (`sandbox_hostile` on the binary root, `sandbox_hostile_on_image` on an
//! image root). Each scenario holds the host alone ([`host::exclusive`]) and checks it clean.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::support::sandbox::*;
use crate::support::{host, pin};
use escepine_contract::Isolation;
use escepine_runtime::executor::{ExecError, Execution};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_sandbox::Limits;
use serde_json::{json, Value};

pub(crate) const HOST_VAR: &str = "ESCEPINE_SANDBOX_TEST_HOST_VAR";

fn no_secrets() -> BTreeMap<String, String> {
    BTreeMap::new()
}

/// One scenario's hold on the machine: the host alone, its run directory and the host as it
/// was before (checked clean at the end).
struct Scenario {
    _host: tokio::sync::RwLockWriteGuard<'static, ()>,
    dir: tempfile::TempDir,
    host: HostSnapshot,
}

impl Scenario {
    async fn start() -> Self {
        let host_lock = host::exclusive().await;
        let dir = tempfile::tempdir().unwrap();
        let host = HostSnapshot::take(dir.path());
        Self {
            _host: host_lock,
            dir,
            host,
        }
    }
}

/// One call of the hostile tool in `mode`: no secrets, no egress, 20 s.
async fn probe(
    tool_root: Target,
    ex: &SandboxExecutor,
    tool_id: &str,
    mode: &str,
    payload: Value,
) -> Result<Execution, ExecError> {
    run(
        ex,
        &tool_root.hostile_record(tool_id, mode),
        payload,
        &no_secrets(),
        &[],
        Duration::from_secs(20),
    )
    .await
}

fn assert_failed(v: &Value, what: &str) {
    assert_eq!(v["ok"], json!(false), "{what} succeeded: {v}");
}

fn assert_eperm(v: &Value, what: &str) {
    assert_eq!(v["ok"], json!(false), "{what} succeeded: {v}");
    assert_eq!(v["errno"], json!(libc::EPERM), "{what}: {v}");
}

pub async fn every_escape_of_the_probe_fails(tool_root: Target) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    let planted = format!("/root/escepine-planted-{}", std::process::id());
    std::fs::write(&planted, "host secret file").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    let ex = tool_root.executor(MapResolver::default(), dir.path());
    let rec = tool_root.hostile_record("hostile_probe", "probe");
    let payload = json!({
        "planted": planted,
        "host_pid": std::process::id(),
        "loopback_port": port,
        "write_also": [ dir.path().join("escaped").display().to_string(), "/workspace/../escaped" ],
        // Where a gVisor guest found the host's control and proxy sockets, and its own binary,
        // before the tool ran.
        "host_sockets": [
            "/.escepine/run/control.sock",
            "/.escepine/run/proxy.sock",
            "/.escepine/escepine-init",
            "/.escepine/lib/libc.so.6",
        ],
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
        // The host's sockets and the guest's binary are out of reach: the guest detached their
        // mounts and covered the place before the tool started (a namespace sandbox never had
        // them).
        let sockets = out["host_sockets"].as_object().unwrap();
        assert_eq!(sockets.len(), 4, "{out}");
        for (path, r) in sockets {
            assert_failed(&r["connect"], &format!("connecting to {path}"));
            let found = &r["found"];
            assert!(
                found["ok"] == json!(false)
                    || found["len"] == json!(0)
                    || found["dir"] == json!(true),
                "{path} holds something: {found}"
            );
            let parent = &r["parent"];
            assert!(
                parent["ok"] == json!(false) || parent["entries"] == json!([]),
                "{path}'s directory is visible: {parent}"
            );
        }
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
            // gVisor mounts a sysfs at `/sys` whatever the root holds: the gVisor tier covers
            // it with an empty read-only tmpfs.
            if absent == "sys" && tool_root.tier == Isolation::Gvisor {
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
        // No raw sockets; no ptrace, namespaces, mounts, io_uring, bpf, keyrings.
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
        assert_eq!(id["no_new_privs_prctl"], 1, "{id}");
        assert_eq!(id["seccomp"], "2", "{id}");
        assert_eq!(id["cwd"], "/workspace", "{id}");
        assert_eq!(id["hostname"], "escepine-sandbox", "{id}");
        let uid = id["uid"].as_str().and_then(|u| u.split_whitespace().next());
        match tool_root.tier {
            // uid 0 of its own user namespace, mapped to an unprivileged outside id.
            Isolation::Namespaces => {
                assert_eq!(uid, Some("0"), "{id}");
                assert_eq!(id["no_new_privs"], "1", "{id}");
                // PID 1 emptied the bounding set and locked the secure bits before the tool
                // was known; the tool, uid 0 of its namespace, holds nothing in any set.
                for set in ["cap_inh", "cap_prm", "cap_amb"] {
                    assert_eq!(id[set], "0000000000000000", "{set}: {id}");
                }
                // SECBIT_NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked, and
                // NO_CAP_AMBIENT_RAISE: executing a program as uid 0 grants nothing.
                let bits = id["secure_bits"].as_i64().unwrap_or(-1);
                let required = i64::from(
                    libc::SECBIT_NOROOT
                        | libc::SECBIT_NOROOT_LOCKED
                        | libc::SECBIT_NO_SETUID_FIXUP
                        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
                        | libc::SECBIT_KEEP_CAPS_LOCKED
                        | libc::SECBIT_NO_CAP_AMBIENT_RAISE,
                );
                assert_eq!(bits & required, required, "secure bits {bits:#x}: {id}");
            }
            // A user of its own inside gVisor's kernel, not the guest's (whose status shows no
            // `NoNewPrivs` line: the prctl answers).
            Isolation::Gvisor => assert_eq!(
                uid,
                Some(escepine_sandbox::init::guest::TOOL_ID.to_string().as_str()),
                "{id}"
            ),
        }
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

pub async fn a_fork_bomb_stops_at_the_process_limit(tool_root: Target) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    let ex = tool_root
        .executor(MapResolver::default(), dir.path())
        .with_limits(Limits {
            processes: 16,
            ..Limits::default()
        });
    let out = probe(
        tool_root,
        &ex,
        "hostile_forkbomb",
        "forkbomb",
        json!({ "max": 100_000 }),
    )
    .await
    .expect("the bomb reports")
    .output;
    let forked = out["forked"].as_u64().unwrap();
    // On the namespace tier the sandbox's PID 1 and relay share the tool's user and count
    // against its limit; on gVisor the tool's user is its own.
    match tool_root.tier {
        Isolation::Namespaces => assert!(forked < 16, "{out}"),
        Isolation::Gvisor => assert!(forked <= 16, "{out}"),
    }
    assert!(
        out["error"]
            .as_str()
            .is_some_and(|e| e.contains("Resource temporarily unavailable")),
        "{out}"
    );
    host.assert_clean().await;
}

pub async fn memory_beyond_the_limit_is_refused(tool_root: Target) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    let ex = tool_root
        .executor(MapResolver::default(), dir.path())
        .with_limits(Limits {
            memory_bytes: 256 << 20,
            ..Limits::default()
        });
    let result = probe(
        tool_root,
        &ex,
        "hostile_alloc",
        "alloc",
        json!({ "mb": 4096 }),
    )
    .await;
    match (tool_root.tier, result) {
        // RLIMIT_DATA refuses the allocation before the cgroup's bound is reached.
        (Isolation::Namespaces, result) => {
            let out = result.expect("the allocation reports").output;
            let got = out["allocated_mb"].as_u64().unwrap();
            assert!(got < 256, "{out}");
            assert!(out["refused"].is_string(), "{out}");
        }
        // gVisor's kernel serves the allocation from its own memory, which the cgroup
        // bounds: the sandbox is killed at the bound and the call fails, naming it — or the
        // allocation is refused first.
        (Isolation::Gvisor, Ok(done)) => {
            let got = done.output["allocated_mb"].as_u64().unwrap();
            assert!(got < 256, "{}", done.output);
        }
        (Isolation::Gvisor, Err(err)) => {
            let ExecError::Permanent { message, .. } = &err else {
                panic!("not a permanent failure: {err:?}")
            };
            assert!(
                message.contains("256 MiB") && message.contains("memory"),
                "{message}"
            );
        }
    }
    host.assert_clean().await;
}

pub async fn a_tool_cannot_outlive_its_timeout(tool_root: Target) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    let ex = tool_root.executor(MapResolver::default(), dir.path());
    let started = Instant::now();
    let err = run(
        &ex,
        &tool_root.hostile_record("hostile_hang", "hang"),
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

pub async fn a_digest_mismatch_refuses_before_any_sandbox(tool_root: Target) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    let ex = tool_root.executor(MapResolver::default(), dir.path());
    let wrong = "0".repeat(64);
    let builder = tool_root
        .hostile_builder("hostile_noop", "noop")
        .sha256(&wrong);
    let rec = match tool_root.root {
        Root::Binary => builder.registered(),
        Root::Image => {
            // A digest pins a host binary; an image is pinned by its own digest, so
            // registration refuses both together. The executor of an image root still refuses
            // a host binary whose digest does not match.
            let d = builder.build().expect_err("sha256 beside image");
            assert!(
                d.has(escepine_registry::rule::Rule::EndpointDigestWithImage),
                "{}",
                d.render()
            );
            Target {
                root: Root::Binary,
                ..tool_root
            }
            .hostile_builder("hostile_noop", "noop")
            .sha256(&wrong)
            .registered()
        }
    };
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

pub async fn a_missing_init_is_a_clear_error(tool_root: Target) {
    let _host = host::exclusive().await;
    let backend = escepine_sandbox::LinuxBackend::with_init("/nonexistent/init");
    let gvisor = escepine_sandbox::GvisorBackend::new(None)
        .expect("this test program dispatches the sandbox init")
        .with_init("/nonexistent/init");
    let ex = tool_root.with_images(
        SandboxExecutor::with_backend(std::sync::Arc::new(backend))
            .with_gvisor(std::sync::Arc::new(gvisor)),
    );
    let err = probe(tool_root, &ex, "hostile_noop", "noop", json!({}))
        .await
        .expect_err("no init");
    assert!(
        matches!(err, ExecError::Spawn(ref m) if m.contains("/nonexistent/init")),
        "{err:?}"
    );
}

/// The kernel's answer to a tool that asks for an address family it may not use.
const EAFNOSUPPORT: i64 = libc::EAFNOSUPPORT as i64;

pub async fn shared_tmpfs_and_memfd_memory_count_against_the_bound(tool_root: Target) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    // The bomb: 1.5 GiB of MAP_SHARED|MAP_ANONYMOUS, touched, under the default bound.
    let ex = tool_root.executor(MapResolver::default(), dir.path());
    let bound_mib = Limits::default().memory_bytes >> 20;
    let mut cases = vec![(ex, "shared", 1536, bound_mib)];
    // Other memory the kernel does not count in RLIMIT_DATA: a memfd, and a file in the
    // workspace tmpfs (made larger than the bound for this).
    for kind in ["shared", "memfd", "workspace"] {
        let small = tool_root
            .executor(MapResolver::default(), dir.path())
            .with_limits(Limits {
                memory_bytes: 192 << 20,
                workspace_bytes: 1 << 30,
                ..Limits::default()
            });
        cases.push((small, kind, 512, 192));
    }
    for (ex, kind, mb, bound) in &cases {
        let err = run(
            ex,
            &tool_root.hostile_record("hostile_shm", "shm"),
            json!({ "kind": kind, "mb": mb }),
            &no_secrets(),
            &[],
            Duration::from_secs(60),
        )
        .await
        .expect_err(&format!(
            "{mb} MiB of {kind} memory under a {bound} MiB bound"
        ));
        let ExecError::Permanent { message, .. } = &err else {
            panic!("{kind}: not a permanent failure: {err:?}")
        };
        assert!(
            message.contains(&format!("{bound} MiB")) && message.contains("memory"),
            "{kind}: the failure does not name the bound: {message}"
        );
    }
    // Within the bound the same tool runs.
    let out = run(
        &cases[1].0,
        &tool_root.hostile_record("hostile_shm", "shm"),
        json!({ "kind": "shared", "mb": 32 }),
        &no_secrets(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect("32 MiB under a 192 MiB bound")
    .output;
    assert_eq!(out["touched_mb"], json!(32), "{out}");
    drop(cases);
    host.assert_clean().await;
}

pub async fn only_unix_and_internet_sockets_exist(tool_root: Target) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    let ex = tool_root.executor(MapResolver::default(), dir.path());
    let allowed = [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6];
    // vsock, packet, netlink, alg, key, bluetooth, can, tipc, xdp, rds, llc, appletalk, ax25,
    // ipx, nfc, kcm, qipcrtr, smc, mctp, and numbers no family has (yet).
    let refused = [
        libc::AF_VSOCK,
        libc::AF_PACKET,
        libc::AF_NETLINK,
        libc::AF_ALG,
        libc::AF_KEY,
        libc::AF_BLUETOOTH,
        libc::AF_CAN,
        libc::AF_TIPC,
        libc::AF_XDP,
        libc::AF_RDS,
        libc::AF_LLC,
        libc::AF_APPLETALK,
        libc::AF_AX25,
        libc::AF_IPX,
        libc::AF_NFC,
        41, // AF_KCM
        42, // AF_QIPCRTR
        43, // AF_SMC
        45, // AF_MCTP
        46,
        255,
        0x1_0001,
    ];
    let families: Vec<i32> = allowed.iter().chain(refused.iter()).copied().collect();
    let out = probe(
        tool_root,
        &ex,
        "hostile_families",
        "families",
        json!({ "families": families }),
    )
    .await
    .expect("the probe reports")
    .output;
    for f in refused {
        let key = f.to_string();
        for (ty, r) in out["sockets"][&key].as_object().unwrap() {
            assert_eq!(r["errno"], json!(EAFNOSUPPORT), "family {f}, {ty}: {r}");
        }
        let pair = &out["socketpair"][&key];
        assert_eq!(
            pair["errno"],
            json!(EAFNOSUPPORT),
            "socketpair of {f}: {pair}"
        );
    }
    for f in allowed {
        let r = &out["sockets"][&f.to_string()]["stream"];
        assert_eq!(r["ok"], json!(true), "family {f}: {r}");
    }
    assert_eq!(out["socketpair"]["1"]["ok"], json!(true), "{out}");
    for f in [libc::AF_INET, libc::AF_INET6] {
        let pair = &out["socketpair"][&f.to_string()];
        assert_eq!(
            pair["errno"],
            json!(EAFNOSUPPORT),
            "socketpair of {f}: {pair}"
        );
    }
    // The x32 ABI's system calls are refused whatever they are.
    assert_eq!(out["x32_socket"]["errno"], json!(libc::EPERM), "{out}");
    host.assert_clean().await;
}

pub async fn procfs_shows_nothing_of_the_host(tool_root: Target) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    let ex = tool_root.executor(MapResolver::default(), dir.path());
    let out = probe(tool_root, &ex, "hostile_procfs", "procfs", json!({}))
        .await
        .expect("the probe reports")
        .output;
    let host_cmdline = std::fs::read_to_string("/proc/cmdline").unwrap();
    let host_cmdline = host_cmdline.trim();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let host_total = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    let mut texts: Vec<(String, String)> = Vec::new();
    for (path, r) in out["files"].as_object().unwrap() {
        if let Some(t) = r["text"].as_str() {
            texts.push((path.clone(), t.to_string()));
        }
    }
    for (path, t) in out["readable"].as_object().unwrap() {
        texts.push((path.clone(), t.as_str().unwrap_or("").to_string()));
    }
    let init = init().display().to_string();
    let hostile = hostile().display().to_string();
    let target_dir = hostile
        .rsplit_once("/debug/")
        .or_else(|| hostile.rsplit_once("/release/"))
        .map(|(t, _)| t.to_string())
        .unwrap_or_else(|| hostile.clone());
    for (path, text) in &texts {
        assert!(
            host_cmdline.is_empty() || !text.contains(host_cmdline),
            "{path} shows the host's kernel command line"
        );
        assert!(
            !text.contains(&host_total),
            "{path} shows the host's memory size ({host_total} kB): {text}"
        );
        assert!(!text.contains(&init), "{path} shows the init's host path");
        for id in UID_RANGE.start..UID_RANGE.start + 1000 {
            assert!(
                !text.contains(&format!("={id}")),
                "{path} shows an outside id {id}: {text}"
            );
        }
    }
    // No file system is as large as a share of the host's memory (a tmpfs of the kernel's
    // default size is half of it, in bytes and in inodes).
    let host_bytes: u64 = host_total.parse::<u64>().unwrap() * 1024;
    for (path, size) in out["sizes"].as_object().unwrap() {
        // gVisor's own `/dev` reports no size at all (the largest a file system can say),
        // which is nothing of the host's.
        if tool_root.tier == Isolation::Gvisor && size["bytes"].as_u64() >= Some(1 << 62) {
            continue;
        }
        if let Some(bytes) = size["bytes"].as_u64() {
            assert!(bytes < host_bytes / 8, "{path} is {bytes} bytes: {size}");
        }
        if let Some(inodes) = size["inodes"].as_u64() {
            assert!(
                inodes < host_bytes / 4096 / 8,
                "{path} has {inodes} inodes: {size}"
            );
        }
    }
    // PID 1 has a neutral name: no path at all.
    let pid1 = &out["files"]["/proc/1/cmdline"];
    if let Some(t) = pid1["text"].as_str() {
        match tool_root.tier {
            Isolation::Namespaces => {
                assert!(!t.contains('/'), "PID 1's command line holds a path: {t:?}")
            }
            // gVisor's PID 1 is the guest, started through its loader at paths inside the
            // sandbox (`/.escepine/…`, detached before the tool started): never a host path.
            Isolation::Gvisor => {
                assert!(
                    !t.contains(&init),
                    "PID 1's command line holds {init}: {t:?}"
                );
                assert!(
                    !t.contains(&target_dir),
                    "PID 1's command line holds a host path: {t:?}"
                );
            }
        }
    }
    if let Some(t) = out["files"]["/proc/1/exe"]["text"].as_str() {
        assert!(
            !t.contains(&target_dir),
            "PID 1's executable shows a host path: {t}"
        );
    }
    // The mount table holds nothing bound from the host: every mount is the root of a file
    // system of the sandbox's own (no host directory, file or device beneath it), at a path of
    // the sandbox's layout.
    let mountinfo = out["files"]["/proc/self/mountinfo"]["text"]
        .as_str()
        .expect("the mount table is readable");
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (root, point) = (fields[3], fields[4]);
        let after = line.split(" - ").nth(1).unwrap_or("");
        let source = after.split(' ').nth(1).unwrap_or("");
        assert_eq!(root, "/", "a host subtree is mounted: {line}");
        assert!(!source.starts_with('/'), "a host device is mounted: {line}");
        // gVisor's kernel mounts its own `/dev` and `/dev/pts`; the tier covers its `/sys` and
        // `/tmp`, and the guest's `/.escepine`, with empty read-only tmpfs.
        let layout: &[&str] = match tool_root.tier {
            Isolation::Namespaces => &["/", "/proc", "/workspace"],
            Isolation::Gvisor => &[
                "/",
                "/proc",
                "/workspace",
                "/dev",
                "/dev/pts",
                "/sys",
                "/tmp",
                "/.escepine",
            ],
        };
        assert!(layout.contains(&point), "a mount at {point}: {line}");
        assert!(!line.contains(&target_dir), "a host path: {line}");
    }
    host.assert_clean().await;
}

pub async fn a_pinned_tool_runs_only_its_pinned_content_while_its_path_is_swapped(
    tool_root: Target,
) {
    let scenario = Scenario::start().await;
    let (dir, host) = (&scenario.dir, &scenario.host);
    let ex = tool_root.executor(MapResolver::default(), dir.path());
    let race = pin::PinRace::start();
    let rec = builder_for("pinned_script", race.path(), &[])
        .sha256(race.digest())
        .registered();
    let mut outcomes = pin::Outcomes::default();
    // Bounded: at least 100 calls, then until both outcomes were seen a few times, at most
    // 400.
    for i in 0..400 {
        if outcomes.enough(i, 100) {
            break;
        }
        outcomes.count(
            run(
                &ex,
                &rec,
                json!({}),
                &no_secrets(),
                &[],
                Duration::from_secs(20),
            )
            .await,
        );
    }
    outcomes.assert_raced(race.stop());
    host.assert_clean().await;
}

/// The scenarios as the tests of the invoking module, on `$root` (a [`Target`]).
macro_rules! on_root {
    ($root:expr) => {
        $crate::sandbox_hostile::scenarios::on_root!(
            $root;
            every_escape_of_the_probe_fails,
            a_fork_bomb_stops_at_the_process_limit,
            memory_beyond_the_limit_is_refused,
            a_tool_cannot_outlive_its_timeout,
            a_digest_mismatch_refuses_before_any_sandbox,
            a_missing_init_is_a_clear_error,
            shared_tmpfs_and_memfd_memory_count_against_the_bound,
            only_unix_and_internet_sockets_exist,
            procfs_shows_nothing_of_the_host,
            a_pinned_tool_runs_only_its_pinned_content_while_its_path_is_swapped,
        );
    };
    ($root:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                $crate::sandbox_hostile::scenarios::$name($root).await
            }
        )*
    };
}
pub(crate) use on_root;
