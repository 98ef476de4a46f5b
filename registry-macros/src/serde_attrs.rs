//! Reading `#[serde(…)]` attributes and field types as written: what `Payload`'s checks and
//! its Cedar shape both need.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Lit, LitStr, Meta, Token, Type};

/// The `#[serde(…)]` items of `attrs` (those that parse as meta items).
pub(crate) fn serde_metas(attrs: &[Attribute]) -> Vec<Meta> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("serde"))
        .filter_map(|a| {
            a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .collect()
}

/// The string of a string literal expression.
pub(crate) fn lit_str(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// The `T` of `Option<T>`.
pub(crate) fn option_of(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().filter(|s| s.ident == "Option")?;
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                },
                _ => None,
            }
        }
        Type::Group(g) => option_of(&g.elem),
        Type::Paren(p) => option_of(&p.elem),
        _ => None,
    }
}

/// Whether serde never reads the field from a payload.
pub(crate) fn skipped(metas: &[Meta]) -> bool {
    metas
        .iter()
        .any(|m| m.path().is_ident("skip") || m.path().is_ident("skip_deserializing"))
}

/// Whether a `#[serde]` attribute of the field (`with`, `serialize_with`, `deserialize_with`)
/// or one of the `#[schemars]` keys `schemars_keys` may give it another schema than its type's.
pub(crate) fn schema_changed(field: &syn::Field, metas: &[Meta], schemars_keys: &[&str]) -> bool {
    let schemars = field
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("schemars"))
        .any(|a| mentions(a.meta.to_token_stream(), schemars_keys));
    let serde = metas.iter().any(|m| {
        ["with", "serialize_with", "deserialize_with"]
            .iter()
            .any(|c| m.path().is_ident(c))
    });
    schemars || serde
}

/// Whether `tokens` hold one of the identifiers `idents`, at any depth.
fn mentions(tokens: TokenStream, idents: &[&str]) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => idents.iter().any(|w| i == w),
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), idents),
        _ => false,
    })
}
