//! Cost of a sandbox: a no-op tool (`escepine-hostile noop`) through the sandbox executor —
//! provision + execute + destroy, with and without the egress proxy, cold and from a warm pool —
//! against a bare spawn of the same binary, `unshare -Urnmp --fork` of it, and
//! `bwrap --unshare-all` with a minimal root (each only if installed); and warm calls (with and
//! without the proxy) and bare spawns alternating, call by call, so that both meet the machine
//! in the same state, and bare spawns each 1 ms and 5 ms after the last (a warm call too comes after a wait). Then an
//! `mcp-stdio` server (`escepine-mcp-probe`: initialize, tools/list, tools/call, close) in a
//! fresh sandbox against the same exchange with a plain child process. Then 8 tunnels at once
//! through a cold sandbox's relay and proxy to an echo server on loopback, 1 MiB each way on
//! each (`escepine-hostile bulk`). Then rounds of 64
//! concurrent calls with a proxy each (the first round, which meets the backend's stocks empty,
//! apart), beside the same rounds of `unshare --fork` with and without a network namespace. Then
//! the gVisor tier: the no-op cold (with and without the proxy) and from a warm pool of started
//! containers, beside `runsc do` of the same binary, and an MCP exchange with the Python SDK
//! server on each tier.
//!
//! `cargo bench -p escepine-runtime --bench sandbox` (needs root or unprivileged user
//! namespaces). `ESCEPINE_BENCH_ITERS` sets the number of timed runs per row (default 300);
//! `ESCEPINE_BENCH_TIERS=namespaces` leaves out the gVisor tier.
//! Prints p50 and p99 per row and the ratios the issue sets targets for.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_contract::{EgressGrant, Isolation, Transport};
use escepine_registry::record::ToolRecord;
use escepine_runtime::executor::{Executor, ProcessExecutor};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_sandbox::{GvisorBackend, LinuxBackend};
use escepine_testkit::fixtures;
use serde_json::json;
use support::{
    builder_with, call, provision_execute_destroy, record_with, summarise, testkit_bin, Row,
};

use escepine_testkit::bench::sandboxed as support;

const HOSTILE: &str = "escepine-hostile";
const MCP_PROBE: &str = "escepine-mcp-probe";

fn record(binary: &Path) -> ToolRecord {
    record_with(binary, Transport::StdioJson, "noop", &["noop"])
}

/// Runs `cmd` with `{}` on stdin to its end, `iters` times after a warm-up.
fn time_command(name: &str, iters: usize, mut make: impl FnMut() -> Command) -> Option<Row> {
    let warm = support::warm_up(10);
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters + warm {
        match run_once(make()) {
            Ok(took) if i >= warm => samples.push(took),
            Ok(_) => {}
            Err(why) => {
                println!("{name:<48} skipped: {why}");
                return None;
            }
        }
    }
    Some(summarise(name, samples))
}

/// One run of `cmd` with `{}` on stdin, to its end: how long it took, or why it failed.
fn run_once(mut cmd: Command) -> Result<Duration, String> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let _ = child.stdin.take().map(|mut s| s.write_all(b"{}"));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() || !out.stdout.starts_with(b"{}") {
        return Err(format!("it failed ({})", out.status));
    }
    Ok(start.elapsed())
}

fn main() {
    // The sandboxes' init is this program, as in every program that starts sandboxes.
    escepine_sandbox::init::dispatch();
    let iters = support::iters(300);
    let warm = support::warm_up(10);
    let tool = testkit_bin(HOSTILE, "ESCEPINE_HOSTILE");
    println!(
        "no-op tool: {} noop; {iters} timed runs per row\n",
        tool.display()
    );

    let bare = time_command("bare spawn", iters, || {
        let mut c = Command::new(&tool);
        c.arg("noop");
        c
    });
    // The same spawn, each 1 ms and then 5 ms after the last ended: a warm call waits for its
    // pool's refill (polled every millisecond) and so meets the machine with its cores idle
    // just before, which a spawn right after the last does not.
    let paced = [1u64, 5].map(|pause| {
        let row = time_command(
            &format!("bare spawn, {pause} ms after the last"),
            iters,
            || {
                std::thread::sleep(Duration::from_millis(pause));
                let mut c = Command::new(&tool);
                c.arg("noop");
                c
            },
        );
        (pause, row)
    });
    let unshare = time_command("unshare -Urnmp --fork", iters, || {
        let mut c = Command::new("unshare");
        c.args(["-Urnmp", "--fork"]).arg(&tool).arg("noop");
        c
    });
    let tool_str = tool.display().to_string();
    let bwrap = time_command("bwrap --unshare-all (minimal root)", iters, || {
        let mut c = Command::new("bwrap");
        c.args(["--unshare-all", "--die-with-parent", "--new-session"])
            .args(["--ro-bind", "/usr/lib", "/usr/lib"])
            .args(["--ro-bind", "/usr/lib64", "/usr/lib64"])
            .args(["--symlink", "usr/lib", "/lib"])
            .args(["--symlink", "usr/lib64", "/lib64"])
            .args(["--ro-bind", &tool_str, &tool_str])
            .args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/workspace"])
            .args(["--chdir", "/workspace", &tool_str, "noop"]);
        c
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let run_dir = support::run_dir();
    let backend = || {
        Arc::new(
            LinuxBackend::new()
                .expect("this bench dispatches the sandbox init")
                .with_run_dir(run_dir.path()),
        )
    };
    let rec = record(&tool);
    let proxy_egress = EgressGrant::new(vec!["example.test:443".parse().unwrap()]);
    let mut sandbox_rows = Vec::new();
    for (name, pool, egress) in [
        ("sandbox, cold, no egress", 0, EgressGrant::default()),
        ("sandbox, cold, with proxy", 0, proxy_egress.clone()),
        (
            "sandbox, warm pool (2), no egress",
            2,
            EgressGrant::default(),
        ),
        (
            "sandbox, warm pool (2), with proxy",
            2,
            proxy_egress.clone(),
        ),
    ] {
        let ex = SandboxExecutor::with_backend(backend()).with_warm_pool(pool);
        let samples = rt.block_on(time_calls(&ex, &rec, &egress, pool, iters, warm));
        sandbox_rows.push(summarise(name, samples));
    }
    // The warm rows and the bare spawn minutes apart meet the machine in different states; here
    // they alternate, call by call, without egress and with a proxy.
    let alternating = [
        ("no egress", EgressGrant::default()),
        ("with proxy", proxy_egress.clone()),
    ]
    .map(|(what, egress)| {
        let ex = SandboxExecutor::with_backend(backend()).with_warm_pool(2);
        let (calls, spawns) = rt.block_on(alternate(&ex, &rec, &egress, &tool, iters, warm));
        (
            what,
            summarise(
                &format!("sandbox, warm pool (2), {what}, alternating"),
                calls,
            ),
            summarise(
                &format!("bare spawn, alternating with those calls ({what})"),
                spawns,
            ),
        )
    });

    // Provision + execute + destroy, each awaited (the executor returns before the destroy).
    let with_destroy = rt.block_on(async {
        let ex = SandboxExecutor::with_backend(backend());
        let spec = ex.spec(&rec, &proxy_egress).await.unwrap();
        let mut samples = Vec::with_capacity(iters);
        for i in 0..iters + warm {
            let took = provision_execute_destroy(&ex, &spec).await;
            if i >= warm {
                samples.push(took);
            }
        }
        samples
    });
    summarise("sandbox, cold, with proxy, destroy awaited", with_destroy);

    // One MCP session per attempt: the probe server as a plain child process, then in a fresh
    // sandbox (no egress).
    let probe = testkit_bin(MCP_PROBE, "ESCEPINE_MCP_PROBE");
    let mcp_rec = record_with(&probe, Transport::McpStdio, "probe", &[]);
    let mut mcp_rows = Vec::new();
    let executors: [(&str, Arc<dyn Executor>); 2] = [
        (
            "mcp-stdio exchange, process executor",
            Arc::new(ProcessExecutor::new()),
        ),
        (
            "mcp-stdio exchange, sandbox, cold",
            Arc::new(SandboxExecutor::with_backend(backend())),
        ),
    ];
    for (name, ex) in executors {
        let samples = rt.block_on(async {
            let payload = json!({ "planted": "/nonexistent", "write_outside": "/nonexistent/x" });
            let mut samples = Vec::with_capacity(iters);
            for i in 0..iters + warm {
                let start = Instant::now();
                let out = call(
                    ex.as_ref(),
                    &mcp_rec,
                    &payload,
                    &EgressGrant::default(),
                    Duration::from_secs(10),
                )
                .await
                .expect("the probe answers");
                let took = start.elapsed();
                assert!(out.get("hostname").is_some());
                if i >= warm {
                    samples.push(took);
                }
            }
            samples
        });
        mcp_rows.push(summarise(name, samples));
    }

    // Traffic through the relay: `bulk` tunnels at once through the call's proxy to an echo
    // server on loopback, each sending as many bytes as it reads back, in a cold sandbox.
    let (tunnels, bytes) = if support::smoke() {
        (2, 64 << 10)
    } else {
        (8, 1 << 20)
    };
    let relay_samples = rt.block_on(async {
        let port = escepine_testkit::echo::start().await;
        let target = format!("127.0.0.1:{port}");
        let egress = EgressGrant::new(vec![target.parse().unwrap()]);
        let rec = record_with(&tool, Transport::StdioJson, "bulk", &["bulk"]);
        let ex = SandboxExecutor::with_backend(backend());
        let payload = json!({ "target": target, "connections": tunnels, "bytes": bytes });
        let (runs, warm) = ((iters / 10).max(3), warm.min(3));
        let mut samples = Vec::with_capacity(runs);
        for i in 0..runs + warm {
            let start = Instant::now();
            let out = call(&ex, &rec, &payload, &egress, Duration::from_secs(60))
                .await
                .expect("the bulk tool runs");
            let took = start.elapsed();
            let results = out["results"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            assert!(
                results.len() == tunnels && results.iter().all(|r| r["intact"] == json!(true)),
                "{out}"
            );
            if i >= warm {
                samples.push(took);
            }
        }
        samples
    });
    let relay_row = summarise(
        &format!(
            "sandbox, cold, {tunnels} tunnels x {} KiB each way through the relay",
            bytes >> 10
        ),
        relay_samples,
    );
    println!(
        "  = {:.0} MiB/s each way at p50",
        (tunnels * bytes) as f64 / f64::from(1 << 20) / relay_row.p50.as_secs_f64()
    );

    // 64 concurrent sandboxed calls, without egress and then with a proxy each, 20 rounds after
    // a first: the wall time of a round and what is left on the host afterwards (one round of 8
    // after the first in a smoke run, which only proves the rows work). The first round meets the stocks the burst
    // draws on (network namespaces, cgroups) empty: it is shown on its own. Beside it, the same
    // rounds of `unshare --fork` of the tool, with and without a network namespace: what the
    // kernel's namespaces alone allow at that concurrency on this machine.
    let (rounds, concurrent) = if support::smoke() { (1, 8) } else { (20, 64) };
    let unshare_rounds = ["-Urnmp", "-Urmp"].map(|flags| {
        let row = concurrent_rounds(
            &format!("{concurrent} concurrent unshare {flags} --fork (one round)"),
            rounds,
            concurrent,
            || {
                let mut c = Command::new("unshare");
                c.args([flags, "--fork"]).arg(&tool).arg("noop");
                c
            },
        );
        (flags, row)
    });
    // The burst without egress (no proxy, no relay), then with a proxy each, each on a backend
    // of its own.
    for (what, egress) in [
        ("without egress", EgressGrant::default()),
        ("with proxies", proxy_egress.clone()),
    ] {
        let (first_round, round_times, left) = rt.block_on(async {
            let ex = SandboxExecutor::with_backend(backend());
            let payload = json!({});
            let mut times = Vec::with_capacity(rounds + 1);
            for _ in 0..=rounds {
                let start = Instant::now();
                let calls = (0..concurrent)
                    .map(|_| call(&ex, &rec, &payload, &egress, Duration::from_secs(30)));
                let outs = futures::future::join_all(calls).await;
                times.push(start.elapsed());
                for out in &outs {
                    match out {
                        Ok(e) => assert_eq!(e, &json!({})),
                        Err(e) => panic!("a concurrent call failed: {e}"),
                    }
                }
            }
            // Teardowns run in the background after each result: wait for them, then look (the
            // host's view counts every executor's sandboxes, which may still be exiting).
            ex.teardowns_settled().await;
            let mut left = (usize::MAX, usize::MAX);
            for _ in 0..100 {
                left = (
                    escepine_testkit::sandbox_host::sandbox_processes().len(),
                    entries(run_dir.path()),
                );
                if left == (0, 0) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let first = times.remove(0);
            (first, times, left)
        });
        let round = summarise(
            &format!("{concurrent} concurrent calls {what} (one round)"),
            round_times,
        );
        let per_s = |r: &Row| concurrent as f64 / r.p50.as_secs_f64();
        println!(
            "  = {:.0} sandboxed calls/s at p50; the first round, stocks empty: {:.2} ms; left \
             on the host afterwards: {} sandbox processes, {} run directories",
            per_s(&round),
            first_round.as_secs_f64() * 1e3,
            left.0,
            left.1
        );
        for (flags, u) in &unshare_rounds {
            if let Some(u) = u {
                println!(
                    "  = {:.2} of the {:.0} calls/s of unshare {flags} --fork",
                    u.ratio(&round),
                    per_s(u)
                );
            }
        }
    }

    if support::tier_wanted("gvisor") {
        gvisor_tier(
            &rt,
            &backend,
            &tool,
            &sandbox_rows,
            iters,
            warm,
            run_dir.path(),
        );
    }

    println!();
    let ratio = |a: &Row, b: &Row| a.ratio(b);
    let cold = &sandbox_rows[1];
    let warm = &sandbox_rows[3];
    if let Some(u) = &unshare {
        println!(
            "cold sandbox (with proxy) p50 / unshare p50 = {:.2} (target < 2)",
            ratio(cold, u)
        );
    }
    if let Some(b) = &bwrap {
        println!(
            "cold sandbox (with proxy) p50 / bwrap p50   = {:.2} (target < 1)",
            ratio(cold, b)
        );
    }
    println!(
        "mcp-stdio in a sandbox p50 / as a process p50 = {:.2}",
        ratio(&mcp_rows[1], &mcp_rows[0])
    );
    if let Some(b) = &bare {
        println!(
            "warm pool (with proxy) p50 / bare spawn p50 = {:.2} (aim < 2)",
            ratio(warm, b)
        );
        println!(
            "warm pool (no egress) p50 / bare spawn p50  = {:.2}",
            ratio(&sandbox_rows[2], b)
        );
    }
    for (pause, p) in &paced {
        if let Some(p) = p {
            println!(
                "warm pool p50 / bare spawn {pause} ms apart p50: no egress {:.2}, with proxy {:.2}",
                ratio(&sandbox_rows[2], p),
                ratio(warm, p)
            );
        }
    }
    for (what, calls, spawns) in &alternating {
        println!(
            "the same, alternating call by call, {what:10} = {:.2}",
            ratio(calls, spawns)
        );
    }
}

/// One timed no-op call of `rec` with `egress` through `ex`; with a warm pool of `pool`, once
/// the pool has caught up — a call rate the pool keeps up with: the previous call's sandbox is
/// destroyed and its replacement ready (as between an agent's tool calls).
async fn timed_noop(
    ex: &SandboxExecutor,
    rec: &ToolRecord,
    egress: &EgressGrant,
    pool: usize,
) -> Duration {
    if pool > 0 {
        caught_up(ex, rec, pool).await;
    }
    let start = Instant::now();
    let out = call(ex, rec, &json!({}), egress, Duration::from_secs(30))
        .await
        .expect("the no-op runs");
    let took = start.elapsed();
    assert_eq!(out, json!({}));
    took
}

/// Waits until the sandboxes of the calls returned have been destroyed and (up to 2 s) until
/// `rec`'s warm pool in `ex` holds `pool` ready sandboxes: the replacement of the last one taken
/// has been provisioned.
async fn caught_up(ex: &SandboxExecutor, rec: &ToolRecord, pool: usize) {
    ex.teardowns_settled().await;
    let p = ex
        .tier(rec)
        .expect("the tool's tier")
        .pool
        .expect("a warm pool");
    escepine_testkit::warm_pool::holds(p, pool, Duration::from_secs(2)).await;
}

/// `iters` warm no-op calls of `rec` with `egress` and as many bare spawns of `tool`,
/// alternating (which goes first alternates too), after `warm` of each, each once the pool has
/// caught up: both meet the same state of the machine (its drift), and neither runs beside the
/// previous sandbox's teardown or the pool's provisioning of a replacement.
async fn alternate(
    ex: &SandboxExecutor,
    rec: &ToolRecord,
    egress: &EgressGrant,
    tool: &Path,
    iters: usize,
    warm: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    ex.prewarm(rec, egress).await.unwrap();
    let (mut calls, mut spawns) = (Vec::with_capacity(iters), Vec::with_capacity(iters));
    for i in 0..iters + warm {
        for call_first in [i % 2 == 0, i % 2 != 0] {
            if call_first {
                let took = timed_noop(ex, rec, egress, 2).await;
                if i >= warm {
                    calls.push(took);
                }
            } else {
                caught_up(ex, rec, 2).await;
                let mut cmd = Command::new(tool);
                cmd.arg("noop");
                let took = run_once(cmd).expect("the bare spawn runs");
                if i >= warm {
                    spawns.push(took);
                }
            }
        }
    }
    (calls, spawns)
}

/// `iters` timed no-op calls of `rec` with `egress` through `ex` (after `warm` untimed ones);
/// with a warm pool of `pool`, each call waits until the pool has caught up.
async fn time_calls(
    ex: &SandboxExecutor,
    rec: &ToolRecord,
    egress: &EgressGrant,
    pool: usize,
    iters: usize,
    warm: usize,
) -> Vec<Duration> {
    ex.prewarm(rec, egress).await.unwrap();
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters + warm {
        let took = timed_noop(ex, rec, egress, pool).await;
        if i >= warm {
            samples.push(took);
        }
    }
    samples
}

/// `rounds` rounds of `concurrent` runs of `make`'s command at once (as [`run_once`], each from
/// a thread of its own): the wall time of a round, or `None` (said why) if a run failed.
fn concurrent_rounds(
    name: &str,
    rounds: usize,
    concurrent: usize,
    make: impl Fn() -> Command + Sync,
) -> Option<Row> {
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let failed = std::thread::scope(|s| {
            let runs: Vec<_> = (0..concurrent)
                .map(|_| s.spawn(|| run_once(make())))
                .collect();
            runs.into_iter().find_map(|r| {
                r.join()
                    .map_err(|_| "a run panicked".to_string())
                    .and_then(|r| r)
                    .err()
            })
        });
        if let Some(why) = failed {
            println!("{name:<48} skipped: {why}");
            return None;
        }
        times.push(start.elapsed());
    }
    Some(summarise(name, times))
}

/// Entries of `dir`.
fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|rd| rd.count()).unwrap_or(0)
}

/// The gVisor tier: the same no-op through `runsc` (fewer runs: each is a gVisor sandbox),
/// beside `runsc do` of the same binary; then an MCP session with the Python SDK server on
/// each tier; and their ratios to the namespace tier's `sandbox_rows`.
fn gvisor_tier(
    rt: &tokio::runtime::Runtime,
    backend: &dyn Fn() -> Arc<LinuxBackend>,
    tool: &Path,
    sandbox_rows: &[Row],
    iters: usize,
    warm: usize,
    run_dir: &Path,
) {
    let proxy_egress = EgressGrant::new(vec!["example.test:443".parse().unwrap()]);
    println!();
    let gv_iters = if support::smoke() {
        iters
    } else {
        iters.min(50)
    };
    let runsc_do = time_command("runsc do (host root, no network)", gv_iters, || {
        let mut c = Command::new("runsc");
        c.args(["--network=none", "do"]).arg(tool).arg("noop");
        c
    });
    let gvisor = || {
        Arc::new(
            GvisorBackend::new(None)
                .expect("this bench dispatches the sandbox init")
                .with_run_dir(run_dir),
        )
    };
    let gv_rec = builder_with(tool, Transport::StdioJson, "noop", &["noop"])
        .isolation(Isolation::Gvisor)
        .registered();
    let mut gvisor_rows = Vec::new();
    for (name, pool, egress) in [
        ("gvisor, cold, no egress", 0, EgressGrant::default()),
        ("gvisor, cold, with proxy", 0, proxy_egress.clone()),
        (
            "gvisor, warm pool (2), no egress",
            2,
            EgressGrant::default(),
        ),
    ] {
        let ex = SandboxExecutor::with_backend(backend())
            .with_gvisor(gvisor())
            .with_warm_pool(pool);
        let samples = rt.block_on(time_calls(
            &ex,
            &gv_rec,
            &egress,
            pool,
            gv_iters,
            warm.min(3),
        ));
        gvisor_rows.push(summarise(name, samples));
    }
    let py_iters = if support::smoke() {
        iters
    } else {
        iters.min(20)
    };
    let python = fixtures::python_bin().expect("the fixtures are installed");
    let server = fixtures::server_source("py_sdk_server.py").expect("the fixture server");
    let server = server.display().to_string();
    let py = |tier: Isolation| {
        builder_with(&python, Transport::McpStdio, "word_count", &[&server])
            .read_only(fixtures::python_read_only_paths().expect("the fixtures are installed"))
            .isolation(tier)
            .registered()
    };
    let both_tiers = SandboxExecutor::with_backend(backend()).with_gvisor(gvisor());
    let mut py_rows = Vec::new();
    for (name, rec) in [
        (
            "mcp exchange (python sdk), namespaces, cold",
            py(Isolation::Namespaces),
        ),
        (
            "mcp exchange (python sdk), gvisor, cold",
            py(Isolation::Gvisor),
        ),
    ] {
        let samples = rt.block_on(async {
            let mut samples = Vec::with_capacity(py_iters);
            for i in 0..py_iters + 1 {
                let start = Instant::now();
                let out = call(
                    &both_tiers,
                    &rec,
                    &json!({ "text": "a bb ccc" }),
                    &EgressGrant::default(),
                    Duration::from_secs(60),
                )
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                let took = start.elapsed();
                assert_eq!(out, json!({ "words": 3 }), "{name}");
                if i >= 1 {
                    samples.push(took);
                }
            }
            samples
        });
        py_rows.push(summarise(name, samples));
    }

    println!();
    let ratio = |a: &Row, b: &Row| a.ratio(b);
    if let Some(d) = &runsc_do {
        println!(
            "gvisor cold (no egress) p50 / runsc do p50 = {:.2}",
            ratio(&gvisor_rows[0], d)
        );
    }
    println!(
        "gvisor cold p50 / namespaces cold p50 (no egress) = {:.2}, (with proxy) = {:.2}",
        ratio(&gvisor_rows[0], &sandbox_rows[0]),
        ratio(&gvisor_rows[1], &sandbox_rows[1])
    );
    println!(
        "gvisor warm pool p50 / namespaces warm pool p50 (no egress) = {:.2}",
        ratio(&gvisor_rows[2], &sandbox_rows[2])
    );
    println!(
        "python mcp exchange, gvisor p50 / namespaces p50 = {:.2}",
        ratio(&py_rows[1], &py_rows[0])
    );
}
