//! What a tool function's signature says (payload, context, output, fallibility), and the call
//! of the function from the generated `ToolFn`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, GenericArgument, ItemFn, PathArguments, ReturnType, Type};

use crate::ctxt::Ctxt;

/// What the function's signature says.
pub(crate) struct Signature {
    /// The payload type (first parameter).
    pub input: Type,
    /// Whether a second parameter takes the `CallContext`.
    pub context: bool,
    /// The output type (`T` of `Result<T, E>`, or the whole return type).
    pub output: Type,
    /// Whether the function returns `Result<_, E>` (`E: Into<ToolError>`).
    pub fallible: bool,
}

pub(crate) fn signature(func: &ItemFn, errors: &Ctxt) -> Option<Signature> {
    let sig = &func.sig;
    let before = errors.count();
    if sig.asyncness.is_none() {
        errors.error_spanned_by(
            sig.fn_token,
            "#[tool] goes on an `async fn`: a tool host awaits it",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.error_spanned_by(
            &sig.generics,
            "a tool function cannot be generic: its payload types are fixed by its contract",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.error_spanned_by(v, "a tool function is not variadic");
    }
    let mut types = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => errors.error_spanned_by(
                r,
                "#[tool] goes on a free function, not a method: it takes the payload \
                 (`input: Input`) and optionally `cx: CallContext`",
            ),
            FnArg::Typed(t) => types.push((*t.ty).clone()),
        }
    }
    match types.len() {
        0 => errors.error_spanned_by(
            &sig.ident,
            "a tool function takes its payload: `async fn name(input: Input)` (and optionally \
             `cx: escepine_contract::CallContext`)",
        ),
        1 | 2 => {}
        _ => errors.error_spanned_by(
            &sig.inputs,
            "a tool function takes the payload and optionally `cx: CallContext`, nothing else",
        ),
    }
    let (output, fallible) = match &sig.output {
        ReturnType::Default => {
            errors.error_spanned_by(
                &sig.ident,
                "a tool function returns its output: `-> Result<Output, ToolError>` (or any `E: \
                 Into<ToolError>`), or just `-> Output`",
            );
            return None;
        }
        ReturnType::Type(_, ty) => match result_ok_type(ty) {
            Some(ok) => (ok, true),
            None => ((**ty).clone(), false),
        },
    };
    if errors.count() != before {
        return None;
    }
    Some(Signature {
        input: types[0].clone(),
        context: types.len() == 2,
        output,
        fallible,
    })
}

/// `T` of a return type written `Result<T, E>`.
fn result_ok_type(ty: &Type) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    (types.len() == 2).then(|| types[0].clone())
}

/// `Into<ToolError>` of a fallible function's error, or `Ok` of an infallible one's output.
pub(crate) fn call_body(func: &ItemFn, sig: &Signature, input: TokenStream) -> TokenStream {
    let name = &func.sig.ident;
    let call = if sig.context {
        quote! { #name(#input, cx).await }
    } else {
        quote! { { let _ = cx; #name(#input).await } }
    };
    if sig.fallible {
        quote! {
            match #call {
                ::core::result::Result::Ok(output) => ::core::result::Result::Ok(output),
                ::core::result::Result::Err(e) => ::core::result::Result::Err(
                    ::core::convert::Into::<::escepine_contract::ToolError>::into(e),
                ),
            }
        }
    } else {
        quote! { ::core::result::Result::Ok(#call) }
    }
}
