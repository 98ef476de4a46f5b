//! `#[tool]` on an `async fn`: record-first and Rust-first.

mod args;
mod record_first;
mod rust_first;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{
    Expr, FnArg, GenericArgument, Ident, ItemFn, Lit, LitStr, Path, PathArguments, ReturnType, Type,
};

use crate::errors::Errors;

/// The expansion: the function unchanged, plus the tool's type and impls; or the function and
/// every problem found (so that uses of the function do not add knock-on errors).
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "#[tool] goes on an `async fn` (a free function)",
            );
            return quote! { #item }
                .into_iter()
                .chain(e.into_compile_error())
                .collect();
        }
    };
    let mut errors = Errors::default();
    let mode = args::parse(args, &mut errors);
    let sig = signature(&func, &mut errors);
    let expanded = match (mode, sig) {
        (Some(args::Mode::RecordFirst(r)), Some(sig)) => errors
            .finish()
            .map(|()| record_first::expand(&func, &sig, &r)),
        (Some(args::Mode::RustFirst(r)), Some(sig)) => {
            let description = description(&func, &mut errors);
            errors
                .finish()
                .map(|()| rust_first::expand(&func, &sig, &r, &description.unwrap_or_default()))
        }
        _ => Err(errors
            .finish()
            .err()
            .unwrap_or_else(|| syn::Error::new(Span::call_site(), "#[tool]: invalid arguments"))),
    };
    match expanded {
        Ok(tokens) => tokens,
        Err(e) => {
            let e = e.into_compile_error();
            quote! { #func #e }
        }
    }
}

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

fn signature(func: &ItemFn, errors: &mut Errors) -> Option<Signature> {
    let sig = &func.sig;
    let before = errors.count();
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            "#[tool] goes on an `async fn`: a tool host awaits it",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            "a tool function cannot be generic: its payload types are fixed by its contract",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, "a tool function is not variadic");
    }
    let mut types = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => errors.at(
                r,
                "#[tool] goes on a free function, not a method: it takes the payload \
                 (`input: Input`) and optionally `cx: CallContext`",
            ),
            FnArg::Typed(t) => types.push((*t.ty).clone()),
        }
    }
    match types.len() {
        0 => errors.at(
            &sig.ident,
            "a tool function takes its payload: `async fn name(input: Input)` (and optionally \
             `cx: escepine_contract::CallContext`)",
        ),
        1 | 2 => {}
        _ => errors.at(
            &sig.inputs,
            "a tool function takes the payload and optionally `cx: CallContext`, nothing else",
        ),
    }
    let (output, fallible) = match &sig.output {
        ReturnType::Default => {
            errors.at(
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

/// The doc comment, as the tool's description.
fn description(func: &ItemFn, errors: &mut Errors) -> Option<String> {
    let mut lines = Vec::new();
    for attr in func.attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let Ok(nv) = attr.meta.require_name_value() {
            if let Expr::Lit(l) = &nv.value {
                if let Lit::Str(s) = &l.lit {
                    let v = s.value();
                    lines.push(v.strip_prefix(' ').map(str::to_string).unwrap_or(v));
                }
            }
        }
    }
    let text = lines.join("\n").trim().to_string();
    if text.is_empty() {
        errors.at(
            &func.sig.ident,
            "a Rust-first tool's description is its doc comment, and it is missing: write `/// \
             what the tool does` above the function (the planner reads it)",
        );
        None
    } else {
        Some(text)
    }
}

/// The module holding the generated code: as given, or `crate::registry`.
pub(crate) fn types_path(given: Option<&Path>, span: Span) -> TokenStream {
    match given {
        Some(p) => p.to_token_stream(),
        None => quote::quote_spanned!(span=> crate::registry),
    }
}

/// `path` as seen from a module one level down (`crate::…` and `::…` stay; others get `super`).
pub(crate) fn from_child_module(path: &TokenStream) -> TokenStream {
    let Ok(p) = syn::parse2::<Path>(path.clone()) else {
        return path.clone();
    };
    if p.leading_colon.is_some() || p.segments.first().is_some_and(|s| s.ident == "crate") {
        return path.clone();
    }
    if p.segments.first().is_some_and(|s| s.ident == "self") {
        let rest = p.segments.iter().skip(1);
        return quote!(super #(:: #rest)*);
    }
    quote!(super::#p)
}

/// A Rust identifier for a tool id (raw for a keyword); an error for `self`, `super`, `crate`.
pub(crate) fn tool_ident(lit: &LitStr) -> syn::Result<Ident> {
    let id = lit.value();
    if ["self", "super", "crate", "Self"].contains(&id.as_str()) {
        return Err(syn::Error::new_spanned(
            lit,
            format!("the tool id `{id}` cannot be a Rust name (not even `r#{id}`); rename it"),
        ));
    }
    match syn::parse_str::<Ident>(&id) {
        Ok(mut ident) => {
            ident.set_span(lit.span());
            Ok(ident)
        }
        Err(_) => Ok(Ident::new_raw(&id, lit.span())),
    }
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
