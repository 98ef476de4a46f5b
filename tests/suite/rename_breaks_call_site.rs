//! A field renamed in a record breaks, at compile time, the call site that still uses the old
//! name: the generated payload type is the record's schema.
//!
//! The example crate `examples/catalog-client` and the catalog's records, policies and envelope
//! are copied into a workspace of their own (path dependencies pointing back at this
//! workspace's crates, the same lock file, this workspace's target directory so nothing already
//! built is built again). The unmodified copy builds; after `url` is renamed `page_url` in
//! `firecrawl_scrape`'s `input_schema`, the build fails with rustc's error at the call site
//! `firecrawl_scrape::Input { url: … }` — not in `build.rs`, whose registration rules still pass.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// This workspace's root.
fn main_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// This workspace's target directory (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
fn target_dir() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().map(Path::to_path_buf).unwrap_or(tmp)
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    }
    fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Copy the files (not sub-directories) of `from` into `to`.
fn copy_files(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read_dir").flatten() {
        let p = entry.path();
        if p.is_file() {
            let name = p.file_name().expect("file name");
            fs::copy(&p, to.join(name)).expect("copy");
        }
    }
}

/// Copy a directory tree.
fn copy_tree(from: &Path, to: &Path) {
    copy_files(from, to);
    for entry in fs::read_dir(from).expect("read_dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            copy_tree(&p, &to.join(p.file_name().expect("dir name")));
        }
    }
}

/// Rewrite every `path = "rel"` of a manifest to the absolute path of `base/rel`.
fn absolutize_paths(manifest: &str, base: &Path) -> String {
    manifest
        .lines()
        .map(|line| {
            let Some(start) = line.find("path = \"") else {
                return line.to_string();
            };
            let value_start = start + "path = \"".len();
            let Some(len) = line[value_start..].find('"') else {
                return line.to_string();
            };
            let rel = &line[value_start..value_start + len];
            let abs = base.join(rel);
            let abs = fs::canonicalize(&abs).unwrap_or(abs);
            format!(
                "{}{}{}",
                &line[..value_start],
                abs.display(),
                &line[value_start + len..]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `[workspace.package]`, `[workspace.dependencies]` and `[profile.*]` tables of this
/// workspace's manifest, path dependencies made absolute.
fn shared_tables(manifest: &str, base: &Path) -> String {
    let mut keep = false;
    let mut out = String::new();
    for line in manifest.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            keep = trimmed.starts_with("[workspace.package]")
                || trimmed.starts_with("[workspace.dependencies]")
                || trimmed.starts_with("[profile");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    absolutize_paths(&out, base)
}

/// Lay out `<dir>/examples/catalog-client` and `<dir>/tools/{records,policies,sops,envelope.json}`
/// as a workspace of their own; returns the example's directory.
fn copy_example(dir: &Path) -> PathBuf {
    let root = main_root();
    let example = dir.join("examples/catalog-client");
    copy_tree(
        &root.join("examples/catalog-client/src"),
        &example.join("src"),
    );
    fs::copy(
        root.join("examples/catalog-client/build.rs"),
        example.join("build.rs"),
    )
    .expect("copy build.rs");
    write(
        &example.join("Cargo.toml"),
        &absolutize_paths(
            &read(&root.join("examples/catalog-client/Cargo.toml")),
            &root.join("examples/catalog-client"),
        ),
    );
    copy_files(&root.join("tools/records"), &dir.join("tools/records"));
    copy_files(&root.join("tools/policies"), &dir.join("tools/policies"));
    copy_files(&root.join("tools/sops"), &dir.join("tools/sops"));
    fs::copy(
        root.join("tools/envelope.json"),
        dir.join("tools/envelope.json"),
    )
    .expect("copy envelope");

    // Endpoints naming a workspace binary resolve against the copy's workspace: declare each
    // such binary in a stub member (never built here).
    let stubs = dir.join("endpoint-stubs");
    write(
        &stubs.join("Cargo.toml"),
        "[package]\nname = \"endpoint-stubs\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n",
    );
    write(&stubs.join("src/lib.rs"), "");
    for entry in fs::read_dir(dir.join("tools/records"))
        .expect("records")
        .flatten()
    {
        let record: Value = serde_json::from_str(&read(&entry.path())).expect("record JSON");
        if let Some(cmd) = record.pointer("/endpoint/command").and_then(Value::as_str) {
            if !cmd.contains('/') {
                write(&stubs.join(format!("src/bin/{cmd}.rs")), "fn main() {}\n");
            }
        }
    }

    let manifest = read(&root.join("Cargo.toml"));
    write(
        &dir.join("Cargo.toml"),
        &format!(
            "[workspace]\nmembers = [\"examples/catalog-client\", \"endpoint-stubs\"]\n\
             resolver = \"2\"\n\n{}",
            shared_tables(&manifest, &root)
        ),
    );
    fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
    example
}

/// `cargo build` in `dir`, sharing this workspace's target directory and registry cache.
fn cargo_build(dir: &Path) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir)
        .args(["build", "--offline", "--message-format=short"])
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_TERM_COLOR", "never");
    // Variables cargo set for this test (CARGO_PKG_*, CARGO_MANIFEST_DIR…) are not the copy's.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_TARGET_DIR" {
            cmd.env_remove(key.as_ref());
        }
    }
    cmd.output().expect("run cargo")
}

/// Rename input property `from` to `to` in a record file (in `properties` and `required`).
fn rename_input_field(record: &Path, from: &str, to: &str) {
    let mut v: Value = serde_json::from_str(&read(record)).expect("record JSON");
    let schema = v
        .get_mut("input_schema")
        .and_then(Value::as_object_mut)
        .expect("input_schema");
    let props = schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .expect("properties");
    let field = props.remove(from).expect("field to rename");
    props.insert(to.to_string(), field);
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        for r in required.iter_mut() {
            if r.as_str() == Some(from) {
                *r = Value::from(to);
            }
        }
    }
    write(record, &serde_json::to_string_pretty(&v).expect("JSON"));
}

#[test]
fn renamed_record_field_fails_the_build_at_the_call_site() {
    // A fixed directory under the target dir: the copy's package keeps one id across runs, so
    // repeated runs rebuild only the example itself.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rename_breaks_call_site");
    let _ = fs::remove_dir_all(&dir);
    let example = copy_example(&dir);

    let pristine = cargo_build(&example);
    // What the copy had to compile (run with --nocapture): only the example, its build script
    // and crates whose features differ from this workspace's build.
    for line in String::from_utf8_lossy(&pristine.stderr).lines() {
        if line.trim_start().starts_with("Compiling") {
            eprintln!("copy: {}", line.trim());
        }
    }
    assert!(
        pristine.status.success(),
        "the unmodified copy must build:\n{}",
        String::from_utf8_lossy(&pristine.stderr)
    );

    rename_input_field(
        &dir.join("tools/records/firecrawl_scrape.json"),
        "url",
        "page_url",
    );
    let renamed = cargo_build(&example);
    let stderr = String::from_utf8_lossy(&renamed.stderr);
    assert!(
        !renamed.status.success(),
        "the renamed copy must not build:\n{stderr}"
    );
    assert!(
        !stderr.contains("failed to run custom build command"),
        "the record is still valid: build.rs must pass and rustc must fail:\n{stderr}"
    );
    assert!(
        stderr.contains("has no field named `url`") && stderr.contains("src/main.rs"),
        "rustc must reject the call site's `url` field:\n{stderr}"
    );

    let _ = fs::remove_dir_all(&dir);
}
