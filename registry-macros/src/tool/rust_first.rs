//! Rust-first: `#[tool(id = "…", …)]` declares the whole contract in Rust.

use escepine_contract::{FailureOutcome, SideEffectClass};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{ItemFn, LitStr, Path};

use super::attr::ToolAttr;
use super::names::{from_child_module, tool_ident, types_path};
use super::signature::{call_body, Signature};

/// A Rust-first contract whose arguments passed every rule.
pub(crate) struct RustFirst {
    id: LitStr,
    version: LitStr,
    /// The `SideEffectClass` variant.
    class: &'static str,
    timeout_ms: u64,
    max_attempts: u32,
    backoff_ms: u64,
    /// The `FailureOutcome` variants.
    on_failure: Vec<&'static str>,
    action_groups: Vec<LitStr>,
    egress: Vec<LitStr>,
    secrets: Vec<LitStr>,
    /// The inverse's id, and inverse field → JSON pointer.
    compensation: Option<(LitStr, Vec<(String, LitStr)>)>,
    command: Option<LitStr>,
    types: Option<Path>,
    description: String,
}

impl RustFirst {
    /// The contract of arguments that passed validation (`None` if one is missing after all).
    pub fn from_attr(a: &ToolAttr, description: String) -> Option<Self> {
        let retry = a.retry.get()?;
        let class = match SideEffectClass::parse(&a.side_effect.get()?.value())? {
            SideEffectClass::ReadOnly => "ReadOnly",
            SideEffectClass::Compensatable => "Compensatable",
            SideEffectClass::Supersede => "Supersede",
        };
        let on_failure = a
            .on_failure
            .get()?
            .iter()
            .map(|o| {
                FailureOutcome::parse(&o.name).map(|o| match o {
                    FailureOutcome::Halt => "Halt",
                    FailureOutcome::HaltAndEscalate => "HaltAndEscalate",
                    FailureOutcome::Compensate => "Compensate",
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let compensation = match a.compensation.get() {
            Some(c) => Some((c.tool.clone()?, c.map.clone())),
            None => None,
        };
        Some(Self {
            id: a.id.get()?.clone(),
            version: a.version.get()?.clone(),
            class,
            timeout_ms: a.timeout_ms.get()?.base10_parse().ok()?,
            max_attempts: retry.max_attempts.as_ref()?.base10_parse().ok()?,
            backoff_ms: retry.backoff_ms.as_ref()?.base10_parse().ok()?,
            on_failure,
            action_groups: a.action_groups.get().cloned().unwrap_or_default(),
            egress: a
                .sandbox
                .get()
                .map(|s| s.egress.clone())
                .unwrap_or_default(),
            secrets: a.secrets.get().cloned().unwrap_or_default(),
            compensation,
            command: a.command.get().cloned(),
            types: a.types.get().cloned(),
            description,
        })
    }
}

pub(crate) fn expand(func: &ItemFn, sig: &Signature, args: &RustFirst) -> TokenStream {
    let description = &args.description;
    let id_ident = match tool_ident(&args.id) {
        Ok(i) => i,
        Err(e) => {
            let e = e.into_compile_error();
            return quote! { #func #e };
        }
    };
    let name = &func.sig.ident;
    let vis = &func.vis;
    let id = &args.id;
    let types = types_path(args.types.as_ref(), id.span());
    // Named once, at the user's `id = "…"`: an action the crate's `.cedarschema` does not
    // declare has no generated marker, and this path fails to resolve.
    let action = quote_spanned!(id.span()=> #types::actions::#id_ident);

    let input_ty = &sig.input;
    let output_ty = &sig.output;
    let version = &args.version;
    let class = format_ident!("{}", args.class);
    let action_groups = &args.action_groups;
    let compensation = match &args.compensation {
        Some((tool, map)) => {
            let fields = map.iter().map(|(k, _)| k);
            let pointers = map.iter().map(|(_, p)| p);
            quote! {
                ::core::option::Option::Some(::escepine_contract::Compensation {
                    tool: #tool,
                    map: &[#((#fields, #pointers)),*],
                })
            }
        }
        None => quote!(::core::option::Option::None),
    };
    let timeout_ms = Literal::u64_unsuffixed(args.timeout_ms);
    let max_attempts = Literal::u32_unsuffixed(args.max_attempts);
    let backoff_ms = Literal::u64_unsuffixed(args.backoff_ms);
    let on_failure = args.on_failure.iter().map(|o| format_ident!("{o}"));
    let command = match &args.command {
        Some(c) => quote!(#c),
        None => quote! {
            match ::core::option_env!("CARGO_BIN_NAME") {
                ::core::option::Option::Some(bin) => bin,
                ::core::option::Option::None => ::core::env!("CARGO_PKG_NAME"),
            }
        },
    };
    let secrets = &args.secrets;
    let egress = &args.egress;

    // The payload types must be payloads; the bound is checked at the user's types.
    let input_bound = quote_spanned!(input_ty.span()=> #input_ty);
    let output_bound = quote_spanned!(output_ty.span()=> #output_ty);
    let body = call_body(func, sig, quote!(input));

    let group_message = format!(
        "the Cedar action `{}` is an action group, not a tool's action",
        id.value()
    );
    let doc = format!(
        " The tool `{}` (Rust-first, `#[tool]`): its contract, its Cedar action and [`{name}`] \
         as its implementation.",
        id.value()
    );
    let test_mod = format_ident!("escepine_tool_{}", name.unraw());
    let sources = from_child_module(&types);

    quote! {
        #func

        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #vis struct #name {}

        impl ::escepine_contract::Tool for #name {
            type Input = #input_ty;
            type Output = #output_ty;
            type Action = #action;
            const CONTRACT: ::escepine_contract::Contract = ::escepine_contract::Contract {
                id: #id,
                version: #version,
                title: ::core::option::Option::None,
                description: #description,
                open_world: ::core::option::Option::None,
                cedar_action: #id,
                action_groups: &[#(#action_groups),*],
                class: ::escepine_contract::SideEffectClass::#class,
                compensation: #compensation,
                timeout_ms: #timeout_ms,
                retry: ::escepine_contract::RetryPolicy {
                    max_attempts: #max_attempts,
                    backoff_ms: #backoff_ms,
                },
                on_failure: &[#(::escepine_contract::FailureOutcome::#on_failure),*],
                endpoint: ::escepine_contract::Endpoint {
                    transport: ::escepine_contract::Transport::StdioJson,
                    command: #command,
                    args: &[#id],
                    sha256: ::core::option::Option::None,
                    image: ::core::option::Option::None,
                    definition_sha256: ::core::option::Option::None,
                },
                secrets: &[#(#secrets),*],
                egress: &[#(#egress),*],
                filesystem: ::escepine_contract::Filesystem::Workspace,
                read_only: &[],
                // Derived from the payload types when the program runs: see `contract()`.
                input_schema: "",
                output_schema: "",
            };

            fn contract() -> ::escepine_contract::Contract {
                static CONTRACT: ::std::sync::OnceLock<::escepine_contract::Contract> =
                    ::std::sync::OnceLock::new();
                ::escepine_contract::payload::rust_first_contract::<#input_bound, #output_bound>(
                    &CONTRACT,
                    <Self as ::escepine_contract::Tool>::CONTRACT,
                )
            }
        }

        impl ::escepine_contract::ToolFn for #name {
            type Tool = Self;

            fn call(
                input: #input_ty,
                cx: ::escepine_contract::CallContext,
            ) -> ::escepine_contract::LocalBoxFuture<
                ::core::result::Result<#output_ty, ::escepine_contract::ToolError>,
            > {
                ::std::boxed::Box::pin(async move { #body })
            }
        }

        const _: () = ::core::assert!(
            !<<#name as ::escepine_contract::Tool>::Action as ::escepine_contract::CedarAction>::IS_GROUP,
            #group_message
        );

        #[cfg(test)]
        #[allow(non_snake_case)]
        mod #test_mod {
            /// The tool's record (its schemas from its payload types) passes every registration
            /// rule with the crate's records, policies and envelope, and the context type its
            /// `.cedarschema` declares for its action is the one its payload implies.
            #[test]
            fn registers_with_its_cedar_action() {
                ::escepine_toolhost::check::rust_first::<super::#name>(&#sources::SOURCES);
            }
        }
    }
}
