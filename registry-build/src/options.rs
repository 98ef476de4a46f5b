//! The options of [`Builder`](super::Builder) that shape the generated text.

/// The file name [`Builder`](super::Builder) writes into `OUT_DIR` unless told otherwise.
pub const DEFAULT_FILE_NAME: &str = "escepine_tools.rs";

/// The path generated code names the contract crate by unless told otherwise.
pub const DEFAULT_CONTRACT_PATH: &str = "::escepine_contract";

/// How the code is generated: the options of [`Builder`] that shape the text.
#[derive(Clone)]
pub(crate) struct Options {
    /// The contract crate's path (`::escepine_contract`).
    pub contract: syn::Path,
    /// Whether to embed the registry (`REGISTRY`, `SOURCES`).
    pub embed: bool,
    /// The inputs named in `SOURCES`, when embedding.
    pub sources: Option<escepine_registry::registry::Sources>,
    /// The directory of the crate that includes the code (`CARGO_MANIFEST_DIR`): embedded
    /// files are named relative to it. Without one, by absolute path.
    pub manifest_dir: Option<std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            contract: default_contract_path(),
            embed: true,
            sources: None,
            manifest_dir: None,
        }
    }
}

/// `::escepine_contract` as a path.
pub(crate) fn default_contract_path() -> syn::Path {
    syn::parse_quote!(::escepine_contract)
}
