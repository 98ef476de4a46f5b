//! Validating `#[tool(…)]` with registry-build's own rules: the arguments become a draft tool
//! record (a JSON object, each field remembered with the tokens it came from), the draft is
//! checked by [`escepine_registry::rules::record::check_draft`], and each diagnostic is reported at
//! the user's tokens with its rule id.

use std::collections::BTreeMap;

use escepine_registry::diagnostic::Diagnostic;
use escepine_registry::rule::Rule;
use escepine_registry::rules::names;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use serde_json::{json, Map, Value};
use syn::{LitInt, LitStr};

use super::attr::ToolAttr;
use crate::ctxt::Ctxt;

/// A draft record and, for each JSON pointer, the tokens it came from.
pub(crate) struct Draft {
    /// The record as the arguments give it.
    pub value: Value,
    spans: BTreeMap<String, TokenStream>,
}

impl Draft {
    /// The draft of a Rust-first tool: its arguments and its description (`doc`, from `item`).
    pub fn rust_first(cx: &Ctxt, a: &ToolAttr, description: &str, item: &impl ToTokens) -> Self {
        let mut d = Self {
            value: Value::Object(Map::new()),
            spans: BTreeMap::new(),
        };
        d.put_lit("/tool_id", a.id.get());
        d.put_lit("/version", a.version.get());
        d.put("/description", json!(description), item.to_token_stream());
        d.put_lit("/side_effect_class", a.side_effect.get());
        d.put("/accepts_credentials", json!(false), TokenStream::new());
        if let Some(t) = a.timeout_ms.get() {
            d.put_int(cx, "/timeout_ms", t);
        }
        if let Some(r) = a.retry.get() {
            d.put("/retry", json!({}), key_tokens(a.retry.key_span()));
            if let Some(n) = &r.max_attempts {
                d.put_int(cx, "/retry/max_attempts", n);
            }
            if let Some(n) = &r.backoff_ms {
                d.put_int(cx, "/retry/backoff_ms", n);
            }
        }
        if let Some(outcomes) = a.on_failure.get() {
            d.put(
                "/on_failure",
                json!([]),
                key_tokens(a.on_failure.key_span()),
            );
            for (i, o) in outcomes.iter().enumerate() {
                d.put(&format!("/on_failure/{i}"), json!(o.name), o.tokens.clone());
            }
        }
        if let Some(groups) = a.action_groups.get() {
            d.put_list("/action_groups", groups, a.action_groups.key_span());
        }
        d.put("/auth", json!({"secrets": []}), TokenStream::new());
        if let Some(secrets) = a.secrets.get() {
            d.put_list("/auth/secrets", secrets, a.secrets.key_span());
        }
        d.put(
            "/sandbox_profile",
            json!({"egress": [], "filesystem": "workspace"}),
            key_tokens(a.sandbox.key_span()),
        );
        if let Some(s) = a.sandbox.get() {
            d.put_list("/sandbox_profile/egress", &s.egress, a.sandbox.key_span());
            d.put_lit("/sandbox_profile/filesystem", s.filesystem.as_ref());
        }
        if let Some(c) = a.compensation.get() {
            d.put(
                "/compensation",
                json!({"map": {}}),
                key_tokens(a.compensation.key_span()),
            );
            d.put_lit("/compensation/tool", c.tool.as_ref());
            for (field, pointer) in &c.map {
                let at = format!("/compensation/map/{}", escape(field));
                d.put(&at, json!(pointer.value()), pointer.to_token_stream());
            }
        }
        if let Some(c) = a.command.get() {
            d.put(
                "/endpoint",
                json!({"transport": "stdio-json"}),
                c.to_token_stream(),
            );
            d.put_lit("/endpoint/command", Some(c));
        }
        d
    }

    /// Check the draft with every per-record rule; report each problem at its tokens.
    pub fn validate(&self, cx: &Ctxt) {
        for diag in escepine_registry::rules::record::check_draft("#[tool]", &self.value).iter() {
            if diag.is_error() {
                cx.syn_error(self.error(diag));
            }
        }
    }

    /// A diagnostic of the draft as a compile error at the tokens its pointer came from.
    fn error(&self, diag: &Diagnostic) -> syn::Error {
        let pointer = diag.pointer.as_deref().unwrap_or("");
        // How to write the fix in `#[tool]`, else the rule's own advice.
        let advice = hint(diag.rule, pointer, &diag.message)
            .or_else(|| diag.help.clone())
            .map_or_else(String::new, |h| format!("; {h}"));
        let message = format!("[{}] {}{advice}", diag.rule.id(), diag.message);
        match self.tokens_of(pointer) {
            Some(tokens) => syn::Error::new_spanned(tokens, message),
            None => syn::Error::new(Span::call_site(), message),
        }
    }

    /// The tokens of `pointer`, or of its closest ancestor that has any.
    fn tokens_of(&self, pointer: &str) -> Option<&TokenStream> {
        let mut p = pointer;
        loop {
            if let Some(t) = self.spans.get(p).filter(|t| !t.is_empty()) {
                return Some(t);
            }
            p = &p[..p.rfind('/')?];
        }
    }

    fn put(&mut self, pointer: &str, value: Value, tokens: TokenStream) {
        let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        let key = key.replace("~1", "/").replace("~0", "~");
        match self.value.pointer_mut(parent) {
            Some(Value::Object(m)) => {
                m.insert(key, value);
            }
            Some(Value::Array(a)) => a.push(value),
            _ => {}
        }
        self.spans.insert(pointer.to_string(), tokens);
    }

    fn put_lit(&mut self, pointer: &str, lit: Option<&LitStr>) {
        if let Some(lit) = lit {
            self.put(pointer, json!(lit.value()), lit.to_token_stream());
        }
    }

    fn put_int(&mut self, cx: &Ctxt, pointer: &str, lit: &LitInt) {
        match lit.base10_parse::<u64>() {
            Ok(n) => self.put(pointer, json!(n), lit.to_token_stream()),
            Err(e) => cx.syn_error(e),
        }
    }

    fn put_list(&mut self, pointer: &str, items: &[LitStr], key: Option<Span>) {
        self.put(pointer, json!([]), key_tokens(key));
        for (i, lit) in items.iter().enumerate() {
            self.put(
                &format!("{pointer}/{i}"),
                json!(lit.value()),
                lit.to_token_stream(),
            );
        }
    }
}

/// The tool id of a record-first tool, by the tool-id rules.
pub(crate) fn validate_record_id(cx: &Ctxt, record: &LitStr) {
    if let Some((rule, message)) = names::tool_id_problem(&record.value()) {
        cx.error_spanned_by(record, format!("[{}] {message}", rule.id()));
    }
}

fn key_tokens(span: Option<Span>) -> TokenStream {
    span.map(|s| proc_macro2::Ident::new("key", s).to_token_stream())
        .unwrap_or_default()
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// How to write, in `#[tool]`, what a rule found missing or wrong.
fn hint(rule: Rule, pointer: &str, message: &str) -> Option<String> {
    let missing = |field: &str| message.contains(&format!("`{field}`"));
    let syntax = match rule {
        Rule::MissingField if pointer.is_empty() => [
            ("version", "`version = \"MAJOR.MINOR.PATCH\"`"),
            (
                "side_effect_class",
                "`side_effect = \"read-only\"` (or \"compensatable\", \"supersede\")",
            ),
            (
                "timeout_ms",
                "`timeout_ms = <ms>`: the bound of each attempt (greater than 0)",
            ),
            (
                "retry",
                "`retry(max_attempts = <n >= 1>, backoff_ms = <ms>)` (max_attempts = 1: no retry)",
            ),
            (
                "on_failure",
                "`on_failure(…)`: what an SOP step may do when the tool fails (halt, \
                 halt_and_escalate, compensate)",
            ),
        ]
        .into_iter()
        .find(|(f, _)| missing(f))
        .map(|(_, s)| s.to_string()),
        Rule::MissingField if pointer == "/retry" => {
            Some("`retry(max_attempts = <n >= 1>, backoff_ms = <ms>)`".to_string())
        }
        Rule::MissingField if pointer == "/compensation" => {
            Some("`compensation(tool = \"<inverse tool id>\", map(…))`".to_string())
        }
        Rule::CompensationMissing => Some(
            "`compensation(tool = \"<inverse tool id>\", map(<inverse field> = \
             \"/output/<field>\"))`"
                .to_string(),
        ),
        Rule::DescriptionEmpty => {
            return Some(
                "a Rust-first tool's description is its doc comment: write `/// what the tool \
                 does` above the function"
                    .to_string(),
            )
        }
        _ => None,
    };
    syntax.map(|s| format!("in #[tool]: add {s}"))
}
