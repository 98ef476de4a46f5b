//! The `build.rs` entry point.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use super::error::BuildError;
use super::{generate, DEFAULT_FILE_NAME};
use crate::registry::{self, Sources};

/// Compiles tool records into Rust from a `build.rs`, in the style of `prost-build`.
///
/// ```no_run
/// // build.rs
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
///     registry_build::Builder::new()
///         .records("../../tools/records")
///         .policies("../../tools/policies")
///         .envelope("../../tools/envelope.json")
///         .compile()?;
///     Ok(())
/// }
/// ```
///
/// ```ignore
/// // src/lib.rs or src/main.rs
/// include!(concat!(env!("OUT_DIR"), "/escepine_tools.rs"));
/// ```
///
/// [`compile`](Self::compile) applies every registration rule and Cedar strict validation, and a
/// rejected record fails the build with the rendered diagnostics (file, line, JSON pointer,
/// rule, caret) of every problem found.
#[derive(Debug, Clone)]
pub struct Builder {
    sources: Sources,
    out_dir: Option<PathBuf>,
    file_name: String,
    cargo_directives: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// A builder with no inputs, writing `escepine_tools.rs` into `OUT_DIR`.
    pub fn new() -> Self {
        Self {
            sources: Sources::new(),
            out_dir: None,
            file_name: DEFAULT_FILE_NAME.to_string(),
            cargo_directives: true,
        }
    }

    /// Add a records directory (every `*.json` in it) or a single record file. Relative paths
    /// are taken from the crate's directory, where cargo runs build scripts.
    pub fn records(mut self, path: impl Into<PathBuf>) -> Self {
        self.sources = self.sources.records(path);
        self
    }

    /// Set the policies directory (`*.cedar`, and an optional `*.cedarschema`), validated in
    /// strict mode against the generated Cedar schema.
    pub fn policies(mut self, dir: impl Into<PathBuf>) -> Self {
        self.sources = self.sources.policies(dir);
        self
    }

    /// Set the deployment envelope; without one the rules that compare with it
    /// (`sandbox/within-envelope`, `endpoint/image-source`, `sandbox/read-only-within-envelope`)
    /// are skipped (and the build says so).
    pub fn envelope(mut self, file: impl Into<PathBuf>) -> Self {
        self.sources = self.sources.envelope(file);
        self
    }

    /// Set the workspace whose `[[bin]]`s endpoints may name (found from the records'
    /// directory when not set).
    pub fn workspace_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.sources = self.sources.workspace_root(dir);
        self
    }

    /// Add an SOP directory (every `*.json` in it) or a single SOP file: every SOP rule is
    /// applied against the records (a rejected SOP fails the build with its diagnostics), and
    /// the generated file gains `pub mod sops` with a typed state machine per SOP.
    pub fn sops(mut self, path: impl Into<PathBuf>) -> Self {
        self.sources = self.sources.sops(path);
        self
    }

    /// Write into `dir` instead of `OUT_DIR`.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Name the generated file (default `escepine_tools.rs`).
    pub fn file_name(mut self, name: impl Into<String>) -> Self {
        self.file_name = name.into();
        self
    }

    /// Whether to print `cargo:rerun-if-changed` and `cargo:warning` lines (default `true`;
    /// turn off when running outside a build script).
    pub fn cargo_directives(mut self, on: bool) -> Self {
        self.cargo_directives = on;
        self
    }

    /// What the builder will load.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// Load and check the registry, then write the generated file.
    ///
    /// Prints `cargo:rerun-if-changed` for every input file first (so a fix re-runs the build
    /// script), and rewrites the output only when its text changed (so an unchanged registry
    /// does not recompile the crate).
    ///
    /// # Errors
    /// [`BuildError::Registry`] with every diagnostic of every file when a record, the
    /// envelope or a policy is rejected; [`BuildError::NoOutDir`] outside a build script without
    /// [`out_dir`](Self::out_dir); [`BuildError::Write`]; and the errors of
    /// [`generate`](super::generate).
    pub fn compile(&self) -> Result<(), BuildError> {
        if self.cargo_directives {
            for file in self.sources.input_files() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
        }
        let registry = registry::load(&self.sources)?;
        if self.cargo_directives {
            for note in &registry.notes {
                println!("cargo:warning=escepine: {}", note.replace('\n', " "));
            }
            for remark in registry.remarks.iter() {
                println!(
                    "cargo:warning=escepine: {}",
                    remark.to_string().replace('\n', " ")
                );
            }
        }
        let code = generate(&registry)?;
        let out_dir = self
            .out_dir
            .clone()
            .or_else(|| env::var_os("OUT_DIR").map(PathBuf::from))
            .ok_or(BuildError::NoOutDir)?;
        write_if_changed(&out_dir.join(&self.file_name), &code)
    }
}

/// Write `text` to `path` unless the file already holds exactly that text.
fn write_if_changed(path: &Path, text: &str) -> Result<(), BuildError> {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let err = |source| BuildError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(err)?;
    }
    fs::write(path, text).map_err(err)
}
