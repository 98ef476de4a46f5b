//! typify's string enums with their four conversions folded into one `string_enum!` call.
//!
//! For every enum of unit variants typify writes `Display`, `FromStr`, `TryFrom<&str>` and
//! `TryFrom<String>` impls, about forty lines once printed. The generated file calls the contract
//! crate's `string_enum!` instead, which expands to the same four impls: the API is the same and
//! the text to parse, print and compile is a tenth as long. The variant → string pairs come from
//! typify's `Display` impl and must be those of its `FromStr` impl; an enum whose impls do not
//! have exactly this shape is left as typify wrote it.

use std::collections::BTreeMap;

use proc_macro2::{Delimiter, Ident, Literal, TokenStream, TokenTree};
use quote::quote;

/// One top-level item's tokens, up to and including its closing brace group or `;`.
type Item = Vec<TokenTree>;

/// A conversion impl typify writes for a string enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Conversion {
    Display,
    FromStr,
    TryFromStr,
    TryFromString,
}

impl Conversion {
    /// The conversion a trait path (its tokens' text, without spaces) names.
    fn of(trait_text: &str) -> Option<Self> {
        Some(match trait_text {
            "::std::fmt::Display" => Self::Display,
            "::std::str::FromStr" => Self::FromStr,
            "::std::convert::TryFrom<&str>" => Self::TryFromStr,
            "::std::convert::TryFrom<::std::string::String>" => Self::TryFromString,
            _ => return None,
        })
    }
}

/// A variant and the string it stands for.
type Pair = (Ident, Literal);

/// What was found of one enum's conversions: the item index of each, and the pairs its
/// `Display` and `FromStr` impls map.
#[derive(Default)]
struct Found {
    at: BTreeMap<Conversion, usize>,
    display: Vec<Pair>,
    from_str: Vec<Pair>,
}

impl Found {
    /// The pairs, when all four conversions are there and agree.
    fn pairs(&self) -> Option<&[Pair]> {
        let key = |p: &Pair| (p.0.to_string(), p.1.to_string());
        let mut display: Vec<_> = self.display.iter().map(key).collect();
        let mut from_str: Vec<_> = self.from_str.iter().map(key).collect();
        display.sort();
        from_str.sort();
        (self.at.len() == 4 && !display.is_empty() && display == from_str)
            .then_some(self.display.as_slice())
    }
}

/// typify's items with every string enum's conversions replaced by `<contract>::string_enum!`.
pub(crate) fn fold(stream: TokenStream, contract: &syn::Path) -> TokenStream {
    let items = split_items(stream);
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let Some((conversion, target, body)) = conversion_impl(item) else {
            continue;
        };
        let entry = found.entry(target).or_default();
        let expected = match conversion {
            Conversion::Display => {
                entry.display = display_pairs(body);
                true
            }
            Conversion::FromStr => {
                entry.from_str = from_str_pairs(body);
                true
            }
            Conversion::TryFromStr | Conversion::TryFromString => calls_parse(body),
        };
        if expected {
            entry.at.insert(conversion, i);
        }
    }
    let mut replaced: BTreeMap<usize, TokenStream> = BTreeMap::new();
    let mut dropped = Vec::new();
    for (target, f) in &found {
        let Some(pairs) = f.pairs() else {
            continue;
        };
        let Some(&display_at) = f.at.get(&Conversion::Display) else {
            continue;
        };
        let name = Ident::new(target, proc_macro2::Span::call_site());
        let variants = pairs.iter().map(|(v, l)| quote!(#v = #l));
        replaced.insert(
            display_at,
            quote!(#contract::string_enum!(#name { #(#variants),* });),
        );
        dropped.extend(f.at.values().copied().filter(|&i| i != display_at));
    }
    let mut out = TokenStream::new();
    for (i, item) in items.into_iter().enumerate() {
        if let Some(call) = replaced.remove(&i) {
            out.extend(call);
        } else if !dropped.contains(&i) {
            out.extend(item);
        }
    }
    out
}

/// The top-level items of a stream (an item ends at a top-level brace group or `;`).
fn split_items(stream: TokenStream) -> Vec<Item> {
    let mut items = Vec::new();
    let mut current = Vec::new();
    for tree in stream {
        let ends = match &tree {
            TokenTree::Group(g) => g.delimiter() == Delimiter::Brace,
            TokenTree::Punct(p) => p.as_char() == ';',
            _ => false,
        };
        current.push(tree);
        if ends {
            items.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        items.push(current);
    }
    items
}

/// `impl <conversion> for <Target> { body }`: the conversion, the target and the body.
fn conversion_impl(item: &[TokenTree]) -> Option<(Conversion, String, TokenStream)> {
    let [TokenTree::Ident(kw), path @ .., TokenTree::Ident(for_kw), TokenTree::Ident(target), TokenTree::Group(body)] =
        item
    else {
        return None;
    };
    if kw != "impl" || for_kw != "for" || body.delimiter() != Delimiter::Brace {
        return None;
    }
    let text: String = path.iter().map(ToString::to_string).collect();
    let conversion = Conversion::of(&text)?;
    Some((conversion, target.to_string(), body.stream()))
}

/// Every `Self::V => f.write_str("v")` arm in `body` (at any depth).
fn display_pairs(body: TokenStream) -> Vec<Pair> {
    let mut out = Vec::new();
    walk(body, &mut |t| {
        if let [TokenTree::Ident(s), TokenTree::Punct(c1), TokenTree::Punct(c2), TokenTree::Ident(v), TokenTree::Punct(eq), TokenTree::Punct(gt), TokenTree::Ident(f), TokenTree::Punct(dot), TokenTree::Ident(write), TokenTree::Group(arg), ..] =
            t
        {
            if s == "Self"
                && c1.as_char() == ':'
                && c2.as_char() == ':'
                && eq.as_char() == '='
                && gt.as_char() == '>'
                && f == "f"
                && dot.as_char() == '.'
                && write == "write_str"
            {
                if let Some(lit) = only_literal(arg.stream()) {
                    out.push((v.clone(), lit));
                }
            }
        }
    });
    out
}

/// Every `"v" => Ok(Self::V)` arm in `body` (at any depth).
fn from_str_pairs(body: TokenStream) -> Vec<Pair> {
    let mut out = Vec::new();
    walk(body, &mut |t| {
        if let [TokenTree::Literal(lit), TokenTree::Punct(eq), TokenTree::Punct(gt), TokenTree::Ident(ok), TokenTree::Group(arg), ..] =
            t
        {
            if eq.as_char() == '=' && gt.as_char() == '>' && ok == "Ok" {
                let inner: Vec<TokenTree> = arg.stream().into_iter().collect();
                if let [TokenTree::Ident(s), TokenTree::Punct(c1), TokenTree::Punct(c2), TokenTree::Ident(v)] =
                    inner.as_slice()
                {
                    if s == "Self" && c1.as_char() == ':' && c2.as_char() == ':' {
                        out.push((v.clone(), lit.clone()));
                    }
                }
            }
        }
    });
    out
}

/// Whether a `TryFrom` body is typify's `value.parse()`.
fn calls_parse(body: TokenStream) -> bool {
    let mut found = false;
    walk(body, &mut |t| {
        if let [TokenTree::Ident(v), TokenTree::Punct(dot), TokenTree::Ident(parse), ..] = t {
            found |= v == "value" && dot.as_char() == '.' && parse == "parse";
        }
    });
    found
}

/// Call `visit` with every suffix of every token sequence in `stream`, groups included.
fn walk(stream: TokenStream, visit: &mut impl FnMut(&[TokenTree])) {
    let trees: Vec<TokenTree> = stream.into_iter().collect();
    for i in 0..trees.len() {
        visit(&trees[i..]);
        if let TokenTree::Group(g) = &trees[i] {
            walk(g.stream(), visit);
        }
    }
}

/// The one string literal a group holds.
fn only_literal(stream: TokenStream) -> Option<Literal> {
    let trees: Vec<TokenTree> = stream.into_iter().collect();
    match trees.as_slice() {
        [TokenTree::Literal(l)] if l.to_string().starts_with('"') => Some(l.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract() -> syn::Path {
        syn::parse_quote!(::escepine_contract)
    }

    fn typify_enum() -> TokenStream {
        quote! {
            #[derive(Clone, Copy, Debug)]
            pub enum Mode {
                #[serde(rename = "fast")]
                Fast,
                #[serde(rename = "thorough")]
                Thorough,
            }
            impl ::std::fmt::Display for Mode {
                fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    match *self {
                        Self::Fast => f.write_str("fast"),
                        Self::Thorough => f.write_str("thorough"),
                    }
                }
            }
            impl ::std::str::FromStr for Mode {
                type Err = self::error::ConversionError;
                fn from_str(value: &str) -> ::std::result::Result<Self, self::error::ConversionError> {
                    match value {
                        "fast" => Ok(Self::Fast),
                        "thorough" => Ok(Self::Thorough),
                        _ => Err("invalid value".into()),
                    }
                }
            }
            impl ::std::convert::TryFrom<&str> for Mode {
                type Error = self::error::ConversionError;
                fn try_from(value: &str) -> ::std::result::Result<Self, self::error::ConversionError> {
                    value.parse()
                }
            }
            impl ::std::convert::TryFrom<::std::string::String> for Mode {
                type Error = self::error::ConversionError;
                fn try_from(value: ::std::string::String) -> ::std::result::Result<Self, self::error::ConversionError> {
                    value.parse()
                }
            }
            pub struct Input { pub mode: Mode }
        }
    }

    #[test]
    fn the_four_conversions_become_one_call_in_the_display_impls_place() {
        let out = fold(typify_enum(), &contract()).to_string();
        let expected = quote! {
            #[derive(Clone, Copy, Debug)]
            pub enum Mode {
                #[serde(rename = "fast")]
                Fast,
                #[serde(rename = "thorough")]
                Thorough,
            }
            ::escepine_contract::string_enum!(Mode { Fast = "fast", Thorough = "thorough" });
            pub struct Input { pub mode: Mode }
        };
        assert_eq!(out, expected.to_string());
    }

    #[test]
    fn an_enum_whose_from_str_maps_other_strings_is_left_alone() {
        let text = typify_enum()
            .to_string()
            .replacen("\"thorough\" => Ok", "\"deep\" => Ok", 1);
        let stream: TokenStream = text.parse().expect("tokens");
        assert_eq!(
            fold(stream.clone(), &contract()).to_string(),
            stream.to_string()
        );
    }

    #[test]
    fn an_enum_missing_a_conversion_is_left_alone() {
        let text = typify_enum().to_string();
        let cut = text
            .find("impl :: std :: convert :: TryFrom < & str >")
            .expect("impl");
        let end = text[cut..]
            .find("impl :: std :: convert :: TryFrom < :: std")
            .expect("next");
        let stream: TokenStream = format!("{}{}", &text[..cut], &text[cut + end..])
            .parse()
            .expect("tokens");
        assert_eq!(
            fold(stream.clone(), &contract()).to_string(),
            stream.to_string()
        );
    }
}
