//! Cost of image roots: the same no-op tool (`escepine-hostile noop`) on the binary root
//! (the binary and its libraries copied into the sandbox's root) and on an OCI image root
//! holding exactly that binary and those libraries, cold and from a warm pool, side by side;
//! the first sandbox of a new spec (the one-off copy of the root's tree); the first fetch of
//! the Python MCP server's image (~68 MB unpacked) from a real registry on loopback, and the
//! unpacking's share of it; and MCP sessions with that server (the official Python SDK,
//! `word_count`) as a plain process, in a sandbox on read-only host paths, and in a sandbox on
//! its image.
//!
//! `cargo bench -p escepine-runtime --bench images` (as root: real namespaces; needs Debian's
//! `docker-registry` and the fixtures `.ci/fixtures` installs). `ESCEPINE_BENCH_ITERS` sets the
//! timed runs per row (default 100), `ESCEPINE_BENCH_FETCH_RUNS` the runs of the fetch and of
//! the first sandbox (default 5). Prints p50 and p99 per row and the ratios.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_contract::{EgressGrant, ImageRef, Transport};
use escepine_oci::{Access, ImageStore, Unpacked};
use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::executor::{Executor, ProcessExecutor};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_sandbox::LinuxBackend;
use escepine_sandbox::ToolImage;
use escepine_testkit::fixtures;
use escepine_testkit::image::BuiltImage;
use escepine_testkit::registry::Registry;
use escepine_testkit::sample_images as image_support;
use serde_json::json;
use support::{
    builder_with, call, provision_execute_destroy, record_with, summarise, testkit_bin, Row,
};

use escepine_testkit::bench::sandboxed as support;

const HOSTILE: &str = "escepine-hostile";
/// Where the no-op image holds the tool.
const NOOP_IN_IMAGE: &str = "/usr/local/bin/escepine-hostile";
/// Untimed calls before each row's timed ones (none in a smoke run).
fn warm_up() -> usize {
    support::warm_up(10)
}
/// Untimed MCP sessions before the timed ones (each starts a Python interpreter).
fn mcp_warm_up() -> usize {
    support::warm_up(3)
}

fn main() {
    // The sandboxes' init is this program, as in every program that starts sandboxes.
    escepine_sandbox::init::dispatch();
    let iters = support::iters(100);
    let runs: usize = if support::smoke() {
        1
    } else {
        std::env::var("ESCEPINE_BENCH_FETCH_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5)
    };
    println!("load average at the start: {}", load_average());
    let tool = testkit_bin(HOSTILE, "ESCEPINE_HOSTILE");
    println!(
        "no-op tool: {} noop; {iters} timed runs per row, {runs} fetch runs\n",
        tool.display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let scratch = tempfile::Builder::new()
        .prefix("escepine-bench-images-")
        .tempdir_in("/var/tmp")
        .expect("a scratch directory");
    let registry = Registry::start().expect("docker-registry on loopback");

    // The two images, pushed to the loopback registry and unpacked into one store.
    let noop_built = image_support::binary_image(scratch.path(), "noop", &tool, NOOP_IN_IMAGE);
    let py_built = image_support::python_image(scratch.path());
    let addr = registry.addr();
    let noop_ref = rt.block_on(image_support::pushed(&noop_built, &addr, "bench/noop"));
    let py_ref = rt.block_on(image_support::pushed(&py_built, &addr, "bench/python"));
    let store = ImageStore::open(scratch.path().join("store")).expect("a store");
    let noop_image = tool_image(&noop_ref, ensure(&rt, &store, &noop_ref));
    let py_image = tool_image(&py_ref, ensure(&rt, &store, &py_ref));
    let (py_bytes, py_files) = tree_size(&py_image.rootfs);
    println!(
        "python image: {} layer(s) (gzip), {:.1} MB compressed; unpacked {:.1} MB in \
         {py_files} files\n",
        py_built.layers.len(),
        mb(layout_bytes(&py_built)),
        mb(py_bytes),
    );

    let run_dir = support::run_dir();
    let backend = || {
        Arc::new(
            LinuxBackend::new()
                .expect("this bench dispatches the sandbox init")
                .with_run_dir(run_dir.path()),
        )
    };
    let bin_rec = record_with(&tool, Transport::StdioJson, "noop", &["noop"]);
    let img_rec = image_record(&noop_ref, Transport::StdioJson, "noop", &["noop"]);

    // (a), (b): a fresh sandbox per call, as the caller sees it (the teardown runs after the
    // result), cold and from a warm pool; the two roots alternate call by call.
    let mut rows = Vec::new();
    for pool in [0, 2] {
        let executors = [
            SandboxExecutor::with_backend(backend()).with_warm_pool(pool),
            SandboxExecutor::with_backend(backend())
                .with_image(noop_image.clone())
                .with_warm_pool(pool),
        ];
        let recs = [&bin_rec, &img_rec];
        let samples = rt.block_on(async {
            for (ex, rec) in executors.iter().zip(recs) {
                ex.prewarm(rec, &escepine_contract::EgressGrant::default())
                    .await
                    .expect("prewarm");
            }
            let mut samples = [Vec::with_capacity(iters), Vec::with_capacity(iters)];
            for i in 0..iters + warm_up() {
                for k in order(i) {
                    if pool > 0 {
                        // A call rate the pools keep up with (as between an agent's calls): the
                        // previous calls' replacements are ready, in both pools.
                        for ex in &executors {
                            wait_ready(ex, pool).await;
                        }
                    }
                    let took = noop_call(&executors[k], recs[k]).await;
                    if i >= warm_up() {
                        samples[k].push(took);
                    }
                }
            }
            samples
        });
        let [bin, img] = samples;
        let kind = if pool == 0 {
            "cold".to_string()
        } else {
            format!("warm pool ({pool})")
        };
        rows.push(summarise(&format!("binary root, {kind}"), bin));
        rows.push(summarise(&format!("image root, {kind}"), img));
    }

    // Provision + execute + destroy, each awaited, through the executor's backend.
    let awaited = rt.block_on(async {
        let executors = [
            SandboxExecutor::with_backend(backend()),
            SandboxExecutor::with_backend(backend()).with_image(noop_image.clone()),
        ];
        let mut specs = Vec::new();
        for (ex, rec) in executors.iter().zip([&bin_rec, &img_rec]) {
            specs.push(
                ex.spec(rec, &escepine_contract::EgressGrant::default())
                    .await
                    .expect("a spec"),
            );
        }
        let mut samples = [Vec::with_capacity(iters), Vec::with_capacity(iters)];
        for i in 0..iters + warm_up() {
            for k in order(i) {
                let took = provision_execute_destroy(&executors[k], &specs[k]).await;
                if i >= warm_up() {
                    samples[k].push(took);
                }
            }
        }
        samples
    });
    let [bin, img] = awaited;
    rows.push(summarise("binary root, cold, destroy awaited", bin));
    rows.push(summarise("image root, cold, destroy awaited", img));

    // The first sandbox of a spec makes the spec's root (a copy of the tree) once; later ones
    // clone it. A fresh backend per run, its zygote started by another spec first.
    println!();
    let py_mcp_img = image_record(&py_ref, Transport::McpStdio, "word_count", &[]);
    let true_rec = record_with(
        Path::new("/usr/bin/true"),
        Transport::StdioJson,
        "true",
        &[],
    );
    let mut first = BTreeMap::<&str, (Vec<Duration>, Vec<Duration>)>::new();
    for _ in 0..runs {
        rt.block_on(async {
            let ex = SandboxExecutor::with_backend(backend())
                .with_image(noop_image.clone())
                .with_image(py_image.clone());
            let warm = ex
                .spec(&true_rec, &escepine_contract::EgressGrant::default())
                .await
                .expect("a spec");
            let sandbox = ex.backend().provision(warm).await.expect("provision");
            ex.backend().destroy(sandbox).await;
            for (name, rec) in [
                ("binary root (no-op)", &bin_rec),
                ("image root (no-op image)", &img_rec),
                ("image root (python image)", &py_mcp_img),
            ] {
                let spec = ex
                    .spec(rec, &escepine_contract::EgressGrant::default())
                    .await
                    .expect("a spec");
                let entry = first.entry(name).or_default();
                for times in [&mut entry.0, &mut entry.1] {
                    let start = Instant::now();
                    let sandbox = ex
                        .backend()
                        .provision(Arc::clone(&spec))
                        .await
                        .expect("provision");
                    times.push(start.elapsed());
                    ex.backend().destroy(sandbox).await;
                }
            }
        });
    }
    let mut first_rows = Vec::new();
    for (name, (firsts, seconds)) in first {
        let a = summarise(&format!("first provisioning, {name}"), firsts);
        let b = summarise(&format!("second provisioning, {name}"), seconds);
        first_rows.push((a, b));
    }

    // (c): the first fetch of the python image into an empty store; then a second `ensure`
    // (cached: no request); then the unpacking alone, in another empty store given the
    // verified blobs (hard links). The stores are on /var/tmp (disk) and stay until the end:
    // no run follows a deletion. `sync` before each step.
    println!();
    let image = ImageRef::parse(&py_ref).expect("a pinned reference");
    let (mut full, mut cached, mut unpack) = (Vec::new(), Vec::new(), Vec::new());
    let mut fetched = None;
    for run in 0..runs {
        let dir = |name: &str| {
            let d = scratch.path().join(format!("{name}-{run}"));
            ImageStore::open(&d).expect("a store")
        };
        let (store, unpack_only) = (dir("store"), dir("unpack"));
        let (took, u) = timed_ensure(&rt, &store, &image);
        assert!(u.fetched.bytes > 0, "the first fetch fetched nothing");
        fetched = Some(u.fetched);
        let (again, u2) = timed_ensure(&rt, &store, &image);
        assert_eq!(u2.fetched.bytes, 0, "a cached image is fetched again");
        link_blobs(store.root(), unpack_only.root());
        let (unpacked, u3) = timed_ensure(&rt, &unpack_only, &image);
        assert_eq!(u3.fetched.bytes, 0, "the blobs were given");
        assert_eq!(tree_size(&u3.rootfs), (py_bytes, py_files));
        println!(
            "fetch run {}: first fetch {:.3} s, of which unpacking ≈ {:.3} s; cached {:.3} ms",
            run + 1,
            took.as_secs_f64(),
            unpacked.as_secs_f64(),
            again.as_secs_f64() * 1e3
        );
        full.push(took);
        cached.push(again);
        unpack.push(unpacked);
    }
    let fetched = fetched.expect("at least one fetch run");
    let full = summarise("first fetch, python image", full);
    let unpack = summarise("… unpacking alone (blobs cached)", unpack);
    let cached = summarise("second ensure (cached)", cached);

    // (d): MCP sessions (initialize, tools/list, tools/call, close) with the Python SDK server,
    // the three forms alternating session by session.
    println!();
    let python = fixtures::python_bin().expect("the fixtures are installed");
    let server = fixtures::server_source("py_sdk_server.py").expect("the fixture server");
    let server = server.display().to_string();
    let proc_rec = record_with(&python, Transport::McpStdio, "word_count", &[&server]);
    let ro_rec = builder_with(&python, Transport::McpStdio, "word_count", &[&server])
        .read_only(fixtures::python_read_only_paths().expect("the fixtures are installed"))
        .registered();
    let sandbox: Arc<dyn Executor> =
        Arc::new(SandboxExecutor::with_backend(backend()).with_image(py_image.clone()));
    let mcp: [(&str, &ToolRecord, Arc<dyn Executor>); 3] = [
        (
            "mcp exchange (python), process executor",
            &proc_rec,
            Arc::new(ProcessExecutor::new()),
        ),
        (
            "mcp exchange (python), sandbox, read-only paths",
            &ro_rec,
            Arc::clone(&sandbox),
        ),
        (
            "mcp exchange (python), sandbox, image root",
            &py_mcp_img,
            sandbox,
        ),
    ];
    let mcp_samples = rt.block_on(async {
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(iters); mcp.len()];
        for i in 0..iters + mcp_warm_up() {
            for (k, (_, rec, ex)) in mcp.iter().enumerate() {
                let payload = json!({ "text": "a bb ccc" });
                let start = Instant::now();
                let out = call(
                    ex.as_ref(),
                    rec,
                    &payload,
                    &EgressGrant::default(),
                    Duration::from_secs(30),
                )
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", mcp[k].0));
                let took = start.elapsed();
                assert_eq!(out, json!({ "words": 3 }), "{}", mcp[k].0);
                if i >= mcp_warm_up() {
                    samples[k].push(took);
                }
            }
        }
        samples
    });
    let mcp_rows: Vec<Row> = mcp
        .iter()
        .zip(mcp_samples)
        .map(|((name, _, _), s)| summarise(name, s))
        .collect();

    println!("\nload average at the end: {}\n", load_average());
    let both = |a: &Row, b: &Row| format!("p50 {:.2}, p99 {:.2}", a.ratio(b), a.ratio_p99(b));
    println!(
        "image root / binary root, cold:            {}",
        both(&rows[1], &rows[0])
    );
    println!(
        "image root / binary root, warm pool:       {}",
        both(&rows[3], &rows[2])
    );
    println!(
        "image root / binary root, destroy awaited: {}",
        both(&rows[5], &rows[4])
    );
    for (a, b) in &first_rows {
        println!(
            "{}: {:.2} ms more than the second (p50)",
            a.name,
            (a.p50.as_secs_f64() - b.p50.as_secs_f64()) * 1e3
        );
    }
    println!(
        "first fetch: {} blobs, {:.1} MB in {:.3} s (p50) = {:.0} MB/s; unpacking ≈ {:.0} % of \
         it; cached ensure {:.3} ms",
        fetched.blobs,
        mb(fetched.bytes),
        full.p50.as_secs_f64(),
        mb(fetched.bytes) / full.p50.as_secs_f64(),
        unpack.ratio(&full) * 100.0,
        cached.p50.as_secs_f64() * 1e3
    );
    println!(
        "mcp, sandbox (read-only paths) / process:  {}",
        both(&mcp_rows[1], &mcp_rows[0])
    );
    println!(
        "mcp, sandbox (image root) / process:       {}",
        both(&mcp_rows[2], &mcp_rows[0])
    );
    println!(
        "mcp, image root / read-only paths:         {}",
        both(&mcp_rows[2], &mcp_rows[1])
    );
}

/// The two indices in the order call `i` runs them: alternating, so that neither row always
/// follows the other.
fn order(i: usize) -> [usize; 2] {
    if i.is_multiple_of(2) {
        [0, 1]
    } else {
        [1, 0]
    }
}

/// `reference` ensured in `store` over plain HTTP.
fn ensure(rt: &tokio::runtime::Runtime, store: &ImageStore, reference: &str) -> Unpacked {
    let image = ImageRef::parse(reference).expect("a pinned reference");
    rt.block_on(store.ensure(
        &image,
        Access {
            plain_http: true,
            ..Access::default()
        },
    ))
    .unwrap_or_else(|e| panic!("{reference}: {e}"))
}

/// `image` ensured in `store` over plain HTTP, after a `sync` (so that nothing is left to
/// write back from before): the time it took.
fn timed_ensure(
    rt: &tokio::runtime::Runtime,
    store: &ImageStore,
    image: &ImageRef,
) -> (Duration, Unpacked) {
    rustix::fs::sync();
    rt.block_on(async {
        let start = Instant::now();
        let u = store
            .ensure(
                image,
                Access {
                    plain_http: true,
                    ..Access::default()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{image}: {e}"));
        (start.elapsed(), u)
    })
}

/// The blobs of the store at `from` hard-linked into the store at `to`.
fn link_blobs(from: &Path, to: &Path) {
    let (from, to) = (from.join("blobs/sha256"), to.join("blobs/sha256"));
    for e in std::fs::read_dir(&from).expect("the blobs").flatten() {
        std::fs::hard_link(e.path(), to.join(e.file_name())).expect("a hard link");
    }
}

/// The unpacked image as the sandbox uses it.
fn tool_image(reference: &str, u: Unpacked) -> ToolImage {
    ToolImage {
        reference: reference.to_string(),
        rootfs: u.rootfs,
        entrypoint: u.config.entrypoint,
        cmd: u.config.cmd,
        env: u.config.env,
        working_dir: u.config.working_dir,
    }
}

/// A record of tool `id` running on the image `reference`: its config's `Entrypoint`, with
/// `args` in place of its `Cmd` when given.
fn image_record(reference: &str, transport: Transport, id: &str, args: &[&str]) -> ToolRecord {
    RecordBuilder::new(id)
        .source("<bench>")
        .description("no-op")
        .transport(transport)
        .image(reference)
        .args(args)
        .registered()
}

/// The time of one no-op call.
async fn noop_call(ex: &SandboxExecutor, rec: &ToolRecord) -> Duration {
    let payload = json!({});
    let start = Instant::now();
    let out = call(
        ex,
        rec,
        &payload,
        &EgressGrant::default(),
        Duration::from_secs(10),
    )
    .await
    .expect("the no-op runs");
    let took = start.elapsed();
    assert_eq!(out, json!({}));
    took
}

/// Waits (up to 200 ms) until the pool of `ex` holds `size` ready sandboxes.
async fn wait_ready(ex: &SandboxExecutor, size: usize) {
    if let Some(pool) = ex.pool() {
        escepine_testkit::warm_pool::holds(pool, size, Duration::from_millis(200)).await;
    }
}

/// The bytes of the regular files under `dir` and their number.
fn tree_size(dir: &Path) -> (u64, u64) {
    let mut stack = vec![dir.to_path_buf()];
    let (mut bytes, mut files) = (0, 0);
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() {
                bytes += meta.len();
                files += 1;
            }
        }
    }
    (bytes, files)
}

/// The bytes of the layer blobs of `built`.
fn layout_bytes(built: &BuiltImage) -> u64 {
    built
        .layers
        .iter()
        .filter_map(|d| {
            let hex = d.trim_start_matches("sha256:");
            std::fs::metadata(built.dir.join("blobs/sha256").join(hex)).ok()
        })
        .map(|m| m.len())
        .sum()
}

/// Megabytes (10^6 bytes).
fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// The first three fields of `/proc/loadavg`.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
