//! Which executor runs the tools: the sandbox when it works on this machine, else the process
//! executor. The choice is made here and nowhere else, and the program prints it.
//!
//! The catalog's tools (`escepine-catalog`, the records' `command`) are served by this very
//! program: [`serve_catalog_from_self`] puts a link named `escepine-catalog` to it in a directory
//! the executors search first, and `main` serves one tool call when started under that name.
//! The sandbox's init is this program too (`sandbox::init::dispatch`). Nothing is built or
//! looked for in a target directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use escepine_runtime::executor::{Executor, ProcessExecutor};
use escepine_runtime::sandbox::SandboxExecutor;

/// What `--executor` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Choice {
    /// The sandbox if a probe succeeds on this machine, else the process executor.
    Auto,
    /// The sandbox, or fail.
    Sandbox,
    /// The process executor (no isolation beyond a fresh process per attempt).
    Process,
}

/// The executor chosen, with a line saying which and why.
pub struct Chosen {
    /// The executor.
    pub executor: Arc<dyn Executor>,
    /// `sandbox` or `process`.
    pub name: &'static str,
    /// Why this one.
    pub why: String,
}

/// The workspace this example belongs to.
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = here.join("../..");
    root.canonicalize().unwrap_or(root)
}

/// The name of the catalog's tool binary in its records (`endpoint.command`).
pub const CATALOG_BIN: &str = "escepine-catalog";

/// Whether this process was started as [`CATALOG_BIN`] (by an executor running a catalog
/// tool): its `argv[0]`'s file name says so.
pub fn started_as_catalog() -> bool {
    std::env::args_os()
        .next()
        .as_deref()
        .map(Path::new)
        .and_then(Path::file_name)
        .is_some_and(|name| name == CATALOG_BIN)
}

/// Point the records' `escepine-catalog` endpoints at this program: a symbolic link
/// `dir/escepine-catalog` to it (replacing an older one), and `dir` returned, for the
/// executors' bin directory (searched before anything else).
///
/// # Errors
/// This program cannot be located, or the link cannot be made.
pub fn serve_catalog_from_self(dir: &Path) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this program: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let link = dir.join(CATALOG_BIN);
    match std::fs::remove_file(&link) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot replace {}: {e}", link.display())),
    }
    std::os::unix::fs::symlink(&exe, &link)
        .map_err(|e| format!("cannot link {} to {}: {e}", link.display(), exe.display()))?;
    dir.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", dir.display()))
}

/// Choose the executor.
///
/// With [`Choice::Auto`] the sandbox executor's [`self_test`](SandboxExecutor::self_test) runs
/// once: a fresh sandbox provisioned, a program run in it with no network, no secrets and
/// nothing written, and destroyed. Not a governed call: it only tells whether sandboxes can be
/// provisioned here.
pub async fn choose(choice: Choice, bin_dir: &Path) -> Result<Chosen, String> {
    let process = || {
        ProcessExecutor::new()
            .with_bin_dir(bin_dir)
            .with_workspace_root(workspace_root())
    };
    if choice == Choice::Process {
        return Ok(Chosen {
            executor: Arc::new(process()),
            name: "process",
            why: "asked for with --executor process".into(),
        });
    }
    let sandbox = match SandboxExecutor::new() {
        Ok(s) => s.with_process_executor(process()),
        Err(e) if choice == Choice::Auto => {
            return Ok(Chosen {
                executor: Arc::new(process()),
                name: "process",
                why: format!("the sandbox is unavailable: {e}"),
            })
        }
        Err(e) => return Err(format!("the sandbox is unavailable: {e}")),
    };
    match sandbox.self_test().await {
        Ok(test) => Ok(Chosen {
            executor: Arc::new(sandbox),
            name: "sandbox",
            why: format!(
                "its self-test ran {} in a fresh sandbox in {} ms",
                test.program.display(),
                test.took.as_millis()
            ),
        }),
        Err(e) if choice == Choice::Auto => Ok(Chosen {
            executor: Arc::new(process()),
            name: "process",
            why: format!("the sandbox does not work on this machine ({e})"),
        }),
        Err(e) => Err(format!("the sandbox does not work on this machine: {e}")),
    }
}
