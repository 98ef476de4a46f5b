//! Why a build failed.

use std::fmt;
use std::io;
use std::path::PathBuf;

use escepine_policy::policy_tests::PolicyTestError;
use escepine_registry::diagnostic::Diagnostics;

/// Why [`Builder::compile`](super::Builder::compile) or [`generate`](super::generate) failed.
///
/// `Debug` prints the same text as `Display`, so a `build.rs` whose `main` returns the error
/// shows the rendered diagnostics (file, line, JSON pointer, rule, caret), not a struct dump.
#[derive(thiserror::Error)]
pub enum BuildError {
    /// The records, the envelope or the policies broke registration rules: every problem of
    /// every file, rendered.
    #[error("{}", .0.render())]
    Registry(Diagnostics),
    /// A policy test ([`Builder::policy_tests`](super::Builder::policy_tests)) failed, or its
    /// files cannot be run: every failure, naming its file and case.
    #[error("policy tests failed:\n{0}")]
    PolicyTests(#[source] PolicyTestError),
    /// No output directory: neither [`Builder::out_dir`](super::Builder::out_dir) nor `OUT_DIR`.
    #[error(
        "no output directory: call `Builder::out_dir`, or run the builder from a build script \
         (cargo sets `OUT_DIR`)"
    )]
    NoOutDir,
    /// The generated file could not be written.
    #[error("cannot write `{}`: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// typify could not turn a tool's schemas into Rust types.
    #[error(
        "{}: cannot generate Rust types from the schemas of tool `{tool}`: {message}",
        file.display()
    )]
    Types {
        /// The record file.
        file: PathBuf,
        /// The tool id.
        tool: String,
        /// What typify reported.
        message: String,
    },
    /// An input file to embed has no absolute path.
    #[error("cannot embed `{}`: {source}", path.display())]
    Embed {
        /// The file.
        path: PathBuf,
        /// Why its absolute path is unknown.
        source: io::Error,
    },
    /// The contract path given to [`Builder::contract_path`](super::Builder::contract_path) is
    /// not a Rust path.
    #[error("`{path}` is not a Rust path for the contract crate: {message}")]
    ContractPath {
        /// What was given.
        path: String,
        /// Why it does not parse.
        message: String,
    },
    /// A tool id or a Cedar action id cannot be a Rust name, or two map to the same one.
    #[error("{message}")]
    Name {
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A contract given to [`Builder::linked_tools`](super::Builder::linked_tools) cannot be
    /// served by the program it is linked into.
    #[error("cannot link tool `{tool}` into this program: {message}")]
    Linked {
        /// The tool id.
        tool: String,
        /// What is wrong with its endpoint or contract.
        message: String,
    },
    /// A `.cedarschema` could not be read again for the contexts its actions declare.
    #[error("cannot read the contexts the `.cedarschema` declares: {0}")]
    SchemaContext(String),
    /// The generated code does not parse: a bug in `registry-build`.
    #[error("internal error: the generated code does not parse ({0}); please report this")]
    Syntax(String),
}

impl fmt::Debug for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<Diagnostics> for BuildError {
    fn from(d: Diagnostics) -> Self {
        Self::Registry(d)
    }
}
