//! The `build.rs` code generator, in the style of `prost-build`.
//!
//! [`Builder`] loads a registry (every registration rule, Cedar strict validation), prints
//! `cargo:rerun-if-changed` for every file it read, and writes one formatted Rust file into
//! `OUT_DIR`, which the crate pulls in with [`escepine_contract::include_tools!`].
//! [`generate`] produces the same text from a loaded [`Registry`] without cargo (tests,
//! benchmarks, tools).
//!
//! The generated file holds, for a registry with a tool `firecrawl_scrape`:
//!
//! - `pub mod firecrawl_scrape`: the payload type `Input`, the output type `Output` and the
//!   types nested in them, from one typify type space over both schemas
//!   (`#[serde(deny_unknown_fields)]` at every depth, `format: uri` strings as [`url::Url`],
//!   bounded strings as plain `String`: the gates check bounds), the canonical schema texts
//!   `INPUT_SCHEMA` and `OUTPUT_SCHEMA` (the very documents both gates validate against), and
//!   the marker `Tool` implementing [`escepine_contract::Tool`] with the whole contract as
//!   constants;
//! - `pub mod error`: the one conversion error type of every tool's enums;
//! - `pub mod actions`: one marker type per action of the Cedar schema (class groups, custom
//!   groups, one per tool, and every action the user's `.cedarschema` declares, which Rust-first
//!   tools name), each implementing [`escepine_contract::CedarAction`];
//! - `pub enum ToolId`: every tool id, with `as_str`, `ALL`, `contract` and `FromStr`;
//! - `pub trait Client`: one typed method per tool, implemented for every
//!   [`escepine_contract::Invoke`] type, so a renamed or retyped field is a compile error at the
//!   call site;
//! - with SOPs ([`Builder::sops`]), `pub mod sops`: per SOP a module with a `Sop` marker
//!   ([`escepine_contract::SopDefinition`]), a `State` enum with the declared transitions, and one
//!   step type per execution state ([`escepine_contract::SopStep`]) whose `Tool` is the bound
//!   tool, so a step cannot be handed another tool's payload;
//! - `REGISTRY`: the registry itself ([`escepine_contract::EmbeddedRegistry`]), every input
//!   file embedded with `include_str!`, which [`crate::embedded::load`] turns back into the
//!   [`Registry`] the runtime builds from, so the program needs no records directory at run time;
//!   and `SOURCES` ([`escepine_contract::BuildSources`]), the paths of the build's inputs.
//!
//! The generated code needs only `serde`, `serde_json` and `escepine-contract` (or the crate
//! [`Builder::contract_path`] names) in the user's crate.

mod actions;
mod builder;
mod client;
mod contract;
mod docs;
mod embed;
mod error;
mod idents;
mod sop;
mod types;

use proc_macro2::TokenStream;
use quote::quote;

pub use builder::Builder;
pub use error::BuildError;

#[cfg(test)]
use crate::cedar;
use crate::cedar::ActionInfo;
use crate::record::ToolRecord;
use crate::registry::Registry;

/// The file name [`Builder`] writes into `OUT_DIR` unless told otherwise.
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
    pub sources: Option<crate::registry::Sources>,
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

/// Generate the Rust source for a loaded registry: formatted, documented, warning-free, with
/// the registry embedded (every input file by its absolute path).
///
/// This is what [`Builder::compile`] writes, without touching cargo or the file system.
///
/// # Errors
/// [`BuildError::Types`] when typify cannot express a schema, [`BuildError::Name`] when a tool id
/// or an action id cannot be a Rust name (or two map to the same one), [`BuildError::Embed`]
/// when an input file has no absolute path.
pub fn generate(registry: &Registry) -> Result<String, BuildError> {
    generate_with(registry, &Options::default())
}

/// [`generate`] with options.
pub(crate) fn generate_with(registry: &Registry, options: &Options) -> Result<String, BuildError> {
    let actions = registry.cedar.actions();
    let embedded = if options.embed {
        Some(embed::registry_items(registry, options)?)
    } else {
        None
    };
    generate_all(
        &registry.records,
        &actions,
        &registry.sops,
        options,
        embedded,
    )
}

/// Generate from records that passed every registration rule (sorted or not), without a Cedar
/// binding (the actions are the records') and without embedding.
#[cfg(test)]
pub(crate) fn generate_records(records: &[ToolRecord]) -> Result<String, BuildError> {
    let options = Options {
        embed: false,
        ..Options::default()
    };
    generate_all(records, &cedar::actions(records), &[], &options, None)
}

/// Generate from records, the actions of their Cedar schema and the SOPs checked against them.
fn generate_all(
    records: &[ToolRecord],
    actions: &[ActionInfo],
    sops: &[crate::sop::Sop],
    options: &Options,
    embedded: Option<TokenStream>,
) -> Result<String, BuildError> {
    let mut sorted: Vec<&ToolRecord> = records.iter().collect();
    sorted.sort_by(|a, b| a.tool_id.cmp(&b.tool_id));

    let c = &options.contract;
    let names = idents::ToolNames::new(&sorted)?;
    let modules = tool_modules(&sorted, c)?;
    let mut items = TokenStream::new();
    if !sorted.is_empty() {
        items.extend(types::conversion_error_module());
    }
    items.extend(actions::actions_module(actions, &sorted, c)?);
    items.extend(client::tool_id_enum(&sorted, &names, c));
    items.extend(client::client_trait(&sorted, &names, c));
    if !sops.is_empty() {
        items.extend(sop::sops_module(sops, &sorted, &names, c)?);
    }
    items.extend(embedded);
    let rest = render(items)?;
    let count = sorted.len();
    let plural = if count == 1 { "" } else { "s" };
    Ok(format!(
        "// @generated by escepine-registry-build from {count} tool record{plural}. Do not edit:\n\
         // change the records and rebuild.\n\n{modules}{rest}"
    ))
}

/// The tool modules, printed: each tool's types and contract are independent of the others',
/// so the records are split over the available cores (the text is the same as one pass's:
/// prettyplease prints top-level items one after the other).
fn tool_modules(records: &[&ToolRecord], c: &syn::Path) -> Result<String, BuildError> {
    let threads = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1)
        .min(records.len().div_ceil(8).max(1));
    // Names and paths hold `!Send` spans: each part makes its own from text.
    let path = quote!(#c).to_string();
    let one = |part: &[&ToolRecord]| -> Result<String, BuildError> {
        let c: syn::Path = syn::parse_str(&path).map_err(|e| BuildError::ContractPath {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let names = idents::ToolNames::new(part)?;
        let mut items = TokenStream::new();
        for (record, name) in part.iter().zip(&names.tools) {
            items.extend(contract::tool_module(record, name, &c)?);
        }
        render(items)
    };
    if threads <= 1 {
        return one(records);
    }
    let chunk = records.len().div_ceil(threads);
    let parts: Vec<Result<String, BuildError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = records
            .chunks(chunk)
            .map(|part| scope.spawn(move || one(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(BuildError::Syntax("a generator thread panicked".into()))
                })
            })
            .collect()
    });
    parts.into_iter().collect()
}

/// Parse a token stream with syn 2 and print it with prettyplease.
fn render(items: TokenStream) -> Result<String, BuildError> {
    let file: syn::File = syn::parse2(items).map_err(|e| BuildError::Syntax(e.to_string()))?;
    Ok(prettyplease::unparse(&file))
}

/// `quote!` of a list of string literals as a `&'static [&'static str]` expression.
fn str_slice<'a>(items: impl IntoIterator<Item = &'a str>) -> TokenStream {
    let items = items.into_iter();
    quote! { &[#(#items),*] }
}

/// `text` as a raw string literal (`r#"…"#`, with as many `#` as it needs), so JSON reads as
/// JSON in the generated file.
pub(crate) fn raw_str(text: &str) -> proc_macro2::Literal {
    let mut hashes = 1;
    while text.contains(&format!("\"{}", "#".repeat(hashes))) {
        hashes += 1;
    }
    let h = "#".repeat(hashes);
    format!("r{h}\"{text}\"{h}")
        .parse()
        .unwrap_or_else(|_| proc_macro2::Literal::string(text))
}

#[cfg(test)]
mod tests;
