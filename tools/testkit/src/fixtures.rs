//! Where the tests find the real MCP servers that `.ci/fixtures` installs, and what to put in an
//! image or bind read-only to run them.
//!
//! `.ci/fixtures` installs into [`root`] (`$ESCEPINE_FIXTURES`, by default
//! `/var/tmp/escepine-fixtures`):
//! - `py/`: a virtualenv of Debian's `/usr/bin/python3.11` with the official MCP Python SDK
//!   (`mcp`), `mcp-server-time` and `mcp-server-git`;
//! - `node/node_modules/`: the official TypeScript SDK (`@modelcontextprotocol/sdk`), `zod`,
//!   `@modelcontextprotocol/server-memory` and `oidc-provider` (the OAuth tests' authorization
//!   server, [`crate::oidc`]);
//! - `versions.txt`, written last.
//!
//! The fixture servers written with the two SDKs live in the repository, under
//! `runtime/tests/fixtures/mcp/` ([`server_source`]).
//!
//! Two ways to run them in a sandbox:
//! - an image: [`python_image_files`] / [`node_image_files`] list `(host file, path in the
//!   image)` pairs, and [`python_image_config`] / [`node_image_config`] the entrypoint, `Env` and
//!   working directory the image config needs;
//! - read-only host paths, bound at the same path: [`python_read_only_paths`] /
//!   [`node_read_only_paths`].
//!
//! Every function that needs an installed file answers [`FixtureError::Missing`] naming the file
//! and saying to run `.ci/fixtures` when it is not there.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that names the fixtures' folder.
pub const ROOT_VAR: &str = "ESCEPINE_FIXTURES";
/// The fixtures' folder when [`ROOT_VAR`] is unset.
pub const DEFAULT_ROOT: &str = "/var/tmp/escepine-fixtures";

/// Debian's interpreter the virtualenv is made from (a small installation an image can copy).
pub const PYTHON_BASE: &str = "/usr/bin/python3.11";
/// Debian's standard library of [`PYTHON_BASE`].
pub const PYTHON_STDLIB: &str = "/usr/lib/python3.11";
/// The Node.js binary.
pub const NODE: &str = "/usr/bin/node";

/// Where an image holds the fixture server, the site-packages and the `node_modules`.
pub const IMAGE_APP: &str = "/app";

/// Folders of [`PYTHON_STDLIB`] an image leaves out: tests, GUI, installers, the static
/// library and build files, bytecode caches (checked against the sources' modification times,
/// which a layer does not carry: the image tests compile `unchecked-hash` pycs instead).
const STDLIB_SKIP: &[&str] = &[
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "config-3.11-x86_64-linux-gnu",
    "__pycache__",
    // The OTLP receiver's packages (gRPC, protobuf, the OTLP classes): test fixtures of the
    // host, never imported by a tool in an image.
    "grpc",
    "google",
    "proto",
];

/// What of the virtualenv's site-packages an image leaves out: the installers (the image never
/// installs anything) and bytecode caches.
const SITE_SKIP: &[&str] = &[
    "pip",
    "setuptools",
    "pkg_resources",
    "_distutils_hack",
    "distutils-precedence.pth",
    "__pycache__",
];

/// What of `node_modules` an image leaves out: npm's links to executables and its own lock copy.
const NODE_MODULES_SKIP: &[&str] = &[".bin", ".package-lock.json"];

/// Why a fixture path could not be given.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// A file or folder `.ci/fixtures` (or the machine) should have put there is absent.
    #[error("{what} is missing: {} does not exist (run .ci/fixtures; {ROOT_VAR}={})", .path.display(), .root.display())]
    Missing {
        /// What the path is, in words.
        what: String,
        /// The path that does not exist.
        path: PathBuf,
        /// The fixtures' folder in force.
        root: PathBuf,
    },
    /// A path exists but could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Walking a folder failed.
    #[error("cannot list {}: {source}", .path.display())]
    Walk {
        /// The folder walked.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: walkdir::Error,
    },
    /// `ldd` could not be run or said nothing usable.
    #[error("ldd on {} failed: {detail}", .path.display())]
    Ldd {
        /// The first file `ldd` was asked about.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// A path is not valid UTF-8, so it cannot go into a command line of a record.
    #[error("{} is not valid UTF-8", .path.display())]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
}

/// The result of this module's functions.
pub type Result<T> = std::result::Result<T, FixtureError>;

/// An image's run settings, as plain data: the `Entrypoint`, `Env` and `WorkingDir` of its
/// config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageConfig {
    /// `Entrypoint`: the program (an absolute path in the image) and its arguments.
    pub entrypoint: Vec<String>,
    /// `Env`, as `(name, value)` pairs.
    pub env: Vec<(String, String)>,
    /// `WorkingDir`.
    pub working_dir: String,
}

impl ImageConfig {
    /// `Env` in the OCI form, `NAME=value`.
    pub fn oci_env(&self) -> Vec<String> {
        self.env.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }
}

/// The fixtures' folder: `$ESCEPINE_FIXTURES`, or [`DEFAULT_ROOT`]. Not checked.
pub fn root() -> PathBuf {
    match std::env::var_os(ROOT_VAR) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(DEFAULT_ROOT),
    }
}

/// `path` if it exists, else [`FixtureError::Missing`] with `what`.
fn existing(path: PathBuf, what: &str) -> Result<PathBuf> {
    // `symlink_metadata`: a venv's `bin/python` is a link, and it is the link that is asked for.
    if path.symlink_metadata().is_ok() && path.exists() {
        Ok(path)
    } else {
        Err(FixtureError::Missing {
            what: what.to_string(),
            path,
            root: root(),
        })
    }
}

/// The path as a `String`, for a command line.
fn utf8(path: &Path) -> Result<String> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| FixtureError::NotUtf8 {
            path: path.to_path_buf(),
        })
}

/// The virtualenv (`<root>/py`).
pub fn python_venv() -> Result<PathBuf> {
    let venv = existing(root().join("py"), "the Python virtualenv")?;
    existing(venv.join("pyvenv.cfg"), "the virtualenv's pyvenv.cfg")?;
    Ok(venv)
}

/// The virtualenv's `bin/python`: the symlink's own path, not resolved (resolving it to the base
/// interpreter would lose the virtualenv).
pub fn python_bin() -> Result<PathBuf> {
    existing(
        python_venv()?.join("bin/python"),
        "the virtualenv's bin/python",
    )
}

/// The virtualenv's `site-packages` folder.
pub fn python_site_packages() -> Result<PathBuf> {
    existing(
        python_venv()?.join("lib/python3.11/site-packages"),
        "the virtualenv's site-packages",
    )
}

/// `/usr/bin/node`.
pub fn node_bin() -> Result<PathBuf> {
    existing(PathBuf::from(NODE), "Node.js")
}

/// `<root>/node/node_modules`, holding the TypeScript SDK, zod and server-memory.
pub fn node_modules() -> Result<PathBuf> {
    let dir = existing(root().join("node/node_modules"), "the node_modules folder")?;
    existing(
        dir.join("@modelcontextprotocol/sdk/package.json"),
        "the TypeScript SDK in node_modules",
    )?;
    Ok(dir)
}

/// The repository's folder of fixture MCP servers, `runtime/tests/fixtures/mcp`.
pub fn server_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../runtime/tests/fixtures/mcp")
}

/// The path of a fixture server in the repository, such as `py_sdk_server.py` or
/// `node_sdk_server.mjs`.
pub fn server_source(name: &str) -> Result<PathBuf> {
    let path = server_dir().join(name);
    let path = path.canonicalize().unwrap_or(path);
    existing(path, &format!("the fixture server {name}"))
}

/// The command of the PyPI server `mcp-server-time`: the virtualenv's console script, whose
/// `#!` names the virtualenv's python. Tools: `get_current_time`, `convert_time`.
pub fn mcp_server_time_cmd() -> Result<Vec<String>> {
    let script = existing(
        python_venv()?.join("bin/mcp-server-time"),
        "mcp-server-time's script",
    )?;
    Ok(vec![utf8(&script)?])
}

/// The command of the PyPI server `mcp-server-git` (twelve tools, none with an `outputSchema`).
/// It runs the `git` program, so a sandbox needs `git` too; add `--repository <path>` to
/// confine it to one repository.
pub fn mcp_server_git_cmd() -> Result<Vec<String>> {
    let script = existing(
        python_venv()?.join("bin/mcp-server-git"),
        "mcp-server-git's script",
    )?;
    Ok(vec![utf8(&script)?])
}

/// The command of the npm server `@modelcontextprotocol/server-memory`: node and its entry
/// file, which finds the SDK in the `node_modules` above it. It keeps its graph in
/// `MEMORY_FILE_PATH` (by default beside its own code, read-only in a sandbox: set it to a file
/// under `/workspace`).
pub fn server_memory_cmd() -> Result<Vec<String>> {
    let entry = existing(
        node_modules()?.join("@modelcontextprotocol/server-memory/dist/index.js"),
        "server-memory's dist/index.js",
    )?;
    Ok(vec![utf8(&node_bin()?)?, utf8(&entry)?])
}

/// The shared libraries the ELF files `files` load, with the dynamic loader, as `ldd` finds
/// them: `(the real file on the host, the path the loader opens)`. A file `ldd` calls static,
/// and a library it cannot find (an optional module's), is left out.
fn shared_libraries(files: &[PathBuf]) -> Result<BTreeMap<PathBuf, PathBuf>> {
    let mut libs = BTreeMap::new();
    let Some(first) = files.first() else {
        return Ok(libs);
    };
    // One ldd for many files keeps this fast; its exit status is 1 when any one is not dynamic.
    let out = Command::new("ldd")
        .args(files)
        .output()
        .map_err(|e| FixtureError::Ldd {
            path: first.clone(),
            detail: format!("cannot run ldd: {e}"),
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines().filter(|l| l.starts_with('\t')) {
        let line = line.trim();
        // `libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x…)` or `/lib64/ld-linux-x86-64.so.2 (0x…)`.
        let target = match line.split_once(" => ") {
            Some((_, rest)) => rest,
            None => line,
        };
        let Some(path) = target.split(" (0x").next().filter(|p| p.starts_with('/')) else {
            continue;
        };
        let path = PathBuf::from(path);
        let real = path.canonicalize().map_err(|source| FixtureError::Io {
            path: path.clone(),
            source,
        })?;
        libs.insert(path, real);
    }
    if libs.is_empty() {
        return Err(FixtureError::Ldd {
            path: first.clone(),
            detail: format!(
                "no library found (status {}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(libs)
}

/// Whether `path` is an ELF shared object by name (`*.so`, `*.so.N`).
fn is_shared_object(path: &Path) -> bool {
    path.file_name()
        .and_then(OsStr::to_str)
        .is_some_and(|n| n.ends_with(".so") || n.contains(".so."))
}

/// The regular files under `dir`, as `(real host file, path relative to dir)`, leaving out
/// entries named in `skip` (and all below them). A link to a file gives the file at the link's
/// path; a link to a folder, or a dangling one, is left out.
fn tree_files(dir: &Path, skip: &[&str]) -> Result<Vec<(PathBuf, PathBuf)>> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || !e
                    .file_name()
                    .to_str()
                    .is_some_and(|n| skip.contains(&n) || n.ends_with(".pyc"))
        });
    for entry in walk {
        let entry = entry.map_err(|source| FixtureError::Walk {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        let host = if entry.file_type().is_symlink() {
            match path.canonicalize() {
                Ok(real) if real.is_file() => real,
                _ => continue,
            }
        } else if entry.file_type().is_file() {
            path.to_path_buf()
        } else {
            continue;
        };
        if let Ok(rel) = path.strip_prefix(dir) {
            out.push((host, rel.to_path_buf()));
        }
    }
    Ok(out)
}

/// Where the virtualenv's site-packages go in the python image.
fn image_site_packages() -> PathBuf {
    Path::new(IMAGE_APP).join("site-packages")
}

/// The files of the python image, `(host file, path in the image)`: `/usr/bin/python3.11`, the
/// shared libraries it and every extension module load (with the dynamic loader, at the paths
/// the loader opens), `/usr/lib/python3.11` less tests, GUI, installers, build files and
/// bytecode, the virtualenv's site-packages at `/app/site-packages` (less pip and setuptools),
/// and `py_sdk_server.py` at `/app/py_sdk_server.py`. About 65 MB; see [`python_image_config`].
pub fn python_image_files() -> Result<Vec<(PathBuf, PathBuf)>> {
    let python = existing(PathBuf::from(PYTHON_BASE), "Debian's python3.11")?;
    let stdlib = existing(PathBuf::from(PYTHON_STDLIB), "Debian's python3.11 library")?;
    let site = python_site_packages()?;
    let server = server_source("py_sdk_server.py")?;

    let mut files = vec![(python.clone(), python.clone())];
    files.extend(
        tree_files(&stdlib, STDLIB_SKIP)?
            .into_iter()
            .map(|(host, rel)| (host, stdlib.join(rel))),
    );
    files.extend(
        tree_files(&site, SITE_SKIP)?
            .into_iter()
            .map(|(host, rel)| (host, image_site_packages().join(rel))),
    );
    let elves: Vec<PathBuf> = std::iter::once(python)
        .chain(
            files
                .iter()
                .map(|(host, _)| host.clone())
                .filter(|h| is_shared_object(h)),
        )
        .collect();
    files.extend(
        shared_libraries(&elves)?
            .into_iter()
            .map(|(at, real)| (real, at)),
    );
    files.push((server, Path::new(IMAGE_APP).join("py_sdk_server.py")));
    Ok(files)
}

/// The python image's config: `/usr/bin/python3.11 /app/py_sdk_server.py` in `/app`, with
/// `PYTHONPATH=/app/site-packages` (the bare interpreter finds its standard library from its own
/// path, `/usr`) and `PYTHONDONTWRITEBYTECODE=1` (the root is read-only).
pub fn python_image_config() -> ImageConfig {
    let app = Path::new(IMAGE_APP);
    ImageConfig {
        entrypoint: vec![
            PYTHON_BASE.to_string(),
            app.join("py_sdk_server.py").display().to_string(),
        ],
        env: vec![
            (
                "PYTHONPATH".to_string(),
                image_site_packages().display().to_string(),
            ),
            ("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string()),
            ("PYTHONUNBUFFERED".to_string(), "1".to_string()),
        ],
        working_dir: IMAGE_APP.to_string(),
    }
}

/// The files of the node image, `(host file, path in the image)`: `/usr/bin/node`, its shared
/// libraries with the dynamic loader, `node_modules` (the SDK and its dependencies, zod,
/// server-memory) at `/app/node_modules`, and `node_sdk_server.mjs` at
/// `/app/node_sdk_server.mjs`, which finds `/app/node_modules` beside itself. See
/// [`node_image_config`].
pub fn node_image_files() -> Result<Vec<(PathBuf, PathBuf)>> {
    let node = node_bin()?;
    let modules = node_modules()?;
    let server = server_source("node_sdk_server.mjs")?;
    let app = Path::new(IMAGE_APP);

    let mut files = vec![(node.clone(), node.clone())];
    files.extend(
        shared_libraries(std::slice::from_ref(&node))?
            .into_iter()
            .map(|(at, real)| (real, at)),
    );
    files.extend(
        tree_files(&modules, NODE_MODULES_SKIP)?
            .into_iter()
            .map(|(host, rel)| (host, app.join("node_modules").join(rel))),
    );
    files.push((server, app.join("node_sdk_server.mjs")));
    Ok(files)
}

/// The node image's config: `/usr/bin/node /app/node_sdk_server.mjs` in `/app`; no `Env` is
/// needed (the server finds `/app/node_modules` beside itself).
pub fn node_image_config() -> ImageConfig {
    ImageConfig {
        entrypoint: vec![
            NODE.to_string(),
            Path::new(IMAGE_APP)
                .join("node_sdk_server.mjs")
                .display()
                .to_string(),
        ],
        env: Vec::new(),
        working_dir: IMAGE_APP.to_string(),
    }
}

/// The shared libraries python and its extension modules (the standard library's
/// `lib-dynload` and the virtualenv's) load, at the paths the loader opens. The sandbox's own
/// resolver finds only the libraries of the command's binary; `import ssl` needs libssl too.
fn python_libraries() -> Result<Vec<PathBuf>> {
    let mut elves = vec![existing(PathBuf::from(PYTHON_BASE), "Debian's python3.11")?];
    for dir in [
        Path::new(PYTHON_STDLIB).join("lib-dynload"),
        python_site_packages()?,
    ] {
        elves.extend(
            tree_files(&dir, SITE_SKIP)?
                .into_iter()
                .map(|(host, _)| host)
                .filter(|h| is_shared_object(h)),
        );
    }
    Ok(shared_libraries(&elves)?.into_keys().collect())
}

/// The host paths to bind read-only (at the same path) to run `py_sdk_server.py`, or
/// `mcp-server-time`/`mcp-server-git`, with [`python_bin`] in a sandbox: the virtualenv,
/// `/usr/lib/python3.11`, `/usr/bin/python3.11`, the fixture servers' folder, and the shared
/// libraries python's extension modules load (each a file).
pub fn python_read_only_paths() -> Result<Vec<PathBuf>> {
    let mut paths = vec![
        python_venv()?,
        existing(PathBuf::from(PYTHON_STDLIB), "Debian's python3.11 library")?,
        existing(PathBuf::from(PYTHON_BASE), "Debian's python3.11")?,
        server_source("py_sdk_server.py")?
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(server_dir),
    ];
    paths.extend(python_libraries()?);
    Ok(paths)
}

/// The host paths to bind read-only (at the same path) to run `node_sdk_server.mjs` (with
/// `NODE_PATH` set to [`node_modules`]) or server-memory with [`node_bin`] in a sandbox:
/// `/usr/bin/node`, `node_modules`, the fixture servers' folder, and node's shared libraries.
pub fn node_read_only_paths() -> Result<Vec<PathBuf>> {
    let node = node_bin()?;
    let mut paths = vec![
        node.clone(),
        node_modules()?,
        server_source("node_sdk_server.mjs")?
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(server_dir),
    ];
    paths.extend(shared_libraries(&[node])?.into_keys());
    Ok(paths)
}
