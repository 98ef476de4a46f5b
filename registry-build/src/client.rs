//! `ToolId` (every tool id as an enum) and the typed `Client` trait.

use proc_macro2::TokenStream;
use quote::quote;

use super::docs::{doc_attrs, summary};
use super::idents::ToolNames;
use escepine_registry::record::ToolRecord;

/// `pub enum ToolId`, its methods and `FromStr`, and the `UnknownToolId` error.
pub(crate) fn tool_id_enum(
    records: &[&ToolRecord],
    names: &ToolNames,
    c: &syn::Path,
) -> TokenStream {
    let variants: Vec<_> = names.tools.iter().map(|n| &n.variant).collect();
    let modules: Vec<_> = names.tools.iter().map(|n| &n.module).collect();
    let ids: Vec<&str> = records.iter().map(|r| r.tool_id()).collect();
    let docs = records
        .iter()
        .map(|r| doc_attrs(&format!("`{}`: {}", r.tool_id(), summary(r.description()))));

    let from_str_body = if records.is_empty() {
        quote! { ::core::result::Result::Err(UnknownToolId(::std::string::ToString::to_string(s))) }
    } else {
        quote! {
            match s {
                #(#ids => ::core::result::Result::Ok(Self::#variants),)*
                _ => ::core::result::Result::Err(UnknownToolId(::std::string::ToString::to_string(s))),
            }
        }
    };

    quote! {
        /// Every tool of the registry, by id (sorted). `"web_search".parse::<ToolId>()` resolves
        /// an id at run time; an id that names no registered tool is an [`UnknownToolId`].
        // Variant names follow the tool ids, which may share a prefix.
        #[allow(dead_code, clippy::enum_variant_names)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ToolId {
            #(#docs #variants,)*
        }

        #[allow(dead_code)]
        impl ToolId {
            /// Every tool, sorted by id.
            pub const ALL: &'static [ToolId] = &[#(ToolId::#variants),*];

            /// The tool id as its record spells it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    #(Self::#variants => #ids,)*
                }
            }

            /// The tool's registered contract (the same constant as its `Tool::CONTRACT`).
            pub const fn contract(self) -> &'static #c::Contract {
                match self {
                    #(Self::#variants => &<self::#modules::Tool as #c::Tool>::CONTRACT,)*
                }
            }
        }

        impl ::core::fmt::Display for ToolId {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl ::core::str::FromStr for ToolId {
            type Err = UnknownToolId;

            fn from_str(s: &str) -> ::core::result::Result<Self, UnknownToolId> {
                #from_str_body
            }
        }

        /// A tool id that names no tool of the registry.
        #[allow(dead_code)]
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct UnknownToolId(pub ::std::string::String);

        impl ::core::fmt::Display for UnknownToolId {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                write!(f, "unknown tool `{}`: the registry has no such tool", self.0)
            }
        }

        impl ::std::error::Error for UnknownToolId {}
    }
}

/// `pub trait Client`: one typed method per tool, implemented for every `Invoke` type.
pub(crate) fn client_trait(
    records: &[&ToolRecord],
    names: &ToolNames,
    c: &syn::Path,
) -> TokenStream {
    let methods = records.iter().zip(&names.tools).map(|(r, n)| {
        let module = &n.module;
        let doc = doc_attrs(&format!(
            "Calls `{}`: {}",
            r.tool_id(),
            summary(r.description())
        ));
        if r.sandbox_profile().workspace_inputs.is_empty() {
            return quote! {
                #doc
                fn #module(
                    &self,
                    principal: &#c::Principal,
                    input: self::#module::Input,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<self::#module::Output, Self::Error>,
                > + ::core::marker::Send {
                    self.invoke::<self::#module::Tool>(principal, input)
                }
            };
        }
        // A tool with workspace inputs takes its files too: a required one is a field the
        // caller cannot leave out.
        quote! {
            #doc
            fn #module(
                &self,
                principal: &#c::Principal,
                input: self::#module::Input,
                files: self::#module::Files,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<self::#module::Output, Self::Error>,
            > + ::core::marker::Send {
                self.invoke_with_files::<self::#module::Tool>(
                    principal,
                    input,
                    ::core::convert::From::from(files),
                )
            }
        }
    });

    quote! {
        /// The typed client: one method per tool, taking the tool's generated `Input` and
        /// resolving to its `Output`. Implemented for every
        /// `Invoke` type (the runtime), so
        /// `runtime.web_search(&principal, input).await` type-checks against the record: a
        /// renamed or retyped field is a compile error at the call site.
        #[allow(dead_code)]
        pub trait Client: #c::Invoke {
            #(#methods)*
        }

        impl<T: #c::Invoke + ?::core::marker::Sized> Client for T {}
    }
}
