//! Reading `#[serde(…)]` attributes and field types as written: what `Payload`'s checks and
//! its Cedar shape both need.

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
