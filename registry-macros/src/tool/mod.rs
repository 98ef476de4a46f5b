//! `#[tool]` on an `async fn`: record-first and Rust-first.

mod attr;
mod draft;
mod record_first;
mod rust_first;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{
    Expr, FnArg, GenericArgument, Ident, ItemFn, Lit, LitStr, Path, PathArguments, ReturnType, Type,
};

use attr::ToolAttr;
use draft::Draft;

use crate::ctxt::Ctxt;

/// The expansion, in three phases: parse the arguments ([`attr`]), validate them (the
/// signature here; the contract by registry-build's rules on a draft record, [`draft`]), expand
/// ([`record_first`], [`rust_first`]). On any problem: the function unchanged and every problem
/// found (so that uses of the function do not add knock-on errors).
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
    let cx = Ctxt::new();
    let attr = ToolAttr::parse(&cx, args);
    let sig = signature(&func, &cx);
    let mode = mode(&cx, &attr);
    match mode {
        Some(Mode::RecordFirst(record)) => draft::validate_record_id(&cx, record),
        Some(Mode::RustFirst) => {
            let description = description(&func);
            Draft::rust_first(&cx, &attr, &description, &func.sig.ident).validate(&cx);
        }
        None => {}
    }
    let expanded = match (mode, sig) {
        (Some(Mode::RecordFirst(record)), Some(sig)) if cx.count() == 0 => {
            Some(record_first::expand(&func, &sig, record, attr.types.get()))
        }
        (Some(Mode::RustFirst), Some(sig)) if cx.count() == 0 => {
            rust_first::RustFirst::from_attr(&attr, description(&func))
                .map(|r| rust_first::expand(&func, &sig, &r))
        }
        _ => None,
    };
    if cx.count() == 0 && expanded.is_none() {
        cx.error_at(Span::call_site(), "#[tool]: invalid arguments");
    }
    match (cx.check(), expanded) {
        (Ok(()), Some(tokens)) => tokens,
        (Err(e), _) => {
            let e = e.into_compile_error();
            quote! { #func #e }
        }
        (Ok(()), None) => quote! { #func },
    }
}

/// Which kind of tool the arguments declare.
enum Mode<'a> {
    /// `record = "…"`: the contract is a JSON record.
    RecordFirst(&'a LitStr),
    /// `id = "…"` and the rest: the contract is declared here.
    RustFirst,
}

fn mode<'a>(cx: &Ctxt, attr: &'a ToolAttr) -> Option<Mode<'a>> {
    match (attr.record.get(), attr.id.get()) {
        (Some(_), Some(id)) => {
            cx.error_spanned_by(
                id,
                "`record` and `id` exclude each other: a record-first tool takes its contract \
                 from the record, a Rust-first tool declares it here",
            );
            None
        }
        (Some(record), None) => {
            for (k, span) in &attr.rust_first_keys {
                cx.error_at(
                    *span,
                    format!(
                        "`{k}` comes from the record in record-first mode; remove it here (or \
                         declare the tool Rust-first, with `id = …` instead of `record = …`)"
                    ),
                );
            }
            Some(Mode::RecordFirst(record))
        }
        (None, Some(_)) => Some(Mode::RustFirst),
        (None, None) => {
            cx.error_at(
                Span::call_site(),
                "#[tool] needs `record = \"<tool id>\"` (record-first: the contract is a JSON \
                 record compiled by build.rs) or `id = \"<tool id>\"` with the whole contract \
                 (Rust-first)",
            );
            None
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

fn signature(func: &ItemFn, errors: &Ctxt) -> Option<Signature> {
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

/// The doc comment, as the tool's description (empty when there is none: the description rule
/// reports it).
fn description(func: &ItemFn) -> String {
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
    lines.join("\n").trim().to_string()
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
