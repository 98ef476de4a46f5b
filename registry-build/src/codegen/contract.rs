//! One module per tool: its types, its canonical schema texts and its `Tool` implementation.

use escepine_contract::{FailureOutcome, SideEffectClass, Transport};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::docs::doc_attrs;
use super::error::BuildError;
use super::idents::{action_marker, ToolName};
use super::str_slice;
use super::types::{schema_types, Which};
use crate::record::ToolRecord;

/// `pub mod <tool_id> { … }` for one record.
pub(crate) fn tool_module(record: &ToolRecord, name: &ToolName) -> Result<TokenStream, BuildError> {
    let id = record.tool_id.as_str();
    let module = &name.module;
    let input_types = schema_types(record, Which::Input)?;
    let output_types = schema_types(record, Which::Output)?;

    let input_text = canonical(&record.input_schema);
    let output_text = canonical(&record.output_schema);

    let module_doc = doc_attrs(&format!("{}\n\n{}", record.description, facts(record)));
    let input_doc = format!(
        " The canonical input schema of `{id}`: the very text the input gate validates payloads \
         against (`Contract::input_schema`)."
    );
    let output_doc = format!(
        " The canonical output schema of `{id}`: the very text the output gate validates outputs \
         against before commit (`Contract::output_schema`)."
    );
    let input_mod_doc = format!(
        " The payload types of `{id}`, generated from its `input_schema` (closed at every depth)."
    );
    let output_mod_doc = format!(
        " The output types of `{id}`, generated from its `output_schema` (closed at every depth)."
    );
    let tool_doc = format!(
        " Tool `{id}` as a type: its registered contract and its Cedar action \
         (`actions::{}`).",
        action_marker(&record.cedar_action)
    );
    let action = action_ident(&record.cedar_action)?;
    let contract = contract_expr(record);

    Ok(quote! {
        #module_doc
        #[allow(dead_code, unused_imports)]
        pub mod #module {
            pub use self::input::*;
            pub use self::output::Output;

            #[doc = #input_doc]
            pub const INPUT_SCHEMA: &str = #input_text;
            #[doc = #output_doc]
            pub const OUTPUT_SCHEMA: &str = #output_text;

            #[doc = #input_mod_doc]
            #[allow(missing_docs, clippy::all)]
            pub mod input {
                #input_types
            }

            #[doc = #output_mod_doc]
            #[allow(missing_docs, clippy::all)]
            pub mod output {
                #output_types
            }

            #[doc = #tool_doc]
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            pub struct Tool;

            impl ::escepine_contract::Tool for Tool {
                type Input = self::input::Input;
                type Output = self::output::Output;
                type Action = super::actions::#action;
                const CONTRACT: ::escepine_contract::Contract = #contract;
            }
        }
    })
}

/// The canonical text of a schema: compact JSON in the record's key order.
pub(crate) fn canonical(schema: &serde_json::Value) -> String {
    // Serializing a `Value` cannot fail (its map keys are strings).
    serde_json::to_string(schema).unwrap_or_default()
}

/// The marker type of an action id.
pub(crate) fn action_ident(id: &str) -> Result<proc_macro2::Ident, BuildError> {
    super::idents::ident(&action_marker(id)).map_err(|e| BuildError::Name {
        message: format!("Cedar action `{id}`: {e}"),
    })
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
fn contract_expr(record: &ToolRecord) -> TokenStream {
    let id = &record.tool_id;
    let version = record.version.to_string();
    let description = &record.description;
    let cedar_action = &record.cedar_action;
    let action_groups = str_slice(record.action_groups.iter().map(String::as_str));
    let class = format_ident!(
        "{}",
        match record.side_effect_class {
            SideEffectClass::ReadOnly => "ReadOnly",
            SideEffectClass::Compensatable => "Compensatable",
            SideEffectClass::Supersede => "Supersede",
        }
    );
    let compensation = match &record.compensation {
        Some(c) => {
            let tool = &c.tool;
            let fields = c.map.iter().map(|(k, _)| k);
            let pointers = c.map.iter().map(|(_, v)| v);
            quote! {
                ::core::option::Option::Some(::escepine_contract::Compensation {
                    tool: #tool,
                    map: &[#((#fields, #pointers)),*],
                })
            }
        }
        None => quote! { ::core::option::Option::None },
    };
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
    let args = str_slice(record.endpoint.args.iter().map(String::as_str));
    let sha256 = match &record.endpoint.sha256 {
        Some(d) => quote! { ::core::option::Option::Some(#d) },
        None => quote! { ::core::option::Option::None },
    };
    let opt_str = |v: Option<&str>| match v {
        Some(s) => quote! { ::core::option::Option::Some(#s) },
        None => quote! { ::core::option::Option::None },
    };
    let image = opt_str(record.endpoint.image.as_ref().map(|i| i.raw.as_str()));
    let definition_sha256 = opt_str(record.endpoint.definition_sha256.as_deref());
    let title = opt_str(record.title.as_deref());
    let open_world = match record.open_world {
        Some(b) => quote! { ::core::option::Option::Some(#b) },
        None => quote! { ::core::option::Option::None },
    };
    let read_only: Vec<String> = record
        .sandbox_profile
        .read_only
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let read_only = str_slice(read_only.iter().map(String::as_str));
    let secrets = str_slice(record.secrets.iter().map(String::as_str));
    let egress: Vec<String> = record
        .sandbox_profile
        .egress
        .iter()
        .map(ToString::to_string)
        .collect();
    let egress = str_slice(egress.iter().map(String::as_str));
    let filesystem = match record.sandbox_profile.filesystem {
        escepine_contract::Filesystem::Workspace => quote! { Workspace },
    };

    quote! {
        ::escepine_contract::Contract {
            id: #id,
            version: #version,
            title: #title,
            description: #description,
            open_world: #open_world,
            cedar_action: #cedar_action,
            action_groups: #action_groups,
            class: ::escepine_contract::SideEffectClass::#class,
            compensation: #compensation,
            timeout_ms: #timeout_ms,
            retry: ::escepine_contract::RetryPolicy {
                max_attempts: #max_attempts,
                backoff_ms: #backoff_ms,
            },
            on_failure: &[#(::escepine_contract::FailureOutcome::#on_failure),*],
            endpoint: ::escepine_contract::Endpoint {
                transport: ::escepine_contract::Transport::#transport,
                command: #command,
                args: #args,
                sha256: #sha256,
                image: #image,
                definition_sha256: #definition_sha256,
            },
            secrets: #secrets,
            egress: #egress,
            filesystem: ::escepine_contract::Filesystem::#filesystem,
            read_only: #read_only,
            input_schema: INPUT_SCHEMA,
            output_schema: OUTPUT_SCHEMA,
        }
    }
}
