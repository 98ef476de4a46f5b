//! One module per tool: its types, its canonical schema texts and its `Tool` implementation.

use proc_macro2::TokenStream;
use quote::quote;

use super::docs::doc_attrs;
use super::error::BuildError;
use super::idents::{action_ident, ident, ToolName};
use super::literal::raw_str;
use super::types::tool_types;
use escepine_registry::contract_tokens::ContractTokens;
use escepine_registry::record::ToolRecord;
use escepine_registry::rust_names::{action_marker, input_field};

/// `pub mod <tool_id> { … }` for one record.
pub(crate) fn tool_module(
    record: &ToolRecord,
    name: &ToolName,
    c: &syn::Path,
) -> Result<TokenStream, BuildError> {
    let id = record.tool_id();
    let module = &name.module;
    let url_type = format!("{}::url::Url", quote!(#c).to_string().replace(' ', ""));
    let types = tool_types(record, c, &url_type)?;

    let input_text = raw_str(&canonical(record.input_schema()));
    let output_text = raw_str(&canonical(record.output_schema()));

    let module_doc = doc_attrs(&format!("{}\n\n{}", record.description(), facts(record)));
    let input_doc = format!(
        " The canonical input schema of `{id}`: the very text the input gate validates payloads \
         against (`Contract::input_schema`)."
    );
    let output_doc = format!(
        " The canonical output schema of `{id}`: the very text the output gate validates outputs \
         against before commit (`Contract::output_schema`)."
    );
    let tool_doc = format!(
        " Tool `{id}` as a type: its registered contract and its Cedar action \
         (`actions::{}`).",
        action_marker(record.cedar_action())
    );
    let action = action_ident(record.cedar_action())?;
    let contract = ContractTokens::from_record(record, quote!(#c));
    let files = files_struct(record, c)?;

    Ok(quote! {
        #module_doc
        #[allow(dead_code, unused_imports, missing_docs, clippy::all)]
        pub mod #module {
            use super::error;

            #[doc = #input_doc]
            pub const INPUT_SCHEMA: &str = #input_text;
            #[doc = #output_doc]
            pub const OUTPUT_SCHEMA: &str = #output_text;

            #types

            #files

            #[doc = #tool_doc]
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            pub struct Tool;

            impl #c::Tool for Tool {
                type Input = Input;
                type Output = Output;
                type Action = super::actions::#action;
                const CONTRACT: #c::Contract = #contract;
            }
        }
    })
}

/// `pub struct Files` of a tool that declares workspace inputs (one field per input, an
/// `Option` for an optional one) and its conversion to the call's `WorkspaceFiles`; nothing for
/// a tool that declares none.
fn files_struct(record: &ToolRecord, c: &syn::Path) -> Result<TokenStream, BuildError> {
    let inputs = &record.sandbox_profile().workspace_inputs;
    if inputs.is_empty() {
        return Ok(TokenStream::new());
    }
    let mut fields = Vec::new();
    let mut inserts = Vec::new();
    for input in inputs {
        let field = ident(&input_field(&input.name)).map_err(|e| BuildError::Name {
            message: format!(
                "{}: workspace input `{}`: {e}",
                record.source().display(),
                input.name
            ),
        })?;
        let name = &input.name;
        let doc = format!(
            " `/workspace/{name}`: at most {} bytes{}.",
            input.max_bytes,
            if input.required { "" } else { ", optional" }
        );
        if input.required {
            fields.push(quote! { #[doc = #doc] pub #field: #c::WorkspaceFile });
            inserts.push(quote! { files.insert(#name, f.#field); });
        } else {
            fields.push(
                quote! { #[doc = #doc] pub #field: ::core::option::Option<#c::WorkspaceFile> },
            );
            inserts.push(quote! {
                if let ::core::option::Option::Some(file) = f.#field {
                    files.insert(#name, file);
                }
            });
        }
    }
    let doc = format!(
        " The workspace files of `{}`: each placed read-only at `/workspace/<name>` of the \
         call's sandbox, its SHA-256 recorded in the intent.",
        record.tool_id()
    );
    Ok(quote! {
        #[doc = #doc]
        #[derive(Debug, Clone)]
        pub struct Files {
            #(#fields,)*
        }

        impl ::core::convert::From<Files> for #c::WorkspaceFiles {
            fn from(f: Files) -> Self {
                let mut files = #c::WorkspaceFiles::new();
                #(#inserts)*
                files
            }
        }
    })
}

/// The canonical text of a schema: compact JSON in the record's key order.
pub(crate) fn canonical(schema: &serde_json::Value) -> String {
    // Serializing a `Value` cannot fail (its map keys are strings).
    serde_json::to_string(schema).unwrap_or_default()
}

/// One paragraph of contract facts for the module docs.
fn facts(record: &ToolRecord) -> String {
    let file = record
        .source()
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| record.source().display().to_string());
    let mut groups = vec![format!("`{}`", record.side_effect_class().as_str())];
    groups.extend(record.action_groups().iter().map(|g| format!("`{g}`")));
    let mut s =
        format!(
        "Tool `{}`, version {}, side-effect class `{}`, Cedar action `Action::\"{}\"` (in {}); \
         timeout {} ms per attempt, at most {} attempt{}. Generated from `{file}`.",
        record.tool_id(),
        record.version(),
        record.side_effect_class().as_str(),
        record.cedar_action(),
        groups.join(", "),
        record.timeout_ms(),
        record.retry().max_attempts,
        if record.retry().max_attempts == 1 { "" } else { "s" },
    );
    if let Some(c) = &record.compensation() {
        s.push_str(&format!(" Compensated by `{}`.", c.tool));
    }
    s
}
