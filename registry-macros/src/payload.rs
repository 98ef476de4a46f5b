//! `#[derive(Payload)]`: a closed, credential-free struct whose schema comes from `schemars`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{Attribute, Data, DeriveInput, Fields, Meta, Token, Type};

use escepine_registry::rule::Rule;
use escepine_registry::schema::names;
use escepine_registry::schema::names::Property;
use escepine_registry::schema::names::ValueKind;
use escepine_registry::schema::names::Verdict;

use crate::ctxt::Ctxt;
use crate::serde_attrs::{lit_str, option_of, schema_changed, serde_metas, skipped};

/// The expansion of `#[derive(Payload)]`, or every problem found.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let errors = Ctxt::new();
    let ident = &input.ident;

    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => {
                let fields: Vec<&syn::Field> = fields.named.iter().collect();
                for (i, field) in fields.iter().enumerate() {
                    check_field(&fields, i, field, &errors);
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
    let shape = crate::shape::of_struct(input);
    Ok(quote! {
        impl #impl_generics ::escepine_contract::Payload for #ident #ty_generics #where_clause {
            fn payload_schema() -> ::escepine_contract::serde_json::Value {
                ::escepine_contract::payload::schema_of::<Self>()
            }

            const CEDAR_SHAPE: ::escepine_contract::cedar_shape::Shape = #shape;
        }
    })
}

fn has_serde_flag(attrs: &[Attribute], flag: &str) -> bool {
    serde_metas(attrs).iter().any(|m| m.path().is_ident(flag))
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

/// The kind of a field's value, for the credential-name rule's recognised shapes: a plain
/// string is a `String` or `Option<String>` whose schema no attribute may change; a field
/// whose `#[schemars]` or `#[serde]` attributes may change its schema (`with`, `schema_with`,
/// `extend`, `transform`, `serialize_with`, `deserialize_with`) counts as possibly secret.
fn value_kind(field: &syn::Field, metas: &[Meta]) -> ValueKind {
    if schema_changed(
        field,
        metas,
        &["with", "schema_with", "extend", "transform"],
    ) {
        return ValueKind::Secret;
    }
    if is_string(&field.ty) || option_of(&field.ty).is_some_and(is_string) {
        ValueKind::PlainString
    } else {
        ValueKind::Other
    }
}

/// Whether `ty` is written `String` (or `std::string::String`, `alloc::string::String`).
fn is_string(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let plain = p.path.segments.iter().all(|s| s.arguments.is_none());
            plain
                && matches!(
                    segs.iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                        .as_slice(),
                    ["String"] | ["std" | "alloc", "string", "String"]
                )
        }
        Type::Group(g) => is_string(&g.elem),
        Type::Paren(p) => is_string(&p.elem),
        _ => false,
    }
}

/// Check the field `fields[at]` (`field`): each of its wire names is judged by the
/// credential-name rule beside the wire names of the struct's other fields (its siblings in
/// the payload object), so a recognised shape is accepted here as a record's is.
fn check_field(fields: &[&syn::Field], at: usize, field: &syn::Field, errors: &Ctxt) {
    let metas = serde_metas(&field.attrs);
    let flag = |f: &str| metas.iter().any(|m| m.path().is_ident(f));
    if skipped(&metas) {
        return;
    }
    // The other fields serde reads, with their kinds (a flattened field's names are not known
    // here: it adds no sibling).
    let siblings: Vec<(String, ValueKind)> = fields
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .flat_map(|(_, f)| {
            let metas = serde_metas(&f.attrs);
            let kind = value_kind(f, &metas);
            let names = if skipped(&metas) || metas.iter().any(|m| m.path().is_ident("flatten")) {
                Vec::new()
            } else {
                wire_names(f, &metas)
            };
            names.into_iter().map(move |(n, _)| (n, kind))
        })
        .collect();
    let kind = value_kind(field, &metas);
    for (name, tokens) in wire_names(field, &metas) {
        let map: Vec<Property<'_>> = std::iter::once(Property {
            name: &name,
            value: kind,
        })
        .chain(
            siblings
                .iter()
                .map(|(n, k)| Property { name: n, value: *k }),
        )
        .collect();
        if let Verdict::Credential { word } = names::judge(&map, 0) {
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

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::*;

    /// The credential-name messages of expanding `input`, one per refused wire name.
    fn refused(input: DeriveInput) -> Vec<String> {
        match expand(&input) {
            Ok(_) => Vec::new(),
            Err(e) => e
                .into_iter()
                .map(|e| e.to_string())
                .filter(|m| m.contains(Rule::CredentialName.id()))
                .collect(),
        }
    }

    #[test]
    fn recognised_shapes_are_accepted_as_in_a_record() {
        let input: DeriveInput = parse_quote! {
            #[serde(deny_unknown_fields)]
            pub struct Browse {
                pub session_name: String,
                #[serde(rename = "nextToken")]
                pub next: Option<String>,
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub limit: Option<u32>,
                #[serde(rename = "userName")]
                pub who: std::string::String,
                #[schemars(length(max = 64))]
                pub session_title: String,
            }
        };
        assert_eq!(refused(input), Vec::<String>::new());
    }

    #[test]
    fn near_misses_are_refused() {
        let input: DeriveInput = parse_quote! {
            #[serde(deny_unknown_fields)]
            pub struct Login {
                pub session_id: String,
                pub session_token: String,
                pub access_token: String,
                pub limit: u32,
                // A session's name, but of a type the macro cannot read as a string.
                pub session_name: Name,
                // Its schema may be anything.
                #[schemars(extend("format" = "password"))]
                pub session_title: String,
                pub username: String,
                pub password_hint_shown: bool,
            }
        };
        let messages = refused(input);
        for name in [
            "session_id",
            "session_token",
            "access_token",
            "session_name",
            "session_title",
            "username",
            "password_hint_shown",
        ] {
            assert!(
                messages.iter().any(|m| m.contains(&format!("`{name}`"))),
                "{name}: {messages:?}"
            );
        }
        assert_eq!(messages.len(), 7, "{messages:?}");
    }

    #[test]
    fn a_pagination_token_needs_a_pagination_field_that_serde_reads() {
        let input: DeriveInput = parse_quote! {
            #[serde(deny_unknown_fields)]
            pub struct Page {
                pub next_token: String,
                #[serde(skip)]
                pub limit: u32,
                pub max_tokens: u32,
            }
        };
        let messages = refused(input);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("`next_token`"), "{messages:?}");
        // Its own alias is not its sibling.
        let input: DeriveInput = parse_quote! {
            #[serde(deny_unknown_fields)]
            pub struct Page {
                #[serde(alias = "limit")]
                pub next_token: String,
            }
        };
        assert_eq!(refused(input).len(), 1);
    }
}
