//! The Cedar shape `#[derive(Payload)]` writes for a struct (`Payload::CEDAR_SHAPE`), read from
//! its fields as written: what `#[tool]` compares with the `.cedarschema` while the crate
//! compiles. The mapping is `escepine_contract::cedar_shape`'s; whatever the fields do not
//! say for certain is `Unchecked`, left to the tool's generated test.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, GenericArgument, Meta, PathArguments, Type};

use crate::serde_attrs::{lit_str, option_of, schema_changed, serde_metas, skipped};

/// The shape of the struct `input`: a record of its fields, or `Unchecked` when its serde
/// attributes rename or merge fields in ways the fields alone do not show.
pub(crate) fn of_struct(input: &DeriveInput) -> TokenStream {
    let unchecked = quote!(::escepine_contract::cedar_shape::Shape::Unchecked);
    let Data::Struct(data) = &input.data else {
        return unchecked;
    };
    let Fields::Named(fields) = &data.fields else {
        return unchecked;
    };
    let container = serde_metas(&input.attrs);
    if container.iter().any(|m| {
        [
            "rename_all",
            "rename_all_fields",
            "tag",
            "transparent",
            "from",
            "try_from",
            "into",
            "remote",
        ]
        .iter()
        .any(|k| m.path().is_ident(k))
    }) {
        return unchecked;
    }
    let all_default = container.iter().any(|m| m.path().is_ident("default"));
    let mut attrs = Vec::new();
    for field in &fields.named {
        let metas = serde_metas(&field.attrs);
        if skipped(&metas) {
            continue;
        }
        if metas.iter().any(|m| m.path().is_ident("flatten")) {
            return unchecked;
        }
        let Some(name) = wire_name(field, &metas) else {
            return unchecked;
        };
        let presence = presence(field, &metas, all_default);
        // `extend` adds keywords, never another type.
        let shape = if schema_changed(field, &metas, &["with", "schema_with", "transform"]) {
            unchecked.clone()
        } else {
            of_type(option_of(&field.ty).unwrap_or(&field.ty))
        };
        attrs.push(quote! {
            ::escepine_contract::cedar_shape::Attr {
                name: #name,
                presence: #presence,
                shape: #shape,
            }
        });
    }
    quote!(::escepine_contract::cedar_shape::Shape::Record(&[#(#attrs),*]))
}

/// The field's name in the payload: `rename = "…"` or its identifier; `None` when serialising
/// and deserialising name it differently (`rename(serialize = …, deserialize = …)`).
fn wire_name(field: &syn::Field, metas: &[Meta]) -> Option<String> {
    for meta in metas {
        match meta {
            Meta::NameValue(nv) if nv.path.is_ident("rename") => {
                return lit_str(&nv.value).map(syn::LitStr::value);
            }
            Meta::List(list) if list.path.is_ident("rename") => return None,
            _ => {}
        }
    }
    let ident = field.ident.as_ref()?.to_string();
    Some(ident.strip_prefix("r#").unwrap_or(&ident).to_string())
}

/// Required unless an `Option` or defaulted; unknown for a field serde may leave out on
/// output (`skip_serializing_if`) without a default to read it back.
fn presence(field: &syn::Field, metas: &[Meta], all_default: bool) -> TokenStream {
    let flag = |f: &str| metas.iter().any(|m| m.path().is_ident(f));
    if option_of(&field.ty).is_some() || flag("default") || all_default {
        quote!(::escepine_contract::cedar_shape::Presence::Optional)
    } else if flag("skip_serializing_if") {
        quote!(::escepine_contract::cedar_shape::Presence::Unchecked)
    } else {
        quote!(::escepine_contract::cedar_shape::Presence::Required)
    }
}

/// The shape of a field's type as written (its last path segment).
fn of_type(ty: &Type) -> TokenStream {
    let shape = |name: &str| -> TokenStream {
        let variant = syn::Ident::new(name, proc_macro2::Span::call_site());
        quote!(::escepine_contract::cedar_shape::Shape::#variant)
    };
    let path = match ty {
        Type::Group(g) => return of_type(&g.elem),
        Type::Paren(p) => return of_type(&p.elem),
        Type::Path(p) if p.qself.is_none() => &p.path,
        _ => return shape("Unchecked"),
    };
    let Some(last) = path.segments.last() else {
        return shape("Unchecked");
    };
    let name = last.ident.to_string();
    let arg = match &last.arguments {
        PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        },
        _ => None,
    };
    match (name.as_str(), arg) {
        ("String" | "Url", None) => shape("String"),
        (
            "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128"
            | "usize",
            None,
        ) => shape("Long"),
        ("bool", None) => shape("Bool"),
        ("f32" | "f64", None) => shape("Decimal"),
        ("Vec" | "VecDeque" | "HashSet" | "BTreeSet", Some(inner)) => {
            let inner = of_type(inner);
            quote!(::escepine_contract::cedar_shape::Shape::Set(&#inner))
        }
        ("Box" | "Option", Some(inner)) => of_type(inner),
        _ => shape("Unchecked"),
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::*;

    fn shape(input: DeriveInput) -> String {
        of_struct(&input)
            .to_string()
            .replace(' ', "")
            .replace("::escepine_contract::cedar_shape::", "")
            .replace(",}", "}")
    }

    #[test]
    fn fields_are_read_as_written() {
        let s = shape(parse_quote! {
            #[serde(deny_unknown_fields)]
            struct Stats {
                text: String,
                #[serde(default, skip_serializing_if = "Option::is_none")]
                limit: Option<u32>,
                #[serde(rename = "langs")]
                languages: Vec<std::string::String>,
                ratio: f64,
                #[serde(skip)]
                cache: Cache,
                #[serde(skip_serializing_if = "is_false")]
                verbose: bool,
                nested: Nested,
                #[serde(with = "hex")]
                bytes: Vec<u8>,
                r#type: Box<url::Url>,
            }
        });
        assert_eq!(
            s,
            "Shape::Record(&[\
             Attr{name:\"text\",presence:Presence::Required,shape:Shape::String},\
             Attr{name:\"limit\",presence:Presence::Optional,shape:Shape::Long},\
             Attr{name:\"langs\",presence:Presence::Required,shape:Shape::Set(&Shape::String)},\
             Attr{name:\"ratio\",presence:Presence::Required,shape:Shape::Decimal},\
             Attr{name:\"verbose\",presence:Presence::Unchecked,shape:Shape::Bool},\
             Attr{name:\"nested\",presence:Presence::Required,shape:Shape::Unchecked},\
             Attr{name:\"bytes\",presence:Presence::Required,shape:Shape::Unchecked},\
             Attr{name:\"type\",presence:Presence::Required,shape:Shape::String}])"
        );
    }

    #[test]
    fn renaming_or_merging_serde_attributes_leave_the_struct_unchecked() {
        for input in [
            parse_quote! { #[serde(deny_unknown_fields, rename_all = "camelCase")] struct A { a_b: String } },
            parse_quote! { #[serde(deny_unknown_fields)] struct A { #[serde(flatten)] rest: B } },
            parse_quote! { #[serde(deny_unknown_fields)] struct A { #[serde(rename(deserialize = "x"))] a: String } },
        ] {
            assert_eq!(shape(input), "Shape::Unchecked");
        }
    }
}
