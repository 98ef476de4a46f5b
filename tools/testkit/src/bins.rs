//! The workspace's binaries, found beside the running test program.
//!
//! Cargo gives a package's integration tests its own binaries (`CARGO_BIN_EXE_<name>`), but not
//! another package's, and a dev-dependency does not build them. `cargo test --workspace` and
//! `cargo build --workspace` do: they land in `target/<profile>/`, the parent of the `deps/`
//! directory holding the running test program (this honours `CARGO_TARGET_DIR`). [`find`]
//! looks there and nowhere else: it never builds. A missing binary, or one older than a source
//! of its package, is an error naming the binary and the `cargo build` that makes it. An
//! environment variable per binary ([`Bin::var`]) names another path instead (for example in a
//! cross build, where the profile directory sits one level deeper).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A binary of this workspace that tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bin {
    /// The package that builds it.
    pub package: &'static str,
    /// The binary's name.
    pub bin: &'static str,
    /// The package's directory, relative to the workspace root.
    pub dir: &'static str,
    /// The environment variable that names another path for it.
    pub var: &'static str,
}

/// `escepine-testtool` (`tools/testkit`): a stdio-json tool whose first argument picks its
/// behaviour.
pub const TESTTOOL: Bin = Bin {
    package: "escepine-testkit",
    bin: "escepine-testtool",
    dir: "tools/testkit",
    var: "ESCEPINE_TESTTOOL",
};

/// `escepine-hostile` (`tools/testkit`): tries to escape the sandbox.
pub const HOSTILE: Bin = Bin {
    package: "escepine-testkit",
    bin: "escepine-hostile",
    dir: "tools/testkit",
    var: "ESCEPINE_HOSTILE",
};

/// `escepine-mcp-probe` (`tools/testkit`): an MCP server that reports where it runs.
pub const MCP_PROBE: Bin = Bin {
    package: "escepine-testkit",
    bin: "escepine-mcp-probe",
    dir: "tools/testkit",
    var: "ESCEPINE_MCP_PROBE",
};

/// `escepine-catalog` (`tools/catalog`): the catalog's tools.
pub const CATALOG: Bin = Bin {
    package: "escepine-catalog",
    bin: "escepine-catalog",
    dir: "tools/catalog",
    var: "ESCEPINE_CATALOG_BIN",
};

/// `escepine` (`runtime/cli`): the command-line tool.
pub const ESCEPINE: Bin = Bin {
    package: "escepine-cli",
    bin: "escepine",
    dir: "runtime/cli",
    var: "ESCEPINE_BIN",
};

/// `escepine-mcp-demo` (`tools/mcp-demo`): the workspace's rmcp demo server.
pub const MCP_DEMO: Bin = Bin {
    package: "escepine-mcp-demo",
    bin: "escepine-mcp-demo",
    dir: "tools/mcp-demo",
    var: "ESCEPINE_MCP_DEMO",
};

/// Why a binary cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BinError {
    /// The running program's path is unknown or not in `target/<profile>/deps/`.
    #[error("cannot place the test program in target/<profile>/deps/: {0}")]
    Layout(String),
    /// The binary is not built.
    #[error(
        "{path} does not exist: build it with `cargo build -p {package} --bin {bin}` (or run \
         `cargo test --workspace`), or name it in {var}",
        path = path.display(),
        package = bin.package,
        bin = bin.bin,
        var = bin.var
    )]
    Missing {
        /// The binary.
        bin: Bin,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The binary is older than a source of its package.
    #[error(
        "{path} is older than {source_file}: rebuild it with `cargo build -p {package} --bin \
         {bin}` (or run `cargo test --workspace`)",
        path = path.display(),
        source_file = newer.display(),
        package = bin.package,
        bin = bin.bin
    )]
    Stale {
        /// The binary.
        bin: Bin,
        /// Where it was found.
        path: PathBuf,
        /// A source file changed after it was built.
        newer: PathBuf,
    },
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// `target/<profile>/` of the running test program (`target/<profile>/deps/<test>-<hash>`).
///
/// # Errors
/// When the program's path is unknown or has fewer than two parents.
pub fn profile_dir() -> Result<PathBuf, BinError> {
    let exe = std::env::current_exe().map_err(|e| BinError::Layout(e.to_string()))?;
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| BinError::Layout(exe.display().to_string()))
}

/// The path of a current build of `bin`: its variable's value if set, else
/// `target/<profile>/<bin>` if it is newer than every source of its package.
///
/// # Errors
/// [`BinError::Missing`] or [`BinError::Stale`], whose message says which `cargo build` to run.
pub fn find(bin: Bin) -> Result<PathBuf, BinError> {
    if let Some(p) = std::env::var_os(bin.var) {
        return Ok(PathBuf::from(p));
    }
    let path = profile_dir()?.join(bin.bin);
    let Some(built) = modified(&path) else {
        return Err(BinError::Missing { bin, path });
    };
    match newest_source(&workspace_root().join(bin.dir)) {
        Some((newer, at)) if at > built => Err(BinError::Stale { bin, path, newer }),
        _ => Ok(path),
    }
}

/// [`find`], panicking with its error: for tests, where a missing binary is a setup error.
///
/// # Panics
/// When [`find`] fails.
pub fn path(bin: Bin) -> PathBuf {
    find(bin).unwrap_or_else(|e| panic!("{e}"))
}

/// The newest file under the package's `src/` (what cargo's own freshness check compares by
/// time; a manifest whose time changed but whose content did not rebuilds nothing).
fn newest_source(package_dir: &Path) -> Option<(PathBuf, SystemTime)> {
    walkdir::WalkDir::new(package_dir.join("src"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| modified(e.path()).map(|t| (e.into_path(), t)))
        .max_by_key(|(_, t)| *t)
}

fn modified(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_root_holds_the_testkit() {
        assert!(workspace_root().join("tools/testkit/Cargo.toml").is_file());
    }

    #[test]
    fn a_variable_names_the_binary() {
        // A variable no other test reads.
        let bin = Bin {
            var: "ESCEPINE_TESTKIT_BINS_UNIT",
            ..TESTTOOL
        };
        std::env::set_var(bin.var, "/somewhere/else");
        assert_eq!(find(bin).ok(), Some(PathBuf::from("/somewhere/else")));
    }

    #[test]
    fn a_missing_binary_names_its_build() {
        let bin = Bin {
            bin: "escepine-no-such-binary",
            var: "ESCEPINE_TESTKIT_NO_SUCH",
            ..TESTTOOL
        };
        let err = find(bin).expect_err("not built");
        let text = err.to_string();
        assert!(matches!(err, BinError::Missing { .. }), "{text}");
        assert!(
            text.contains("cargo build -p escepine-testkit --bin escepine-no-such-binary"),
            "{text}"
        );
    }

    #[test]
    fn a_binary_older_than_a_source_is_stale() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir(dir.path().join("src")).expect("src/");
        let old = dir.path().join("bin");
        std::fs::write(&old, b"").expect("the binary");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.path().join("src/main.rs"), b"").expect("a source");
        let (newer, at) = newest_source(dir.path()).expect("a source");
        assert!(newer.ends_with("src/main.rs"));
        assert!(modified(&old).is_some_and(|built| at > built));
    }
}
