//! Parsing `#[tool(…)]`: the arguments as written, each kept with its tokens, every syntax
//! problem recorded in the [`Ctxt`]. Whether the values obey the registration rules is not
//! decided here but by [`super::draft`], through registry-build's own rules.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Ident, LitInt, LitStr, Path, Token};

use crate::ctxt::Ctxt;

/// The keys of Rust-first mode, for the "unknown key" message.
pub(crate) const RUST_FIRST_KEYS: &[&str] = &[
    "id",
    "version",
    "side_effect",
    "timeout_ms",
    "retry",
    "on_failure",
    "action_groups",
    "sandbox",
    "secrets",
    "compensation",
    "command",
    "types",
];

/// One argument, kept with the span of its key (for "given twice" and "not in this mode").
pub(crate) struct Attr<T> {
    name: &'static str,
    value: Option<(Span, T)>,
}

impl<T> Attr<T> {
    fn none(name: &'static str) -> Self {
        Self { name, value: None }
    }

    /// Set the value, reporting a second one at its key.
    fn set(&mut self, cx: &Ctxt, key: &Path, value: T) {
        if self.value.is_some() {
            cx.error_spanned_by(key, format!("`{}` is given twice", self.name));
        } else {
            self.value = Some((key_span(key), value));
        }
    }

    /// The value, if given.
    pub fn get(&self) -> Option<&T> {
        self.value.as_ref().map(|(_, v)| v)
    }

    /// The span of the key, if given.
    pub fn key_span(&self) -> Option<Span> {
        self.value.as_ref().map(|(s, _)| *s)
    }
}

fn key_span(key: &Path) -> Span {
    key.get_ident().map_or_else(Span::call_site, Ident::span)
}

/// `retry(max_attempts = …, backoff_ms = …)`.
#[derive(Default)]
pub(crate) struct Retry {
    pub max_attempts: Option<LitInt>,
    pub backoff_ms: Option<LitInt>,
}

/// `sandbox(egress(…), filesystem = "…")`.
#[derive(Default)]
pub(crate) struct Sandbox {
    pub egress: Vec<LitStr>,
    pub filesystem: Option<LitStr>,
}

/// `compensation(tool = "…", map(field = "/output/…", …))`.
#[derive(Default)]
pub(crate) struct Compensation {
    pub tool: Option<LitStr>,
    /// Inverse field → JSON pointer.
    pub map: Vec<(String, LitStr)>,
}

/// An outcome as written: `halt` or `"halt"`, with its tokens.
pub(crate) struct Outcome {
    pub name: String,
    pub tokens: TokenStream,
}

/// Everything `#[tool(…)]` may hold, as written.
pub(crate) struct ToolAttr {
    pub record: Attr<LitStr>,
    pub id: Attr<LitStr>,
    pub version: Attr<LitStr>,
    pub side_effect: Attr<LitStr>,
    pub timeout_ms: Attr<LitInt>,
    pub retry: Attr<Retry>,
    pub on_failure: Attr<Vec<Outcome>>,
    pub action_groups: Attr<Vec<LitStr>>,
    pub sandbox: Attr<Sandbox>,
    pub secrets: Attr<Vec<LitStr>>,
    pub compensation: Attr<Compensation>,
    pub command: Attr<LitStr>,
    pub types: Attr<Path>,
    /// The Rust-first keys given, in order (record-first mode rejects them).
    pub rust_first_keys: Vec<(String, Span)>,
}

impl ToolAttr {
    /// Parse the arguments; every problem goes to `cx`, and what parsed is kept.
    pub fn parse(cx: &Ctxt, args: TokenStream) -> Self {
        let mut a = Self {
            record: Attr::none("record"),
            id: Attr::none("id"),
            version: Attr::none("version"),
            side_effect: Attr::none("side_effect"),
            timeout_ms: Attr::none("timeout_ms"),
            retry: Attr::none("retry"),
            on_failure: Attr::none("on_failure"),
            action_groups: Attr::none("action_groups"),
            sandbox: Attr::none("sandbox"),
            secrets: Attr::none("secrets"),
            compensation: Attr::none("compensation"),
            command: Attr::none("command"),
            types: Attr::none("types"),
            rust_first_keys: Vec::new(),
        };
        let parser = syn::meta::parser(|meta| {
            // A problem in one argument is recorded and the next is read: all at once.
            if let Err(e) = a.item(cx, &meta) {
                cx.syn_error(e);
                skip_value(&meta);
            }
            Ok(())
        });
        cx.take(parser.parse2(args));
        a
    }

    fn item(&mut self, cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = &meta.path;
        let Some(name) = key.get_ident().map(Ident::to_string) else {
            return Err(meta.error("expected a key such as `id` or `record`"));
        };
        if RUST_FIRST_KEYS.contains(&name.as_str()) && name != "types" {
            self.rust_first_keys.push((name.clone(), key_span(key)));
        }
        match name.as_str() {
            "record" => self.record.set(cx, key, meta.value()?.parse()?),
            "id" => self.id.set(cx, key, meta.value()?.parse()?),
            "version" => self.version.set(cx, key, meta.value()?.parse()?),
            "side_effect" => self.side_effect.set(cx, key, meta.value()?.parse()?),
            "timeout_ms" => self.timeout_ms.set(cx, key, meta.value()?.parse()?),
            "command" => self.command.set(cx, key, meta.value()?.parse()?),
            "types" => {
                let path = meta.value()?.parse::<Path>().map_err(|e| {
                    syn::Error::new(e.span(), "expected a module path, e.g. `crate::registry`")
                })?;
                self.types.set(cx, key, path);
            }
            "retry" => {
                let mut retry = Retry::default();
                meta.parse_nested_meta(|m| {
                    if m.path.is_ident("max_attempts") {
                        retry.max_attempts = Some(m.value()?.parse()?);
                    } else if m.path.is_ident("backoff_ms") {
                        retry.backoff_ms = Some(m.value()?.parse()?);
                    } else {
                        cx.error_spanned_by(
                            &m.path,
                            "`retry` takes `max_attempts = <n >= 1>` and `backoff_ms = <ms>`",
                        );
                        skip_value(&m);
                    }
                    Ok(())
                })?;
                self.retry.set(cx, key, retry);
            }
            "on_failure" => {
                let outcomes = parenthesized_list::<Outcome>(meta)?;
                self.on_failure.set(cx, key, outcomes);
            }
            "action_groups" => {
                let list = parenthesized_list::<LitStr>(meta)?;
                self.action_groups.set(cx, key, list);
            }
            "secrets" => {
                let list = parenthesized_list::<LitStr>(meta)?;
                self.secrets.set(cx, key, list);
            }
            "sandbox" => {
                let mut sandbox = Sandbox::default();
                meta.parse_nested_meta(|m| {
                    if m.path.is_ident("egress") {
                        sandbox.egress.extend(parenthesized_list::<LitStr>(&m)?);
                    } else if m.path.is_ident("filesystem") {
                        sandbox.filesystem = Some(m.value()?.parse()?);
                    } else {
                        cx.error_spanned_by(
                            &m.path,
                            "`sandbox` takes `egress(\"host:port\", …)` and `filesystem = \
                             \"workspace\"`",
                        );
                        skip_value(&m);
                    }
                    Ok(())
                })?;
                self.sandbox.set(cx, key, sandbox);
            }
            "compensation" => {
                let mut comp = Compensation::default();
                meta.parse_nested_meta(|m| {
                    if m.path.is_ident("tool") {
                        comp.tool = Some(m.value()?.parse()?);
                    } else if m.path.is_ident("map") {
                        comp.map = parenthesized_list::<MapEntry>(&m)?
                            .into_iter()
                            .map(|e| (e.key, e.pointer))
                            .collect();
                    } else {
                        cx.error_spanned_by(
                            &m.path,
                            "`compensation` takes `tool = \"<inverse id>\"` and `map(<field> = \
                             \"<pointer>\", …)`",
                        );
                        skip_value(&m);
                    }
                    Ok(())
                })?;
                self.compensation.set(cx, key, comp);
            }
            other => {
                let expected = if self.record.get().is_some() {
                    "record-first mode takes `record` and `types`".to_string()
                } else {
                    format!(
                        "a Rust-first tool takes {}",
                        RUST_FIRST_KEYS
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                cx.error_spanned_by(key, format!("unknown key `{other}`; {expected}"));
                skip_value(meta);
            }
        }
        Ok(())
    }
}

/// Consume what follows a key (`= value` or `(…)`), so the next argument can be read.
fn skip_value(meta: &ParseNestedMeta<'_>) {
    let input = meta.input;
    if input.peek(Token![=]) {
        let _ = input.parse::<Token![=]>();
    }
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<proc_macro2::TokenTree>().is_err() {
            break;
        }
    }
}

/// `key(a, b, …)`: the items between the parentheses.
fn parenthesized_list<T: Parse>(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<T>> {
    let content;
    syn::parenthesized!(content in meta.input);
    Ok(Punctuated::<T, Token![,]>::parse_terminated(&content)?
        .into_iter()
        .collect())
}

impl Parse for Outcome {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            Ok(Self {
                name: lit.value(),
                tokens: lit.to_token_stream(),
            })
        } else {
            let ident = input.call(Ident::parse_any)?;
            Ok(Self {
                name: ident.to_string(),
                tokens: ident.to_token_stream(),
            })
        }
    }
}

/// A `map` entry: `field = "/output/id"` or `"field" = "/output/id"`.
struct MapEntry {
    key: String,
    pointer: LitStr,
}

impl Parse for MapEntry {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key = if input.peek(LitStr) {
            input.parse::<LitStr>()?.value()
        } else {
            input.call(Ident::parse_any)?.to_string()
        };
        input.parse::<Token![=]>()?;
        let pointer = input.parse()?;
        Ok(Self { key, pointer })
    }
}
