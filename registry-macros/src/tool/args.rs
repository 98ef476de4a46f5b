//! The arguments of `#[tool(…)]`, parsed and checked against the registration rules that can be
//! decided while expanding.

use std::str::FromStr;

use escepine_contract::RetryPolicy;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, LitInt, LitStr, Meta, Path, Token};

use crate::errors::Errors;

/// Tool ids reserved for the class action groups.
const RESERVED_IDS: [&str; 3] = ["read_only", "compensatable", "supersede"];
/// The class action groups.
const CLASS_GROUPS: [&str; 3] = ["read-only", "compensatable", "supersede"];

/// The keys of Rust-first mode, for the "unknown key" message.
const RUST_FIRST_KEYS: &[&str] = &[
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

/// What `#[tool(…)]` declares.
pub(crate) enum Mode {
    /// `record = "…"`: the contract is a JSON record.
    RecordFirst(RecordFirst),
    /// `id = "…"` and the rest: the contract is declared here.
    RustFirst(Box<RustFirst>),
}

/// Record-first arguments.
pub(crate) struct RecordFirst {
    /// The record's tool id.
    pub record: LitStr,
    /// The module holding the generated code (`crate::registry` by default).
    pub types: Option<Path>,
}

/// The side-effect class, as written and as the contract constant's variant name.
pub(crate) struct Class {
    /// The literal (`"read-only"`).
    pub lit: LitStr,
    /// `ReadOnly`, `Compensatable` or `Supersede`.
    pub variant: &'static str,
}

/// The declared inverse of a compensatable tool.
pub(crate) struct Compensation {
    /// The `compensation(…)` tokens, for errors.
    pub tokens: TokenStream,
    /// The inverse tool's id.
    pub tool: LitStr,
    /// Inverse field → JSON pointer.
    pub map: Vec<(String, LitStr)>,
}

/// Rust-first arguments, each checked.
pub(crate) struct RustFirst {
    /// `id`.
    pub id: LitStr,
    /// `version`.
    pub version: LitStr,
    /// `side_effect`.
    pub class: Class,
    /// `timeout_ms`.
    pub timeout_ms: u64,
    /// `retry(max_attempts)`.
    pub max_attempts: u32,
    /// `retry(backoff_ms)`.
    pub backoff_ms: u64,
    /// `on_failure(…)`: `Halt`, `HaltAndEscalate`, `Compensate`.
    pub on_failure: Vec<&'static str>,
    /// `action_groups(…)`.
    pub action_groups: Vec<LitStr>,
    /// `sandbox(egress(…))`.
    pub egress: Vec<LitStr>,
    /// `secrets(…)`.
    pub secrets: Vec<LitStr>,
    /// `compensation(…)`.
    pub compensation: Option<Compensation>,
    /// `command`: the endpoint binary (default: the crate's own).
    pub command: Option<LitStr>,
    /// `types`: the module holding the generated code (`crate::registry` by default).
    pub types: Option<Path>,
}

/// One `key = value` or `key(…)` item, kept with its tokens.
struct Item {
    key: String,
    meta: Meta,
}

/// Parse and check the attribute's arguments; `None` (with errors) when unusable.
pub(crate) fn parse(args: TokenStream, errors: &mut Errors) -> Option<Mode> {
    let metas = errors.take(Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args))?;
    let mut items: Vec<Item> = Vec::new();
    for meta in metas {
        let Some(key) = meta.path().get_ident().map(Ident::to_string) else {
            errors.at(meta.path(), "expected a key such as `id` or `record`");
            continue;
        };
        if items.iter().any(|i| i.key == key) {
            errors.at(meta.path(), format!("`{key}` is given twice"));
            continue;
        }
        items.push(Item { key, meta });
    }
    let record = items.iter().find(|i| i.key == "record");
    let id = items.iter().find(|i| i.key == "id");
    match (record, id) {
        (Some(_), Some(i)) => {
            errors.at(
                &i.meta,
                "`record` and `id` exclude each other: a record-first tool takes its contract \
                 from the record, a Rust-first tool declares it here",
            );
            None
        }
        (Some(_), None) => record_first(&items, errors).map(Mode::RecordFirst),
        (None, Some(_)) => rust_first(&items, errors).map(|r| Mode::RustFirst(Box::new(r))),
        (None, None) => {
            errors.push(syn::Error::new(
                Span::call_site(),
                "#[tool] needs `record = \"<tool id>\"` (record-first: the contract is a JSON \
                 record compiled by build.rs) or `id = \"<tool id>\"` with the whole contract \
                 (Rust-first)",
            ));
            None
        }
    }
}

fn record_first(items: &[Item], errors: &mut Errors) -> Option<RecordFirst> {
    let mut record = None;
    let mut types = None;
    for item in items {
        match item.key.as_str() {
            "record" => {
                if let Some(lit) = errors.take(str_value(&item.meta)) {
                    check_tool_id(&lit, errors);
                    record = Some(lit);
                }
            }
            "types" => types = errors.take(path_value(&item.meta)),
            k if RUST_FIRST_KEYS.contains(&k) => errors.at(
                &item.meta,
                format!(
                    "`{k}` comes from the record in record-first mode; remove it here (or declare \
                     the tool Rust-first, with `id = …` instead of `record = …`)"
                ),
            ),
            k => errors.at(
                item.meta.path(),
                format!("unknown key `{k}`; record-first mode takes `record` and `types`"),
            ),
        }
    }
    Some(RecordFirst {
        record: record?,
        types,
    })
}

#[allow(clippy::too_many_lines)]
fn rust_first(items: &[Item], errors: &mut Errors) -> Option<RustFirst> {
    let mut id = None;
    let mut version = None;
    let mut class = None;
    let mut timeout_ms = None;
    let mut retry = None;
    let mut on_failure = None;
    let mut action_groups = Vec::new();
    let mut egress = Vec::new();
    let mut secrets = Vec::new();
    let mut compensation = None;
    let mut command = None;
    let mut types = None;
    let mut ok = true;
    for item in items {
        let before = errors_marker(errors);
        match item.key.as_str() {
            "id" => {
                if let Some(lit) = errors.take(str_value(&item.meta)) {
                    if check_tool_id(&lit, errors) {
                        id = Some(lit);
                    }
                }
            }
            "version" => {
                if let Some(lit) = errors.take(str_value(&item.meta)) {
                    match semver::Version::parse(&lit.value()) {
                        Ok(_) => version = Some(lit),
                        Err(e) => errors.at(
                            &lit,
                            format!(
                                "`{}` is not a semver version ({e}); write MAJOR.MINOR.PATCH, \
                                 e.g. \"1.0.0\"",
                                lit.value()
                            ),
                        ),
                    }
                }
            }
            "side_effect" => {
                if let Some(lit) = errors.take(str_value(&item.meta)) {
                    let variant = match lit.value().as_str() {
                        "read-only" => Some("ReadOnly"),
                        "compensatable" => Some("Compensatable"),
                        "supersede" => Some("Supersede"),
                        _ => None,
                    };
                    match variant {
                        Some(variant) => class = Some(Class { lit, variant }),
                        None => errors.at(
                            &lit,
                            format!(
                                "`{}` is not a side-effect class; use \"read-only\", \
                                 \"compensatable\" or \"supersede\"",
                                lit.value()
                            ),
                        ),
                    }
                }
            }
            "timeout_ms" => {
                if let Some(lit) = errors.take(int_value(&item.meta)) {
                    match lit.base10_parse::<u64>() {
                        Ok(0) => errors.at(
                            &lit,
                            "`timeout_ms` is 0: each attempt needs a bound greater than 0 \
                             (milliseconds)",
                        ),
                        Ok(t) => timeout_ms = Some(t),
                        Err(e) => errors.push(e),
                    }
                }
            }
            "retry" => retry = parse_retry(&item.meta, errors),
            "on_failure" => on_failure = parse_on_failure(&item.meta, errors),
            "action_groups" => {
                if let Some(list) = errors.take(str_list(&item.meta)) {
                    action_groups = check_groups(list, errors);
                }
            }
            "sandbox" => egress = parse_sandbox(&item.meta, errors),
            "secrets" => {
                if let Some(list) = errors.take(str_list(&item.meta)) {
                    secrets = check_secrets(list, errors);
                }
            }
            "compensation" => compensation = parse_compensation(&item.meta, errors),
            "command" => {
                if let Some(lit) = errors.take(str_value(&item.meta)) {
                    if lit.value().trim().is_empty() {
                        errors.at(&lit, "the endpoint command is empty");
                    } else {
                        command = Some(lit);
                    }
                }
            }
            "types" => types = errors.take(path_value(&item.meta)),
            // `record` with `id` was reported by `parse`.
            "record" => {}
            k => errors.at(
                item.meta.path(),
                format!(
                    "unknown key `{k}`; a Rust-first tool takes {}",
                    RUST_FIRST_KEYS
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        }
        ok &= errors_marker(errors) == before;
    }

    let missing = |errors: &mut Errors, what: &str| {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!("#[tool] (Rust-first) is missing {what}"),
        ));
    };
    if version.is_none() && !items.iter().any(|i| i.key == "version") {
        missing(errors, "`version = \"MAJOR.MINOR.PATCH\"`");
    }
    if class.is_none() && !items.iter().any(|i| i.key == "side_effect") {
        missing(
            errors,
            "`side_effect = \"read-only\"` (or \"compensatable\", \"supersede\")",
        );
    }
    if timeout_ms.is_none() && !items.iter().any(|i| i.key == "timeout_ms") {
        missing(
            errors,
            "`timeout_ms = <ms>`: the bound of each attempt (greater than 0)",
        );
    }
    if retry.is_none() && !items.iter().any(|i| i.key == "retry") {
        missing(
            errors,
            "`retry(max_attempts = <n >= 1>, backoff_ms = <ms>)` (max_attempts = 1: no retry)",
        );
    }
    if on_failure.is_none() && !items.iter().any(|i| i.key == "on_failure") {
        missing(
            errors,
            "`on_failure(…)`: what an SOP step may do when the tool fails (halt, \
             halt_and_escalate, compensate)",
        );
    }

    // A compensatable tool declares its inverse; no other tool does.
    match (&class, &compensation) {
        (Some(c), None) if c.variant == "Compensatable" => errors.at(
            &c.lit,
            "a compensatable tool must declare its inverse: add \
             `compensation(tool = \"<inverse tool id>\", map(<inverse field> = \"/output/<field>\"))`",
        ),
        (Some(c), Some(comp)) if c.variant != "Compensatable" => errors.at(
            &comp.tokens,
            format!(
                "only compensatable tools declare an inverse; this tool is {}",
                c.lit.value()
            ),
        ),
        _ => {}
    }

    let (max_attempts, backoff_ms) = retry?;
    if !ok {
        return None;
    }
    Some(RustFirst {
        id: id?,
        version: version?,
        class: class?,
        timeout_ms: timeout_ms?,
        max_attempts,
        backoff_ms,
        on_failure: on_failure?,
        action_groups,
        egress,
        secrets,
        compensation,
        command,
        types,
    })
}

/// A count of the problems recorded so far (to tell whether an item added one).
fn errors_marker(errors: &Errors) -> usize {
    errors.count()
}

fn str_value(meta: &Meta) -> syn::Result<LitStr> {
    let nv = meta.require_name_value()?;
    match &nv.value {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Ok(s.clone()),
            other => Err(syn::Error::new_spanned(other, "expected a string literal")),
        },
        other => Err(syn::Error::new_spanned(other, "expected a string literal")),
    }
}

fn int_value(meta: &Meta) -> syn::Result<LitInt> {
    let nv = meta.require_name_value()?;
    match &nv.value {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => Ok(i.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                "expected an integer literal",
            )),
        },
        other => Err(syn::Error::new_spanned(
            other,
            "expected an integer literal",
        )),
    }
}

fn path_value(meta: &Meta) -> syn::Result<Path> {
    let nv = meta.require_name_value()?;
    match &nv.value {
        Expr::Path(p) if p.qself.is_none() => Ok(p.path.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            "expected a module path, e.g. `crate::registry`",
        )),
    }
}

fn str_list(meta: &Meta) -> syn::Result<Vec<LitStr>> {
    let list = meta.require_list()?;
    Ok(list
        .parse_args_with(Punctuated::<LitStr, Token![,]>::parse_terminated)?
        .into_iter()
        .collect())
}

fn nested(meta: &Meta) -> syn::Result<Vec<Meta>> {
    let list = meta.require_list()?;
    Ok(list
        .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)?
        .into_iter()
        .collect())
}

/// `^[a-z][a-z0-9_]*$` and not reserved; reports and returns whether it passed.
fn check_tool_id(lit: &LitStr, errors: &mut Errors) -> bool {
    let id = lit.value();
    let valid = id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        errors.at(
            lit,
            format!("the tool id `{id}` does not match ^[a-z][a-z0-9_]*$"),
        );
        false
    } else if RESERVED_IDS.contains(&id.as_str()) {
        errors.at(
            lit,
            format!("`{id}` is reserved: it names a class action group"),
        );
        false
    } else {
        true
    }
}

fn parse_retry(meta: &Meta, errors: &mut Errors) -> Option<(u32, u64)> {
    let items = errors.take(nested(meta))?;
    let mut attempts = None;
    let mut backoff = None;
    let mut ok = true;
    for item in &items {
        let key = item.path().get_ident().map(Ident::to_string);
        match key.as_deref() {
            Some("max_attempts") => match int_value(item).and_then(|l| {
                let n = l.base10_parse::<u64>()?;
                Ok((l, n))
            }) {
                // The record check's own bounds (`RetryPolicy::check`), on each field alone.
                Ok((lit, n)) => match RetryPolicy::check(n, 0) {
                    Ok(()) => attempts = u32::try_from(n).ok(),
                    Err(e) => {
                        errors.at(lit, e.to_string());
                        ok = false;
                    }
                },
                Err(e) => {
                    errors.push(e);
                    ok = false;
                }
            },
            Some("backoff_ms") => match int_value(item).and_then(|l| {
                let n = l.base10_parse::<u64>()?;
                Ok((l, n))
            }) {
                Ok((lit, n)) => match RetryPolicy::check(1, n) {
                    Ok(()) => backoff = Some(n),
                    Err(e) => {
                        errors.at(lit, e.to_string());
                        ok = false;
                    }
                },
                Err(e) => {
                    errors.push(e);
                    ok = false;
                }
            },
            _ => {
                errors.at(
                    item,
                    "`retry` takes `max_attempts = <n >= 1>` and `backoff_ms = <ms>`",
                );
                ok = false;
            }
        }
    }
    if ok && attempts.is_none() {
        errors.at(meta, "`retry` needs `max_attempts = <n >= 1>`");
    }
    if ok && backoff.is_none() {
        errors.at(meta, "`retry` needs `backoff_ms = <ms>`");
    }
    Some((attempts?, backoff?))
}

/// An outcome name: `halt` or the string `"halt"`.
struct Outcome(String, TokenStream);

impl Parse for Outcome {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            Ok(Self(lit.value(), lit.to_token_stream()))
        } else {
            let ident: Ident = input.parse()?;
            Ok(Self(ident.to_string(), ident.to_token_stream()))
        }
    }
}

fn parse_on_failure(meta: &Meta, errors: &mut Errors) -> Option<Vec<&'static str>> {
    let list = errors.take(meta.require_list().cloned())?;
    let outcomes =
        errors.take(list.parse_args_with(Punctuated::<Outcome, Token![,]>::parse_terminated))?;
    if outcomes.is_empty() {
        errors.at(
            &list,
            "`on_failure` is empty; list at least one of halt, halt_and_escalate, compensate",
        );
        return None;
    }
    let mut out: Vec<&'static str> = Vec::new();
    let mut ok = true;
    for Outcome(name, tokens) in outcomes {
        let variant = match name.as_str() {
            "halt" => "Halt",
            "halt_and_escalate" => "HaltAndEscalate",
            "compensate" => "Compensate",
            _ => {
                errors.at(
                    tokens,
                    format!(
                        "`{name}` is not an outcome; use halt, halt_and_escalate or compensate"
                    ),
                );
                ok = false;
                continue;
            }
        };
        if out.contains(&variant) {
            errors.at(tokens, format!("`{name}` is listed twice"));
            ok = false;
        } else {
            out.push(variant);
        }
    }
    ok.then_some(out)
}

fn check_groups(list: Vec<LitStr>, errors: &mut Errors) -> Vec<LitStr> {
    let mut out: Vec<LitStr> = Vec::new();
    for lit in list {
        let g = lit.value();
        let valid = g.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && g.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !valid {
            errors.at(
                &lit,
                format!("the group name `{g}` does not match ^[a-z][a-z0-9_-]*$"),
            );
        } else if CLASS_GROUPS.contains(&g.as_str()) || RESERVED_IDS.contains(&g.as_str()) {
            errors.at(
                &lit,
                format!(
                    "`{g}` is a class group; the tool joins its class group through `side_effect`"
                ),
            );
        } else if out.iter().any(|o| o.value() == g) {
            errors.at(&lit, format!("`{g}` is listed twice"));
        } else {
            out.push(lit);
        }
    }
    out
}

fn parse_sandbox(meta: &Meta, errors: &mut Errors) -> Vec<LitStr> {
    let Some(items) = errors.take(nested(meta)) else {
        return Vec::new();
    };
    let mut egress = Vec::new();
    for item in &items {
        let key = item.path().get_ident().map(Ident::to_string);
        match key.as_deref() {
            Some("egress") => {
                if let Some(list) = errors.take(str_list(item)) {
                    for lit in list {
                        match registry_build::EgressEntry::from_str(&lit.value()) {
                            Ok(_) => egress.push(lit),
                            Err(e) => errors.at(&lit, e),
                        }
                    }
                }
            }
            Some("filesystem") => {
                if let Some(lit) = errors.take(str_value(item)) {
                    if lit.value() != "workspace" {
                        errors.at(
                            &lit,
                            format!(
                                "`{}`: the only file-system access is \"workspace\" (the \
                                 sandbox's ephemeral workspace)",
                                lit.value()
                            ),
                        );
                    }
                }
            }
            _ => errors.at(
                item,
                "`sandbox` takes `egress(\"host:port\", …)` and `filesystem = \"workspace\"`",
            ),
        }
    }
    egress
}

fn is_secret_name(n: &str) -> bool {
    n.len() <= 128
        && n.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && n.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !n.starts_with("ESCEPINE_")
}

fn check_secrets(list: Vec<LitStr>, errors: &mut Errors) -> Vec<LitStr> {
    let mut out: Vec<LitStr> = Vec::new();
    for lit in list {
        let n = lit.value();
        if !is_secret_name(&n) {
            errors.at(
                &lit,
                "a secret name must match ^[A-Z][A-Z0-9_]*$ (and not start with ESCEPINE_); never \
                 put a credential in a contract: name it, e.g. \"X_API_KEY\"",
            );
        } else if out.iter().any(|o| o.value() == n) {
            errors.at(&lit, format!("`{n}` is listed twice"));
        } else {
            out.push(lit);
        }
    }
    out
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

fn parse_compensation(meta: &Meta, errors: &mut Errors) -> Option<Compensation> {
    let items = errors.take(nested(meta))?;
    let mut tool = None;
    let mut map = None;
    for item in &items {
        let key = item.path().get_ident().map(Ident::to_string);
        match key.as_deref() {
            Some("tool") => {
                if let Some(lit) = errors.take(str_value(item)) {
                    if check_tool_id(&lit, errors) {
                        tool = Some(lit);
                    }
                }
            }
            Some("map") => {
                let Some(list) = errors.take(item.require_list().cloned()) else {
                    continue;
                };
                let Some(entries) = errors
                    .take(list.parse_args_with(Punctuated::<MapEntry, Token![,]>::parse_terminated))
                else {
                    continue;
                };
                let mut out = Vec::new();
                for e in entries {
                    let p = e.pointer.value();
                    if p.starts_with("/input/")
                        || p.starts_with("/output/")
                        || p == "/input"
                        || p == "/output"
                    {
                        out.push((e.key, e.pointer));
                    } else {
                        errors.at(
                            &e.pointer,
                            format!(
                                "`{p}` is not a JSON pointer into {{\"input\": …, \"output\": …}}; \
                                 write \"/input/<field>\" or \"/output/<field>\""
                            ),
                        );
                    }
                }
                map = Some(out);
            }
            _ => errors.at(
                item,
                "`compensation` takes `tool = \"<inverse id>\"` and `map(<field> = \"<pointer>\", …)`",
            ),
        }
    }
    if tool.is_none() && !items.iter().any(|i| i.path().is_ident("tool")) {
        errors.at(meta, "`compensation` needs `tool = \"<inverse tool id>\"`");
    }
    Some(Compensation {
        tokens: meta.to_token_stream(),
        tool: tool?,
        map: map.unwrap_or_default(),
    })
}
