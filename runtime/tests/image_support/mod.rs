//! Images the tests build from what the fixtures installed (`escepine_testkit::fixtures`) and
//! from the workspace's own test binaries, written as OCI layouts and pushed to a loopback
//! `docker-registry` (`escepine_testkit::registry`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use escepine_testkit::fixtures;
use escepine_testkit::image::{push, BuiltImage, Compression, ImageBuilder, Layer};

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
    let files = fixtures::python_image_files().expect("the fixtures are installed");
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
