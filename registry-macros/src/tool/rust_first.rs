//! Rust-first: `#[tool(id = "…", …)]` declares the whole contract in Rust.

use escepine_contract::{FailureOutcome, Filesystem, Isolation, SideEffectClass, Transport};
use escepine_registry::contract_tokens::ContractTokens;
use escepine_registry::contract_tokens::SchemaTexts;
use proc_macro2::TokenStream;
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
    version: String,
    class: SideEffectClass,
    timeout_ms: u64,
    max_attempts: u32,
    backoff_ms: u64,
    on_failure: Vec<FailureOutcome>,
    action_groups: Vec<String>,
    egress: Vec<String>,
    secrets: Vec<String>,
    /// The inverse's id, and inverse field → JSON pointer.
    compensation: Option<(String, Vec<(String, String)>)>,
    command: Option<String>,
    types: Option<Path>,
    description: String,
}

impl RustFirst {
    /// The contract of arguments that passed validation (`None` if one is missing after all).
    pub fn from_attr(a: &ToolAttr, description: String) -> Option<Self> {
        let retry = a.retry.get()?;
        let class = SideEffectClass::parse(&a.side_effect.get()?.value())?;
        let on_failure = a
            .on_failure
            .get()?
            .iter()
            .map(|o| FailureOutcome::parse(&o.name))
            .collect::<Option<Vec<_>>>()?;
        let values = |lits: Option<&Vec<LitStr>>| -> Vec<String> {
            lits.map(|l| l.iter().map(LitStr::value).collect())
                .unwrap_or_default()
        };
        let compensation = match a.compensation.get() {
            Some(c) => Some((
                c.tool.as_ref()?.value(),
                c.map.iter().map(|(k, p)| (k.clone(), p.value())).collect(),
            )),
            None => None,
        };
        Some(Self {
            id: a.id.get()?.clone(),
            version: a.version.get()?.value(),
            class,
            timeout_ms: a.timeout_ms.get()?.base10_parse().ok()?,
            max_attempts: retry.max_attempts.as_ref()?.base10_parse().ok()?,
            backoff_ms: retry.backoff_ms.as_ref()?.base10_parse().ok()?,
            on_failure,
            action_groups: values(a.action_groups.get()),
            egress: values(a.sandbox.get().map(|s| &s.egress)),
            secrets: values(a.secrets.get()),
            compensation,
            command: a.command.get().map(LitStr::value),
            types: a.types.get().cloned(),
            description,
        })
    }
}

impl RustFirst {
    /// The contract constant, by the generator's own rendering: the endpoint runs the crate's
    /// binary (or `command`) with the tool id as its argument; the schema texts are derived.
    fn contract(&self) -> ContractTokens {
        let id = self.id.value();
        ContractTokens {
            path: quote!(::escepine_contract),
            id: id.clone(),
            version: self.version.clone(),
            title: None,
            description: self.description.clone(),
            open_world: None,
            cedar_action: id.clone(),
            action_groups: self.action_groups.clone(),
            class: self.class,
            compensation: self.compensation.clone(),
            timeout_ms: self.timeout_ms,
            max_attempts: self.max_attempts,
            backoff_ms: self.backoff_ms,
            on_failure: self.on_failure.clone(),
            transport: Transport::StdioJson,
            command: self.command.clone(),
            args: vec![id],
            sha256: None,
            image: None,
            definition_sha256: None,
            url: None,
            remote_tool: None,
            secrets: self.secrets.clone(),
            egress: self.egress.clone(),
            read_only: Vec::new(),
            filesystem: Filesystem::Workspace,
            isolation: Isolation::Namespaces,
            schemas: SchemaTexts::Derived,
        }
    }
}

pub(crate) fn expand(func: &ItemFn, sig: &Signature, args: &RustFirst) -> TokenStream {
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
    // Named once, at the user's `id = "…"`, through the generated `action!`: an action the
    // crate's `.cedarschema` does not declare is a compile error naming it and the schema file.
    let compile_error = syn::Ident::new("compile_error", id.span());
    let action = quote_spanned!(id.span()=> #types::action!{[#types] #id_ident #id #compile_error});

    let input_ty = &sig.input;
    let output_ty = &sig.output;
    let contract = args.contract();
    // The payload types must be payloads; the bound is checked at the user's types.
    let input_bound = quote_spanned!(input_ty.span()=> #input_ty);
    // The context the `.cedarschema` declares for the action against the shape the input's
    // fields imply, while the crate compiles (reported at the input's type).
    let context_check = quote_spanned! {input_ty.span()=>
        const _: () = {
            type Action = <#name as ::escepine_contract::Tool>::Action;
            const MISMATCH: ::escepine_contract::cedar_shape::Mismatch =
                ::escepine_contract::cedar_shape::check(
                    <Action as ::escepine_contract::CedarAction>::ACTION_ID,
                    <Action as ::escepine_contract::CedarAction>::SCHEMA_FILE,
                    &<Action as ::escepine_contract::CedarAction>::CONTEXT,
                    &<#input_ty as ::escepine_contract::Payload>::CEDAR_SHAPE,
                );
            if MISMATCH.found() {
                ::core::panic!("{}", MISMATCH.as_str())
            }
        };
    };
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
            // The schema texts are derived from the payload types when the program runs: see
            // `contract()`.
            const CONTRACT: ::escepine_contract::Contract = #contract;

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

        #context_check

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
