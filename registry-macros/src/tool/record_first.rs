//! Record-first: `#[tool(record = "…")]` implements a JSON record compiled by `build.rs`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, LitStr, Path};

use super::names::{tool_ident, types_path};
use super::signature::{call_body, Signature};

pub(crate) fn expand(
    func: &ItemFn,
    sig: &Signature,
    record: &LitStr,
    types: Option<&Path>,
) -> TokenStream {
    let record_ident = match tool_ident(record) {
        Ok(i) => i,
        Err(e) => {
            let e = e.into_compile_error();
            return quote! { #func #e };
        }
    };
    let name = &func.sig.ident;
    let vis = &func.vis;
    let types = types_path(types, record.span());
    // Named once, at the user's `record = "…"`: a record the build did not compile fails here.
    let tool = quote_spanned!(record.span()=> #types::#record_ident::Tool);

    let input_ty = &sig.input;
    let output_ty = &sig.output;
    // The record's types, passed to and from the user's: a signature that does not take and
    // return the record's generated types fails here, once, at the user's type.
    let record_input =
        quote!(<<#name as ::escepine_contract::ToolFn>::Tool as ::escepine_contract::Tool>::Input);
    let record_output =
        quote!(<<#name as ::escepine_contract::ToolFn>::Tool as ::escepine_contract::Tool>::Output);
    let to_user = quote_spanned!(input_ty.span()=>
        <#input_ty as ::escepine_contract::SameType<#record_input>>::from_same(input)
    );
    let from_user = quote_spanned!(output_ty.span()=>
        <#output_ty as ::escepine_contract::SameType<#record_output>>::into_same(output)
    );
    let body = call_body(func, sig, to_user);
    let doc = format!(
        " The tool `{}` (record-first, `#[tool]`): serves [`{name}`] as the record's \
         implementation.",
        record.value()
    );

    quote! {
        #func

        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #vis struct #name {}

        impl ::escepine_contract::ToolFn for #name {
            type Tool = #tool;

            fn call(
                input: <<Self as ::escepine_contract::ToolFn>::Tool as ::escepine_contract::Tool>::Input,
                cx: ::escepine_contract::CallContext,
            ) -> ::escepine_contract::LocalBoxFuture<
                ::core::result::Result<
                    <<Self as ::escepine_contract::ToolFn>::Tool as ::escepine_contract::Tool>::Output,
                    ::escepine_contract::ToolError,
                >,
            > {
                ::std::boxed::Box::pin(async move {
                    let result: ::core::result::Result<#output_ty, ::escepine_contract::ToolError> = #body;
                    result.map(|output| #from_user)
                })
            }
        }
    }
}
