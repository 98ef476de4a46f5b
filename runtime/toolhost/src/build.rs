//! The build helper of a crate of macro tools (feature `build`), for its `build.rs`.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), escepine_toolhost::build::BuildError> {
//!     escepine_toolhost::build::Builder::new()
//!         .records("../records/url_normalize.json") // the records implemented record-first
//!         .policies("policies") // *.cedar and the .cedarschema declaring Rust-first actions
//!         .envelope("../envelope.json")
//!         .workspace_root("../..")
//!         .compile()
//! }
//! ```
//!
//! ```ignore
//! // src/main.rs
//! mod registry {
//!     include!(concat!(env!("OUT_DIR"), "/escepine_tools.rs"));
//! }
//! ```
//!
//! [`Builder::compile`] loads the records, the policies and the envelope with every registration
//! rule and Cedar strict validation (a rejected record fails the build with its diagnostics),
//! and writes what `registry_build::Builder` writes — one module per record (the types a
//! record-first `#[tool]` must take and return), `actions`, `ToolId`, `Client` — with two
//! additions: a marker in `actions` for every action the crate's `.cedarschema` declares beyond
//! the records' (the markers Rust-first tools name, so an undeclared action does not compile),
//! and `SOURCES`, the absolute paths of the inputs, which the tests `#[tool]` generates check
//! against.

use std::collections::BTreeSet;
use std::env;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use proc_macro2::{Ident, Span};
use quote::quote;
use registry_build::{Diagnostics, Sources};

/// The file [`Builder`] writes into `OUT_DIR` unless told otherwise.
pub const DEFAULT_FILE_NAME: &str = "escepine_tools.rs";

/// Why [`Builder::compile`] failed. `Debug` prints the same text as `Display`, so a `build.rs`
/// whose `main` returns it shows the rendered diagnostics.
#[derive(thiserror::Error)]
pub enum BuildError {
    /// The records, the envelope or the policies broke registration rules.
    #[error("{}", .0.render())]
    Registry(Diagnostics),
    /// The record code generator failed.
    #[error("{0}")]
    Codegen(registry_build::BuildError),
    /// An action of the `.cedarschema` cannot be a Rust name, or clashes with another.
    #[error("{0}")]
    Name(String),
    /// The generated code does not parse (a bug).
    #[error("internal error: the generated code does not parse ({0}); please report this")]
    Syntax(String),
    /// No `OUT_DIR` (not run from a build script) and no [`Builder::out_dir`].
    #[error(
        "no output directory: call `Builder::out_dir`, or run the builder from a build script"
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
}

impl fmt::Debug for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Generates the code a crate of macro tools includes: see the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Builder {
    records: Vec<PathBuf>,
    policies: Option<PathBuf>,
    envelope: Option<PathBuf>,
    workspace_root: Option<PathBuf>,
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
    /// No inputs yet; writes `escepine_tools.rs` into `OUT_DIR`.
    pub fn new() -> Self {
        Self {
            records: Vec::new(),
            policies: None,
            envelope: None,
            workspace_root: None,
            out_dir: None,
            file_name: DEFAULT_FILE_NAME.to_string(),
            cargo_directives: true,
        }
    }

    /// Add a record file or directory the crate implements record-first. Relative paths are
    /// taken from the crate's directory.
    pub fn records(mut self, path: impl Into<PathBuf>) -> Self {
        self.records.push(path.into());
        self
    }

    /// Set the policies directory: `*.cedar`, and the `.cedarschema` declaring the actions of
    /// the crate's Rust-first tools.
    pub fn policies(mut self, dir: impl Into<PathBuf>) -> Self {
        self.policies = Some(dir.into());
        self
    }

    /// Set the deployment envelope (without one the coverage rule is skipped).
    pub fn envelope(mut self, file: impl Into<PathBuf>) -> Self {
        self.envelope = Some(file.into());
        self
    }

    /// Set the workspace whose binaries endpoints name.
    pub fn workspace_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace_root = Some(dir.into());
        self
    }

    /// Write into `dir` instead of `OUT_DIR`.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Name the generated file (default [`DEFAULT_FILE_NAME`]).
    pub fn file_name(mut self, name: impl Into<String>) -> Self {
        self.file_name = name.into();
        self
    }

    /// Whether to print `cargo:rerun-if-changed` and `cargo:warning` lines (default `true`).
    pub fn cargo_directives(mut self, on: bool) -> Self {
        self.cargo_directives = on;
        self
    }

    /// Load, check and generate, then write the file (only when its text changed).
    ///
    /// # Errors
    /// See [`BuildError`].
    pub fn compile(&self) -> Result<(), BuildError> {
        let code = self.generate()?;
        let out_dir = self
            .out_dir
            .clone()
            .or_else(|| env::var_os("OUT_DIR").map(PathBuf::from))
            .ok_or(BuildError::NoOutDir)?;
        let path = out_dir.join(&self.file_name);
        if fs::read_to_string(&path).is_ok_and(|old| old == code) {
            return Ok(());
        }
        let err = |source| BuildError::Write {
            path: path.clone(),
            source,
        };
        fs::create_dir_all(&out_dir).map_err(err)?;
        fs::write(&path, code).map_err(err)
    }

    /// The generated text, without writing it.
    ///
    /// # Errors
    /// See [`BuildError`].
    pub fn generate(&self) -> Result<String, BuildError> {
        let base = env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .or_else(|| env::current_dir().ok())
            .unwrap_or_default();
        let abs = |p: &Path| -> PathBuf {
            let joined = if p.is_absolute() {
                p.to_path_buf()
            } else {
                base.join(p)
            };
            fs::canonicalize(&joined).unwrap_or(joined)
        };
        let records: Vec<PathBuf> = self.records.iter().map(|p| abs(p)).collect();
        let policies = self.policies.as_deref().map(abs);
        let envelope = self.envelope.as_deref().map(abs);
        let workspace_root = self.workspace_root.as_deref().map(abs);

        let mut sources = Sources::new();
        for r in &records {
            sources = sources.records(r);
        }
        if let Some(p) = &policies {
            sources = sources.policies(p);
        }
        if let Some(e) = &envelope {
            sources = sources.envelope(e);
        }
        if let Some(w) = &workspace_root {
            sources = sources.workspace_root(w);
        }
        if self.cargo_directives {
            for file in sources.input_files() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
        }
        let registry = registry_build::load(&sources).map_err(BuildError::Registry)?;
        if self.cargo_directives {
            for note in &registry.notes {
                println!("cargo:warning=escepine: {}", note.replace('\n', " "));
            }
        }
        let code = registry_build::codegen::generate(&registry).map_err(BuildError::Codegen)?;
        let mut file =
            syn::parse_file(&code).map_err(|e| BuildError::Syntax(format!("records: {e}")))?;

        // The actions the records already have markers for, then the `.cedarschema`'s others.
        let generated: BTreeSet<String> = registry_build::cedar::actions(&registry.records)
            .into_iter()
            .map(|a| a.id)
            .collect();
        let mut markers: BTreeSet<String> = generated.iter().map(|id| marker(id)).collect();
        let mut extra = Vec::new();
        for action in registry.cedar.actions() {
            if generated.contains(&action.id) {
                continue;
            }
            let name = marker(&action.id);
            if !markers.insert(name.clone()) {
                return Err(BuildError::Name(format!(
                    "the Cedar action `{}` of the `.cedarschema` maps to the marker \
                     `actions::{name}`, which another action has; rename one",
                    action.id
                )));
            }
            let ident = ident(&name).ok_or_else(|| {
                BuildError::Name(format!(
                    "the Cedar action `{}` of the `.cedarschema` cannot be a Rust name \
                     (`actions::{name}`); rename it",
                    action.id
                ))
            })?;
            let id = action.id.as_str();
            let is_group = action.is_group;
            let doc = if is_group {
                format!(
                    " `Action::\"{id}\"`: an action group declared in the crate's `.cedarschema`."
                )
            } else {
                format!(
                    " `Action::\"{id}\"`: declared in the crate's `.cedarschema` (in the groups {}); \
                     the action of a Rust-first tool.",
                    action
                        .groups
                        .iter()
                        .map(|g| format!("`{g}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            extra.push(quote! {
                #[doc = #doc]
                #[allow(non_camel_case_types)]
                #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
                pub struct #ident;

                impl ::escepine_contract::CedarAction for #ident {
                    const ACTION_ID: &'static str = #id;
                    const IS_GROUP: bool = #is_group;
                }
            });
        }
        let actions = file.items.iter_mut().find_map(|item| match item {
            syn::Item::Mod(m) if m.ident == "actions" => m.content.as_mut(),
            _ => None,
        });
        let Some((_, items)) = actions else {
            return Err(BuildError::Syntax(
                "the generated code has no `actions` module".into(),
            ));
        };
        for tokens in extra {
            let parsed: syn::File = syn::parse2(tokens)
                .map_err(|e| BuildError::Syntax(format!("action markers: {e}")))?;
            items.extend(parsed.items);
        }

        let lit = |p: &Path| p.display().to_string();
        let record_lits: Vec<String> = records.iter().map(|p| lit(p)).collect();
        let opt = |p: &Option<PathBuf>| match p {
            Some(p) => {
                let s = lit(p);
                quote!(::core::option::Option::Some(#s))
            }
            None => quote!(::core::option::Option::None),
        };
        let (policies, envelope, workspace_root) =
            (opt(&policies), opt(&envelope), opt(&workspace_root));
        let sources_item: syn::File = syn::parse2(quote! {
            /// The inputs of this build (absolute paths): the tests `#[tool]` generates for
            /// Rust-first tools check against the same records, policies and envelope.
            #[allow(dead_code)]
            pub const SOURCES: ::escepine_contract::BuildSources = ::escepine_contract::BuildSources {
                records: &[#(#record_lits),*],
                policies: #policies,
                envelope: #envelope,
                workspace_root: #workspace_root,
            };
        })
        .map_err(|e| BuildError::Syntax(format!("SOURCES: {e}")))?;
        file.items.extend(sources_item.items);

        let n = registry.records.len();
        Ok(format!(
            "// @generated by escepine-toolhost's build helper from {n} tool record{} and the \
             crate's Cedar schema.\n// Do not edit: change the records, the policies or the \
             `.cedarschema`, and rebuild.\n\n{}",
            if n == 1 { "" } else { "s" },
            prettyplease::unparse(&file)
        ))
    }
}

/// The marker name of an action id (`read-only` → `read_only`).
fn marker(id: &str) -> String {
    id.replace('-', "_")
}

/// An identifier for `name` (raw for a keyword), if it can be one.
fn ident(name: &str) -> Option<Ident> {
    if ["self", "Self", "super", "crate", "_"].contains(&name) {
        return None;
    }
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return None;
    }
    Some(match syn::parse_str::<Ident>(name) {
        Ok(i) => i,
        Err(_) => Ident::new_raw(name, Span::call_site()),
    })
}
