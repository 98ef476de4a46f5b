//! The Rust names the expansion refers to: the tool's generated module and its identifier.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{LitStr, Path};

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
