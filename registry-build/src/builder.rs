//! The `build.rs` entry point.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use super::error::BuildError;
use super::generate::generate_with;
use super::linked;
use super::options::{Options, DEFAULT_CONTRACT_PATH, DEFAULT_FILE_NAME};
use escepine_contract::Contract;
use escepine_policy::policy_tests;
use escepine_registry::files::list_files;
use escepine_registry::registry::Sources;

/// Compiles tool records into Rust from a `build.rs`, in the style of `prost-build`.
///
/// ```no_run
/// // build.rs
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
///     escepine_registry_build::Builder::new()
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
/// mod tools {
///     escepine_contract::include_tools!();
/// }
/// // The registry compiled in: no records directory at run time.
/// let registry = escepine_policy::embedded::load(&tools::REGISTRY)?;
/// ```
///
/// [`compile`](Self::compile) applies every registration rule and Cedar strict validation, and a
/// rejected record fails the build with the rendered diagnostics (file, line, JSON pointer,
/// rule, caret) of every problem found. Relative paths are taken from the working directory
/// (the crate's directory, in a build script) and made absolute, so the generated `REGISTRY`
/// and `SOURCES` name the files wherever the crate is compiled from.
///
/// The Cedar action markers cover every action of the merged schema, the ones the user's
/// `.cedarschema` declares beside the records' included, so the same builder serves a crate of
/// Rust-first tools (whose actions only the `.cedarschema` declares).
#[derive(Debug, Clone)]
pub struct Builder {
    sources: Sources,
    out_dir: Option<PathBuf>,
    file_name: String,
    cargo_directives: bool,
    contract_path: String,
    embed: bool,
    manifest_dir: Option<PathBuf>,
    policy_tests: Option<PathBuf>,
    linked: Vec<Contract>,
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
            contract_path: DEFAULT_CONTRACT_PATH.to_string(),
            embed: true,
            manifest_dir: None,
            policy_tests: None,
            linked: Vec::new(),
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

    /// Run the policy tests of `dir` (every `*.json` in it, or one file;
    /// [`policy_tests`](escepine_policy::policy_tests)) against the bound registry: a failing case, or a
    /// test file that cannot be run, fails the build naming the file and the case (or the JSON
    /// pointer).
    pub fn policy_tests(mut self, dir: impl Into<PathBuf>) -> Self {
        self.policy_tests = Some(dir.into());
        self
    }

    /// Link a crate of tools into the program this build script builds: its tools become
    /// records of the registry (each as its host's `--describe` would write it, named
    /// `linked/<host>/<tool id>.json` in diagnostics), and their host, the endpoint's `command`,
    /// is served by the program's own binary ([`ResolvedCommand::Linked`](escepine_registry::record::ResolvedCommand::Linked)).
    ///
    /// The tool crate is a dependency of the program and a build-dependency of its build script,
    /// which passes the contracts (`escepine_toolhost::linked::contracts(word_tools::TOOLS)`);
    /// the program's `main` calls `escepine_toolhost::linked::dispatch` first. No path to a
    /// binary appears anywhere, so the crates build the same wherever they are.
    pub fn linked_tools(mut self, contracts: impl IntoIterator<Item = Contract>) -> Self {
        self.linked.extend(contracts);
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

    /// The path generated code names the contract crate by (default `::escepine_contract`),
    /// like `prost-build`'s `prost_path`: for a crate that reaches it through a re-export
    /// (`::my_sdk::contract`).
    pub fn contract_path(mut self, path: impl Into<String>) -> Self {
        self.contract_path = path.into();
        self
    }

    /// Whether to embed the registry as `REGISTRY` and the inputs as `SOURCES` (default
    /// `true`).
    pub fn embed_registry(mut self, on: bool) -> Self {
        self.embed = on;
        self
    }

    /// The directory of the crate that includes the generated code (default: the
    /// `CARGO_MANIFEST_DIR` cargo gives the build script). `REGISTRY` and `SOURCES` name the
    /// inputs relative to it, through the crate's own `env!("CARGO_MANIFEST_DIR")`, so the
    /// generated text does not depend on where the checkout is.
    pub fn manifest_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.manifest_dir = Some(dir.into());
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
    /// envelope or a policy is rejected; [`BuildError::PolicyTests`] when a policy test fails
    /// or cannot be run; [`BuildError::NoOutDir`] outside a build script without
    /// [`out_dir`](Self::out_dir); [`BuildError::Write`]; and the errors of
    /// [`generate`](super::generate).
    pub fn compile(&self) -> Result<(), BuildError> {
        let code = self.generate()?;
        let out_dir = self
            .out_dir
            .clone()
            .or_else(|| env::var_os("OUT_DIR").map(PathBuf::from))
            .ok_or(BuildError::NoOutDir)?;
        write_if_changed(&out_dir.join(&self.file_name), &code)
    }

    /// Load and check the registry and return the generated text, without writing it (prints
    /// the same cargo directives as [`compile`](Self::compile)).
    ///
    /// # Errors
    /// As [`compile`](Self::compile), but never [`BuildError::NoOutDir`] or
    /// [`BuildError::Write`].
    pub fn generate(&self) -> Result<String, BuildError> {
        let contract = syn::parse_str::<syn::Path>(&self.contract_path).map_err(|e| {
            BuildError::ContractPath {
                path: self.contract_path.clone(),
                message: e.to_string(),
            }
        })?;
        let mut sources = absolute_sources(&self.sources);
        for r in linked::records(&self.linked)? {
            sources = sources.record_text(r.label, r.text).linked_hosts([r.host]);
        }
        let tests = self.policy_tests.as_deref().map(absolute);
        if self.cargo_directives {
            for file in sources.input_files() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
            if let Some(dir) = &tests {
                println!("cargo:rerun-if-changed={}", dir.display());
                for file in list_files(dir, &["json"]) {
                    println!("cargo:rerun-if-changed={}", file.display());
                }
            }
        }
        let registry = escepine_policy::load(&sources)?;
        if let Some(dir) = &tests {
            policy_tests::check(&registry, dir).map_err(BuildError::PolicyTests)?;
        }
        if self.cargo_directives {
            for note in registry.notes() {
                println!("cargo:warning=escepine: {}", note.replace('\n', " "));
            }
            for remark in registry.remarks().iter() {
                println!(
                    "cargo:warning=escepine: {}",
                    remark.to_string().replace('\n', " ")
                );
            }
        }
        let manifest_dir = self
            .manifest_dir
            .clone()
            .or_else(|| env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
            .map(|d| fs::canonicalize(&d).unwrap_or(d));
        let options = Options {
            contract,
            embed: self.embed,
            sources: Some(sources),
            manifest_dir,
        };
        generate_with(&registry, &options)
    }
}

/// `p` absolute (canonical where the file exists).
fn absolute(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| {
        env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    })
}

/// `sources` with every path absolute (canonical where the file exists).
fn absolute_sources(sources: &Sources) -> Sources {
    let abs = absolute;
    let mut out = sources.clone();
    out.records = sources.records.iter().map(|p| abs(p)).collect();
    out.policies = sources.policies.as_deref().map(abs);
    out.envelope = sources.envelope.as_deref().map(abs);
    out.workspace_root = sources.workspace_root.as_deref().map(abs);
    out.sops = sources.sops.iter().map(|p| abs(p)).collect();
    out
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
