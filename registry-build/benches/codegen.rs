//! Generation time: `registry::load` (every rule, Cedar binding) and `codegen::generate` over
//! 10, 100 and 1,000 synthetic records, written to a temporary directory.
//!
//! ```text
//! cargo bench -p escepine-registry-build --bench codegen            # 10, 100, 1000
//! cargo bench -p escepine-registry-build --bench codegen -- 100 500 # chosen sizes
//! ```
//!
//! Each synthetic record is a realistic tool: a payload with a `format: uri` string, a bounded
//! query, enums, a nested options object with a list of filter objects and a `$ref` into `$defs`;
//! an output with a list of result objects holding nested metadata. Classes cycle through
//! read-only, compensatable (with a compensation map onto the next, supersede, tool) and
//! supersede; every fifth tool joins the group `page-read`. The incremental `cargo build` of the
//! example is measured by `benches/incremental.sh`.
//!
//! Each size is measured twice in one run: with glibc's allocator, then with mimalloc (as a
//! build script may choose; README, "Generating code from records") in a second run of this
//! program with `ESCEPINE_BENCH_ALLOCATOR=mimalloc`, the allocator fixed before its first
//! allocation. Both pay the same dispatch (one relaxed atomic load per allocation).
//!
//! Run without `--bench` (as `cargo test --benches` does), it makes one quick pass over 10
//! records with each allocator, so the benchmark is exercised without taking a minute.
//!
//! `-- --emit DIR N` writes a crate into `DIR` instead: N synthetic records, the code the
//! `Builder` generates from them (`src/tools.rs`, registry embedded) and a `main.rs` that
//! includes it, for `benches/compile_generated.sh` to time rustc on the generated code.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use escepine_policy::load;
use escepine_registry::registry::Sources;
use escepine_registry_build as codegen;
use escepine_registry_build::Builder;
use serde_json::{json, Value};

/// The environment variable that chooses mimalloc for this program.
const ALLOCATOR_VAR: &std::ffi::CStr = c"ESCEPINE_BENCH_ALLOCATOR";

/// The allocator this program runs on: glibc's, or mimalloc when [`ALLOCATOR_VAR`] is
/// `mimalloc` at start. The choice is made on the first allocation (with `getenv`, which
/// allocates nothing) and never changes, so every block is freed by the allocator that made it.
struct Chosen;

/// 0 until chosen, then 1 (glibc) or 2 (mimalloc).
static CHOICE: AtomicU8 = AtomicU8::new(0);

fn use_mimalloc() -> bool {
    match CHOICE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            // SAFETY: the name is a NUL-terminated literal; `getenv`'s result is only compared.
            let value = unsafe { libc::getenv(ALLOCATOR_VAR.as_ptr()) };
            // SAFETY: a non-null `getenv` result is a NUL-terminated string of the environment.
            let mimalloc = !value.is_null()
                && unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes() == b"mimalloc";
            CHOICE.store(if mimalloc { 2 } else { 1 }, Ordering::Relaxed);
            mimalloc
        }
    }
}

// SAFETY: every call is forwarded to one of two allocators, the same one for the whole run.
unsafe impl GlobalAlloc for Chosen {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if use_mimalloc() {
            mimalloc::MiMalloc.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if use_mimalloc() {
            mimalloc::MiMalloc.alloc_zeroed(layout)
        } else {
            System.alloc_zeroed(layout)
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if use_mimalloc() {
            mimalloc::MiMalloc.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if use_mimalloc() {
            mimalloc::MiMalloc.realloc(ptr, layout, new_size)
        } else {
            System.realloc(ptr, layout, new_size)
        }
    }
}

#[global_allocator]
static GLOBAL: Chosen = Chosen;

fn record(i: usize, n: usize) -> Value {
    let id = format!("tool_{i:04}");
    let class = match i % 3 {
        0 => "read-only",
        1 if i + 1 < n => "compensatable",
        1 => "read-only",
        _ => "supersede",
    };
    let input = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": false,
        "required": ["url", "query"],
        "properties": {
            "url": {"type": "string", "format": "uri", "maxLength": 2048,
                    "description": "The page to work on."},
            "query": {"type": "string", "minLength": 1, "maxLength": 500,
                      "description": "What to look for."},
            "item_id": {"type": "string", "minLength": 1},
            "mode": {"type": "string", "enum": ["fast", "thorough", "exhaustive"]},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 50},
            "options": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "depth": {"type": "integer", "minimum": 0, "maximum": 5},
                    "include_images": {"type": "boolean"},
                    "languages": {"type": "array", "maxItems": 8,
                                  "items": {"type": "string", "enum": ["en", "de", "fr", "ja"]}},
                    "filters": {
                        "type": "array",
                        "maxItems": 10,
                        "items": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["field", "op", "value"],
                            "properties": {
                                "field": {"type": "string", "enum": ["title", "body", "host"]},
                                "op": {"type": "string", "enum": ["eq", "contains", "prefix"]},
                                "value": {"type": "string", "maxLength": 200}
                            }
                        }
                    },
                    "window": {"$ref": "#/$defs/Range"}
                }
            }
        },
        "$defs": {
            "Range": {
                "type": "object",
                "additionalProperties": false,
                "required": ["from"],
                "properties": {
                    "from": {"type": "integer", "minimum": 0},
                    "to": {"type": "integer", "minimum": 0}
                }
            }
        }
    });
    let output = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": false,
        "required": ["results", "item_id"],
        "properties": {
            "item_id": {"type": "string", "minLength": 1},
            "total": {"type": "integer", "minimum": 0},
            "results": {
                "type": "array",
                "maxItems": 50,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["url", "title"],
                    "properties": {
                        "url": {"type": "string", "format": "uri"},
                        "title": {"type": "string"},
                        "score": {"type": "number", "minimum": 0, "maximum": 1},
                        "meta": {
                            "type": "object",
                            "additionalProperties": false,
                            "properties": {
                                "lang": {"type": "string"},
                                "status": {"type": "integer", "minimum": 100, "maximum": 599},
                                "kind": {"type": "string", "enum": ["page", "pdf", "image"]}
                            }
                        }
                    }
                }
            }
        }
    });
    let mut r = json!({
        "tool_id": id,
        "version": "1.0.0",
        "description": format!("Synthetic tool {i}: searches, reads and reports on one page."),
        "input_schema": input,
        "output_schema": output,
        "side_effect_class": class,
        "accepts_credentials": false,
        "timeout_ms": 15000,
        "retry": {"max_attempts": 3, "backoff_ms": 500},
        "on_failure": ["halt", "halt_and_escalate", "compensate"],
        "endpoint": {"transport": "stdio-json", "command": "/bin/sh", "args": ["-c", "cat"]},
        "auth": {"secrets": ["EXAMPLE_API_KEY"]},
        "sandbox_profile": {"egress": ["api.example.com:443"], "filesystem": "workspace"}
    });
    if i.is_multiple_of(5) {
        r["action_groups"] = json!(["page-read"]);
    }
    if class == "compensatable" {
        r["compensation"] = json!({
            "tool": format!("tool_{:04}", i + 1),
            "map": {"url": "/input/url", "query": "/input/query", "item_id": "/output/item_id"}
        });
    }
    r
}

fn write_registry(dir: &Path, n: usize) {
    let records = dir.join("records");
    fs::create_dir_all(&records).expect("mkdir records");
    for i in 0..n {
        let text = serde_json::to_string_pretty(&record(i, n)).expect("json");
        fs::write(records.join(format!("tool_{i:04}.json")), text).expect("write record");
    }
    fs::write(
        dir.join("envelope.json"),
        r#"{"egress": ["api.example.com:443"]}"#,
    )
    .expect("write envelope");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// `--emit DIR N`: a crate whose `src/tools.rs` is the code generated for N records.
fn emit(dir: &Path, n: usize) {
    write_registry(dir, n);
    let contract = Path::new(env!("CARGO_MANIFEST_DIR")).join("contract");
    let contract = fs::canonicalize(&contract).expect("registry-build/contract");
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"generated-{n}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             publish = false\n\n[dependencies]\nescepine-contract = {{ path = {:?} }}\n\
             serde = {{ version = \"1\", features = [\"derive\"] }}\n\
             serde_json = {{ version = \"1\", features = [\"preserve_order\"] }}\n\n[workspace]\n",
            contract.display().to_string()
        ),
    )
    .expect("write Cargo.toml");
    let src = dir.join("src");
    fs::create_dir_all(&src).expect("mkdir src");
    fs::write(
        src.join("main.rs"),
        "#[allow(dead_code, clippy::all)]\nmod tools {\n    include!(\"tools.rs\");\n}\n\n\
         fn main() {\n    println!(\"{} tools\", tools::ToolId::ALL.len());\n}\n",
    )
    .expect("write main.rs");
    let t0 = Instant::now();
    Builder::new()
        .records(dir.join("records"))
        .envelope(dir.join("envelope.json"))
        .out_dir(&src)
        .file_name("tools.rs")
        .manifest_dir(dir)
        .cargo_directives(false)
        .compile()
        .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "generated {n} records into {} in {} ms",
        src.join("tools.rs").display(),
        ms(t0.elapsed())
    );
}

/// The benchmark (see the crate docs above).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--emit") {
        let dir = args.get(i + 1).expect("--emit DIR N");
        let n = args
            .get(i + 2)
            .and_then(|n| n.parse().ok())
            .expect("--emit DIR N");
        emit(Path::new(dir), n);
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let mut sizes: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = if full { vec![10, 100, 1000] } else { vec![10] };
    }

    let allocator = if use_mimalloc() { "mimalloc" } else { "glibc" };
    let var = ALLOCATOR_VAR.to_str().expect("an ASCII name");
    let child = std::env::var_os(var).is_some();
    if !child {
        println!(
            "| allocator | records | load (ms) | generate (ms) | load + generate (ms) | output (KiB) | output lines |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|");
    }
    for n in sizes {
        let tmp = tempfile::tempdir().expect("tempdir");
        write_registry(tmp.path(), n);
        let sources = Sources::new()
            .records(tmp.path().join("records"))
            .envelope(tmp.path().join("envelope.json"));
        let runs = if !full {
            1
        } else if n >= 1000 {
            3
        } else {
            7
        };
        let (mut loads, mut gens, mut totals) = (Vec::new(), Vec::new(), Vec::new());
        let mut size = (0, 0);
        for _ in 0..runs {
            let t0 = Instant::now();
            let registry = match load(&sources) {
                Ok(r) => r,
                Err(d) => panic!("synthetic records rejected:\n{}", d.render()),
            };
            let t1 = Instant::now();
            let code = match codegen::generate(&registry) {
                Ok(c) => c,
                Err(e) => panic!("generation failed: {e}"),
            };
            let t2 = Instant::now();
            std::hint::black_box(&code);
            loads.push(t1 - t0);
            gens.push(t2 - t1);
            totals.push(t2 - t0);
            size = (code.len(), code.lines().count());
        }
        println!(
            "| {allocator} | {n} | {} | {} | {} | {} | {} |",
            ms(median(loads)),
            ms(median(gens)),
            ms(median(totals)),
            size.0 / 1024,
            size.1
        );
    }
    if !child {
        let exe = std::env::current_exe().expect("this benchmark's path");
        let status = Command::new(exe)
            .args(&args)
            .env(var, "mimalloc")
            .status()
            .expect("run this benchmark again with mimalloc");
        assert!(status.success(), "the mimalloc run failed: {status}");
    }
}
