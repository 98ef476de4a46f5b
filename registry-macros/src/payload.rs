//! `#[derive(Payload)]`: a closed, credential-free struct whose schema comes from `schemars`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{Attribute, Data, DeriveInput, Expr, Fields, Lit, LitStr, Meta, Token, Type};

use registry_build::Rule;

use crate::ctxt::Ctxt;

/// The expansion of `#[derive(Payload)]`, or every problem found.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let errors = Ctxt::new();
    let ident = &input.ident;

    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => {
                for field in &fields.named {
                    check_field(field, &errors);
                }
            }
            Fields::Unnamed(_) | Fields::Unit => errors.error_spanned_by(
                ident,
                format!(
                    "payload `{ident}` must be a struct with named fields: a payload is a JSON \
                     object"
                ),
            ),
        },
        Data::Enum(data) => errors.error_spanned_by(
            data.enum_token,
            "`Payload` is for structs (a payload is a JSON object); an enum used inside a payload \
             needs only `JsonSchema` (a unit enum becomes a string `enum`)",
        ),
        Data::Union(data) => {
            errors.error_spanned_by(data.union_token, "`Payload` is for structs, not unions")
        }
    }

    if matches!(input.data, Data::Struct(_)) && !has_serde_flag(&input.attrs, "deny_unknown_fields")
    {
        errors.error_spanned_by(
            ident,
            format!(
                "[{}] payload `{ident}` is open: add `#[serde(deny_unknown_fields)]` so that an unknown \
                 field is rejected, as its schema (`additionalProperties: false`) says",
                Rule::SchemaClosed.id()
            ),
        );
    }
    errors.check()?;

    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics ::escepine_contract::Payload for #ident #ty_generics #where_clause {
            fn payload_schema() -> ::escepine_contract::serde_json::Value {
                ::escepine_contract::payload::schema_of::<Self>()
            }
        }
    })
}

/// The `#[serde(…)]` items of `attrs` (those that parse as meta items).
fn serde_metas(attrs: &[Attribute]) -> Vec<Meta> {
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

fn has_serde_flag(attrs: &[Attribute], flag: &str) -> bool {
    serde_metas(attrs).iter().any(|m| m.path().is_ident(flag))
}

fn lit_str(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// The names under which a field can be sent: its renamed (deserialize) name or its ident, and
/// its aliases; each with the tokens to point at.
fn wire_names(field: &syn::Field, metas: &[Meta]) -> Vec<(String, TokenStream)> {
    let mut names = Vec::new();
    let mut renamed = false;
    for meta in metas {
        match meta {
            Meta::NameValue(nv) if nv.path.is_ident("rename") || nv.path.is_ident("alias") => {
                if let Some(s) = lit_str(&nv.value) {
                    renamed |= nv.path.is_ident("rename");
                    names.push((s.value(), quote!(#s)));
                }
            }
            Meta::List(list) if list.path.is_ident("rename") => {
                let inner = list
                    .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                    .unwrap_or_default();
                for m in inner {
                    if let Meta::NameValue(nv) = m {
                        if nv.path.is_ident("deserialize") {
                            if let Some(s) = lit_str(&nv.value) {
                                renamed = true;
                                names.push((s.value(), quote!(#s)));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if !renamed {
        if let Some(ident) = &field.ident {
            let name = ident.to_string();
            let name = name.strip_prefix("r#").unwrap_or(&name).to_string();
            names.insert(0, (name, quote!(#ident)));
        }
    }
    names
}

fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| {
            s.ident == "Option" && matches!(s.arguments, syn::PathArguments::AngleBracketed(_))
        }),
        Type::Group(g) => is_option(&g.elem),
        Type::Paren(p) => is_option(&p.elem),
        _ => false,
    }
}

fn check_field(field: &syn::Field, errors: &Ctxt) {
    let metas = serde_metas(&field.attrs);
    let flag = |f: &str| metas.iter().any(|m| m.path().is_ident(f));
    if flag("skip") || flag("skip_deserializing") {
        return;
    }
    for (name, tokens) in wire_names(field, &metas) {
        if let Some(word) = registry_build::schema::names::credential_word(&name) {
            errors.error_spanned_by(
                tokens,
                format!(
                    "[{}] the payload field `{name}` names a credential ({word}): governed tools accept \
                     no credentials; declare the secret by name (`#[tool(secrets(\"NAME\"))]`, \
                     injected by the sandbox) or rename the field (a pagination token is a \
                     `cursor`)",
                    Rule::CredentialName.id()
                ),
            );
        }
    }
    if is_option(&field.ty) && !flag("skip_serializing_if") {
        errors.error_spanned_by(
            &field.ty,
            format!(
                "[{}] an `Option` field is an optional property, never a nullable one: add \
                 `#[serde(default, skip_serializing_if = \"Option::is_none\")]` so `None` is left \
                 out instead of written as `null`",
                Rule::SchemaNullType.id()
            ),
        );
    }
}
