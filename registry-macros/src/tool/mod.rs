//! `#[tool]` on an `async fn`: record-first and Rust-first.

mod attr;
mod draft;
mod names;
mod record_first;
mod rust_first;
mod signature;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Expr, ItemFn, Lit, LitStr};

use attr::ToolAttr;
use draft::Draft;

use signature::signature;

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

#[cfg(test)]
mod tests {
    //! `#[tool]` expanded as the compiler expands it, with the registry as this crate links it.
    //! Built alone (`cargo test -p escepine-registry-macros`, as a user's crate of Rust tools
    //! builds the macros), the registry has no `schema-validation`: CI runs these tests so with
    //! `ESCEPINE_EXPECT_SCHEMA_VALIDATION=off`, and the first test checks that it is off.

    use proc_macro2::TokenStream;
    use quote::quote;

    use super::expand;

    /// The arguments of a valid Rust-first tool, with `retry` given by the caller.
    fn args(retry: TokenStream) -> TokenStream {
        quote! {
            id = "text_stats",
            version = "1.0.0",
            side_effect = "read-only",
            timeout_ms = 5000,
            #retry,
            on_failure(halt)
        }
    }

    fn item() -> TokenStream {
        quote! {
            /// Count words.
            async fn text_stats(input: In) -> Result<Out, ToolError> {
                Ok(Out { words: input.text.split_whitespace().count() as u64 })
            }
        }
    }

    /// The compile errors `expand` wrote, as text.
    fn errors(out: &TokenStream) -> Vec<String> {
        let file: syn::File = syn::parse2(out.clone()).expect("the expansion parses as items");
        file.items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Macro(m)
                    if m.mac
                        .path
                        .segments
                        .last()
                        .map(|s| s.ident == "compile_error")
                        == Some(true) =>
                {
                    Some(m.mac.tokens.to_string())
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_valid_tool_expands_with_no_error_and_its_registration_test() {
        if std::env::var("ESCEPINE_EXPECT_SCHEMA_VALIDATION").as_deref() == Ok("off") {
            assert!(
                !escepine_registry::schema::meta::enabled(),
                "the macros must build the registry without jsonschema"
            );
        }
        let out = expand(
            args(quote! { retry(max_attempts = 2, backoff_ms = 10) }),
            item(),
        );
        assert!(errors(&out).is_empty(), "{:?}", errors(&out));
        let text = out.to_string();
        assert!(text.contains("registers_with_its_cedar_action"), "{text}");
    }

    #[test]
    fn a_broken_argument_is_a_compile_error_naming_the_rule() {
        let out = expand(
            args(quote! { retry(max_attempts = 0, backoff_ms = 0) }),
            item(),
        );
        let errors = errors(&out);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("[retry/budget]"), "{errors:?}");
    }

    #[test]
    fn an_unknown_class_is_refused_by_the_record_rules() {
        let mut a = args(quote! { retry(max_attempts = 1, backoff_ms = 0) }).to_string();
        a = a.replace("\"read-only\"", "\"destructive\"");
        let out = expand(a.parse().expect("tokens"), item());
        let errors = errors(&out);
        assert!(
            !errors.is_empty(),
            "an unknown side-effect class must be refused"
        );
    }
}
