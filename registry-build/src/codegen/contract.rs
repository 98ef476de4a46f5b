//! One module per tool: its types, its canonical schema texts and its `Tool` implementation.

use escepine_contract::{FailureOutcome, Filesystem, SideEffectClass, Transport};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::docs::doc_attrs;
use super::error::BuildError;
use super::idents::{action_ident, ToolName};
use super::literal::{raw_str, str_slice};
use super::types::tool_types;
use crate::record::ToolRecord;
use crate::rust_names::action_marker;

/// `pub mod <tool_id> { … }` for one record.
pub(crate) fn tool_module(
    record: &ToolRecord,
    name: &ToolName,
    c: &syn::Path,
) -> Result<TokenStream, BuildError> {
    let id = record.tool_id.as_str();
    let module = &name.module;
    let url_type = format!("{}::url::Url", quote!(#c).to_string().replace(' ', ""));
    let types = tool_types(record, &url_type)?;

    let input_text = raw_str(&canonical(&record.input_schema));
    let output_text = raw_str(&canonical(&record.output_schema));

    let module_doc = doc_attrs(&format!("{}\n\n{}", record.description, facts(record)));
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
        action_marker(&record.cedar_action)
    );
    let action = action_ident(&record.cedar_action)?;
    let contract = contract_expr(record, c);

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

/// The canonical text of a schema: compact JSON in the record's key order.
pub(crate) fn canonical(schema: &serde_json::Value) -> String {
    // Serializing a `Value` cannot fail (its map keys are strings).
    serde_json::to_string(schema).unwrap_or_default()
}

/// One paragraph of contract facts for the module docs.
fn facts(record: &ToolRecord) -> String {
    let file = record
        .source
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| record.source.display().to_string());
    let mut groups = vec![format!("`{}`", record.side_effect_class.as_str())];
    groups.extend(record.action_groups.iter().map(|g| format!("`{g}`")));
    let mut s =
        format!(
        "Tool `{}`, version {}, side-effect class `{}`, Cedar action `Action::\"{}\"` (in {}); \
         timeout {} ms per attempt, at most {} attempt{}. Generated from `{file}`.",
        record.tool_id,
        record.version,
        record.side_effect_class.as_str(),
        record.cedar_action,
        groups.join(", "),
        record.timeout_ms,
        record.retry.max_attempts,
        if record.retry.max_attempts == 1 { "" } else { "s" },
    );
    if let Some(c) = &record.compensation {
        s.push_str(&format!(" Compensated by `{}`.", c.tool));
    }
    s
}

/// The `Contract { … }` constant expression of a record.
fn contract_expr(record: &ToolRecord, c: &syn::Path) -> TokenStream {
    let id = &record.tool_id;
    let version = record.version.to_string();
    let description = &record.description;
    let cedar_action = &record.cedar_action;
    let class = format_ident!(
        "{}",
        match record.side_effect_class {
            SideEffectClass::ReadOnly => "ReadOnly",
            SideEffectClass::Compensatable => "Compensatable",
            SideEffectClass::Supersede => "Supersede",
        }
    );
    let compensation = record.compensation.as_ref().map(|inverse| {
        let tool = &inverse.tool;
        let fields = inverse.map.iter().map(|(k, _)| k);
        let pointers = inverse.map.iter().map(|(_, v)| v);
        quote! {
            ::core::option::Option::Some(#c::Compensation {
                tool: #tool,
                map: &[#((#fields, #pointers)),*],
            })
        }
    });
    let timeout_ms = Literal::u64_unsuffixed(record.timeout_ms);
    let max_attempts = Literal::u32_unsuffixed(record.retry.max_attempts);
    let backoff_ms = Literal::u64_unsuffixed(record.retry.backoff_ms);
    let on_failure = record.on_failure.iter().map(|o| {
        format_ident!(
            "{}",
            match o {
                FailureOutcome::Halt => "Halt",
                FailureOutcome::HaltAndEscalate => "HaltAndEscalate",
                FailureOutcome::Compensate => "Compensate",
            }
        )
    });
    let transport = format_ident!(
        "{}",
        match record.endpoint.transport {
            Transport::StdioJson => "StdioJson",
            Transport::McpStdio => "McpStdio",
        }
    );
    let command = &record.endpoint.command;
    let some_str = |v: Option<&str>| v.map(|s| quote! { ::core::option::Option::Some(#s) });
    let list = |items: Vec<String>| {
        (!items.is_empty()).then(|| str_slice(items.iter().map(String::as_str)))
    };

    // Fields left at `Endpoint::OMITTED` / `Contract::OMITTED` are not written.
    let mut endpoint = vec![
        quote! { transport: #c::Transport::#transport },
        quote! { command: #command },
    ];
    let optional_endpoint = [
        ("args", list(record.endpoint.args.clone())),
        ("sha256", some_str(record.endpoint.sha256.as_deref())),
        (
            "image",
            some_str(record.endpoint.image.as_ref().map(|i| i.raw.as_str())),
        ),
        (
            "definition_sha256",
            some_str(record.endpoint.definition_sha256.as_deref()),
        ),
    ];
    for (field, value) in optional_endpoint {
        if let Some(v) = value {
            let f = format_ident!("{field}");
            endpoint.push(quote! { #f: #v });
        }
    }

    let mut fields = vec![quote! { id: #id }, quote! { version: #version }];
    if let Some(t) = some_str(record.title.as_deref()) {
        fields.push(quote! { title: #t });
    }
    fields.push(quote! { description: #description });
    if let Some(b) = record.open_world {
        fields.push(quote! { open_world: ::core::option::Option::Some(#b) });
    }
    fields.push(quote! { cedar_action: #cedar_action });
    if let Some(groups) = list(record.action_groups.clone()) {
        fields.push(quote! { action_groups: #groups });
    }
    fields.push(quote! { class: #c::SideEffectClass::#class });
    if let Some(comp) = compensation {
        fields.push(quote! { compensation: #comp });
    }
    fields.push(quote! { timeout_ms: #timeout_ms });
    fields.push(quote! { retry: #c::RetryPolicy::new(#max_attempts, #backoff_ms) });
    if record.on_failure == FailureOutcome::ALL {
        fields.push(quote! { on_failure: &#c::FailureOutcome::ALL });
    } else {
        fields.push(quote! { on_failure: &[#(#c::FailureOutcome::#on_failure),*] });
    }
    fields.push(quote! {
        endpoint: #c::Endpoint { #(#endpoint,)* ..#c::Endpoint::OMITTED }
    });
    let optional = [
        ("secrets", list(record.secrets.clone())),
        (
            "egress",
            list(
                record
                    .sandbox_profile
                    .egress
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
            ),
        ),
        (
            "read_only",
            list(
                record
                    .sandbox_profile
                    .read_only
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
            ),
        ),
    ];
    for (field, value) in optional {
        if let Some(v) = value {
            let f = format_ident!("{field}");
            fields.push(quote! { #f: #v });
        }
    }
    let filesystem = match record.sandbox_profile.filesystem {
        Filesystem::Workspace => quote! { Workspace },
    };
    fields.push(quote! { filesystem: #c::Filesystem::#filesystem });
    fields.push(quote! { input_schema: INPUT_SCHEMA });
    fields.push(quote! { output_schema: OUTPUT_SCHEMA });

    quote! {
        #c::Contract { #(#fields,)* ..#c::Contract::OMITTED }
    }
}
