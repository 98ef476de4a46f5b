//! `REGISTRY` and `SOURCES`: the registry compiled into the program, and the inputs it came
//! from.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;

use super::error::BuildError;
use super::options::Options;
use escepine_policy::BoundRegistry;
use escepine_registry::record::ResolvedCommand;

/// The `REGISTRY` and `SOURCES` constants of `registry`.
pub(crate) fn registry_items(
    registry: &BoundRegistry,
    options: &Options,
) -> Result<TokenStream, BuildError> {
    let c = &options.contract;
    let file = |path: &Path| -> Result<TokenStream, BuildError> {
        let abs = absolute(path)?;
        Ok(match &options.manifest_dir {
            // Relative to the crate, so the text is the same wherever it is compiled.
            Some(dir) => {
                let rel = format!("/{}", relative(&abs, dir).display());
                quote! { #c::embed_file!(#rel) }
            }
            None => {
                let shown = abs.display().to_string();
                quote! { #c::EmbeddedFile { path: #shown, text: ::core::include_str!(#shown) } }
            }
        })
    };
    // A record given as text (a linked tool's) has no file to include: its text is embedded.
    let given: Vec<&escepine_registry::diagnostic::SourceFile> = options
        .sources
        .iter()
        .flat_map(|s| &s.record_texts)
        .collect();
    let records = registry
        .records()
        .iter()
        .map(|r| match given.iter().find(|f| f.path == r.source()) {
            Some(f) => {
                let (path, text) = (f.path.display().to_string(), f.text.as_str());
                Ok(quote! { #c::EmbeddedFile { path: #path, text: #text } })
            }
            None => file(r.source()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let policies = registry
        .cedar()
        .schema_files
        .iter()
        .chain(&registry.cedar().policy_files)
        .map(|p| file(p))
        .collect::<Result<Vec<_>, _>>()?;
    let sops = registry
        .sops()
        .iter()
        .map(|s| file(&s.source))
        .collect::<Result<Vec<_>, _>>()?;
    let envelope = match registry.envelope() {
        Some(e) => {
            let f = file(&e.source)?;
            quote! { ::core::option::Option::Some(#f) }
        }
        None => quote! { ::core::option::Option::None },
    };
    // The workspace binaries and the linked hosts the endpoints resolved to.
    let (mut bins, mut linked) = (BTreeSet::<&str>::new(), BTreeSet::<&str>::new());
    for r in registry.records() {
        match &r.endpoint().resolved {
            ResolvedCommand::WorkspaceBin(name) => bins.insert(name.as_str()),
            ResolvedCommand::Linked(name) => linked.insert(name.as_str()),
            _ => false,
        };
    }

    let sources = build_sources(registry, options)?;
    Ok(quote! {
        /// The registry this code was generated from, checked by every registration rule at
        /// build time: each record, policy, Cedar schema, envelope and SOP file embedded as the
        /// text the build read (`escepine_policy::embedded::load(&REGISTRY)` gives the registry
        /// the runtime builds from; no records directory is read at run time).
        #[allow(dead_code)]
        pub const REGISTRY: #c::EmbeddedRegistry = #c::EmbeddedRegistry {
            records: &[#(#records),*],
            policies: &[#(#policies),*],
            envelope: #envelope,
            sops: &[#(#sops),*],
            workspace_bins: &[#(#bins),*],
            linked_hosts: &[#(#linked),*],
        };

        #sources
    })
}

/// `SOURCES`: the builder's inputs (absolute paths), which the tests `#[tool]` generates for
/// Rust-first tools check against.
fn build_sources(registry: &BoundRegistry, options: &Options) -> Result<TokenStream, BuildError> {
    let c = &options.contract;
    let lit = |p: &Path| -> Result<TokenStream, BuildError> {
        let abs = absolute(p)?;
        Ok(match &options.manifest_dir {
            Some(dir) => {
                let rel = format!("/{}", relative(&abs, dir).display());
                quote!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), #rel))
            }
            None => {
                let s = abs.display().to_string();
                quote!(#s)
            }
        })
    };
    let opt = |p: Option<&Path>| -> Result<TokenStream, BuildError> {
        Ok(match p {
            Some(p) => {
                let s = lit(p)?;
                quote!(::core::option::Option::Some(#s))
            }
            None => quote!(::core::option::Option::None),
        })
    };
    let (records, policies, envelope, root) = match &options.sources {
        Some(s) => (
            s.records
                .iter()
                .map(|p| lit(p))
                .collect::<Result<Vec<_>, _>>()?,
            opt(s.policies.as_deref())?,
            opt(s.envelope.as_deref())?,
            opt(s.workspace_root.as_deref())?,
        ),
        None => (
            registry
                .records()
                .iter()
                .map(|r| lit(r.source()))
                .collect::<Result<Vec<_>, _>>()?,
            opt(registry
                .cedar()
                .policy_files
                .iter()
                .chain(&registry.cedar().schema_files)
                .find_map(|p| p.parent()))?,
            opt(registry.envelope().map(|e| e.source.as_path()))?,
            quote!(::core::option::Option::None),
        ),
    };
    Ok(quote! {
        /// The inputs of this build (absolute paths): the tests `#[tool]` generates for
        /// Rust-first tools check against the same records, policies and envelope.
        #[allow(dead_code)]
        pub const SOURCES: #c::BuildSources = #c::BuildSources {
            records: &[#(#records),*],
            policies: #policies,
            envelope: #envelope,
            workspace_root: #root,
        };
    })
}

/// `path` made absolute (canonical when it is relative).
fn absolute(path: &Path) -> Result<PathBuf, BuildError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::fs::canonicalize(path).map_err(|source| BuildError::Embed {
        path: path.to_path_buf(),
        source,
    })
}

/// `path` relative to `base` (both absolute): the common prefix dropped, a `..` per remaining
/// component of `base`.
fn relative(path: &Path, base: &Path) -> PathBuf {
    let p: Vec<_> = path.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_and_descend() {
        assert_eq!(
            relative(
                Path::new("/w/tools/records/a.json"),
                Path::new("/w/examples/client")
            ),
            PathBuf::from("../../tools/records/a.json")
        );
        assert_eq!(
            relative(Path::new("/w/x/policies"), Path::new("/w/x")),
            PathBuf::from("policies")
        );
    }
}
