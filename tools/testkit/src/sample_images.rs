//! Images the tests build from what the fixtures installed (`escepine_testkit::fixtures`) and
//! from the workspace's own test binaries, written as OCI layouts and pushed to a loopback
//! `docker-registry` (`escepine_testkit::registry`).

use std::path::{Path, PathBuf};

use crate::fixtures;
use crate::image::{push, BuiltImage, Compression, ImageBuilder, Layer};

/// One layer holding `files` (host path → path in the image).
fn layer_of(files: &[(PathBuf, PathBuf)], compression: Compression) -> Layer {
    files
        .iter()
        .fold(Layer::new(compression), |layer, (host, inside)| {
            let inside = inside.display().to_string();
            layer.host_file(host, inside.trim_start_matches('/'))
        })
}

/// The Python image: Debian's python3.11, its libraries and standard library, the MCP Python
/// SDK's site-packages and `py_sdk_server.py` (entrypoint, env and working directory from the
/// fixtures), written as a layout under `dir`.
pub fn python_image(dir: &Path) -> BuiltImage {
    let mut files = fixtures::python_image_files().expect("the fixtures are installed");
    let bytecode = python_bytecode(&files, &dir.join("python-bytecode"));
    files.extend(bytecode);
    let config = fixtures::python_image_config();
    let mut builder = ImageBuilder::new()
        .layer(layer_of(&files, Compression::Gzip))
        .entrypoint(config.entrypoint.clone())
        .working_dir(&config.working_dir);
    for (k, v) in &config.env {
        builder = builder.env(k, v);
    }
    builder
        .write_layout(dir.join("python"))
        .expect("the python layout")
}

/// Bytecode of the image's Python files, compiled by the image's own interpreter as the image
/// holds them, into `staging`: `(pyc, path in the image)` pairs. `unchecked-hash` pycs, which the
/// interpreter uses without comparing them to their source's time and size — the layer's files
/// carry no times of the host — so a server in the image does not compile its SDK at every
/// start (the root is read-only: it could not keep what it compiled).
fn python_bytecode(files: &[(PathBuf, PathBuf)], staging: &Path) -> Vec<(PathBuf, PathBuf)> {
    const COMPILE: &str = r#"
import json, py_compile, sys
done = []
for host, inside, cfile in json.load(sys.stdin):
    try:
        py_compile.compile(host, cfile=cfile, dfile=inside, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        done.append(cfile)
    except py_compile.PyCompileError:
        pass  # not Python 3 source (test data of a package): left without bytecode
json.dump(done, sys.stdout)
"#;
    let tag = "cpython-311";
    let jobs: Vec<(PathBuf, PathBuf, PathBuf)> = files
        .iter()
        .filter(|(_, inside)| inside.extension().is_some_and(|e| e == "py"))
        .filter_map(|(host, inside)| {
            let stem = inside.file_stem()?.to_str()?;
            let pyc = inside
                .parent()?
                .join("__pycache__")
                .join(format!("{stem}.{tag}.pyc"));
            let cfile = staging.join(pyc.strip_prefix("/").ok()?);
            Some((host.clone(), pyc, cfile))
        })
        .collect();
    let input: Vec<(String, String, String)> = jobs
        .iter()
        .map(|(h, i, c)| {
            (
                h.display().to_string(),
                i.display().to_string(),
                c.display().to_string(),
            )
        })
        .collect();
    let mut child = std::process::Command::new(fixtures::PYTHON_BASE)
        .args(["-I", "-c", COMPILE])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3.11");
    serde_json::to_writer(child.stdin.take().expect("stdin"), &input).expect("the job list");
    let out = child.wait_with_output().expect("the compile");
    assert!(
        out.status.success(),
        "compiling the image's bytecode failed"
    );
    let done: std::collections::BTreeSet<String> =
        serde_json::from_slice(&out.stdout).expect("the compiled list");
    jobs.into_iter()
        .filter(|(_, _, c)| done.contains(&c.display().to_string()))
        .map(|(_, pyc, cfile)| (cfile, pyc))
        .collect()
}

/// The Node image: node, its libraries, the TypeScript SDK's `node_modules` and
/// `node_sdk_server.mjs`, in a zstd layer.
pub fn node_image(dir: &Path) -> BuiltImage {
    let files = fixtures::node_image_files().expect("the fixtures are installed");
    let config = fixtures::node_image_config();
    let mut builder = ImageBuilder::new()
        .layer(layer_of(&files, Compression::Zstd))
        .entrypoint(config.entrypoint.clone())
        .working_dir(&config.working_dir);
    for (k, v) in &config.env {
        builder = builder.env(k, v);
    }
    builder
        .write_layout(dir.join("node"))
        .expect("the node layout")
}

/// The host's shared libraries `binary` loads (`ldd`), the loader included.
pub fn libraries_of(binary: &Path) -> Vec<PathBuf> {
    let out = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .expect("ldd");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')))
        .map(PathBuf::from)
        .collect()
}

/// An image holding `binary` at `inside` and its libraries at their host paths, with
/// `inside` as its entrypoint.
pub fn binary_image(dir: &Path, name: &str, binary: &Path, inside: &str) -> BuiltImage {
    let mut files = vec![(binary.to_path_buf(), PathBuf::from(inside))];
    for lib in libraries_of(binary) {
        let real = std::fs::canonicalize(&lib).expect("a library");
        files.push((real, lib));
    }
    ImageBuilder::new()
        .layer(layer_of(&files, Compression::Gzip))
        .entrypoint([inside])
        .write_layout(dir.join(name))
        .expect("the layout")
}

/// `built` pushed to the registry at `addr` as `repo`: its pinned reference.
pub async fn pushed(built: &BuiltImage, addr: &str, repo: &str) -> String {
    let digest = push(&built.dir, addr, repo).await.expect("pushed");
    format!("{addr}/{repo}@{digest}")
}
