//! Macros for tools written in Rust: `#[derive(Payload)]` and `#[tool]`.
//!
//! Both report every problem at once, each pointing at the offending tokens and naming the
//! registration rule it breaks (`[tool-id/reserved] …`); they never panic. `#[tool]` works in
//! three phases: its arguments are parsed (`syn`'s `parse_nested_meta`, problems collected in one
//! context), validated — the signature here, the contract by registry-build's own record rules
//! run on a draft record built from the arguments (`escepine_registry::rules::record::check_draft`), each
//! diagnostic's JSON pointer mapped back to the argument it came from — and expanded. No rule is
//! copied here: a record file and a `#[tool]` are judged by the same code. The expansion
//! refers to the light contract crate through absolute paths (`::escepine_contract::…`); only the
//! test `#[tool]` generates for a Rust-first tool refers to `::escepine_toolhost::check`.
//!
//! # `#[derive(Payload)]`
//!
//! For the input and output types of a tool: a struct with named fields, closed with
//! `#[serde(deny_unknown_fields)]` (a compile error on the struct otherwise), whose field names
//! (and `rename`s and `alias`es) are credential-free by the registration rule (a compile error
//! on the field otherwise; each field is judged beside the struct's other fields, so the
//! rule's recognised shapes — `session_name`, `next_token` beside `limit`, a `username` with no
//! password-like field — are accepted as in a record, a field being a plain string when it is a
//! `String` or `Option<String>` whose attributes cannot change its schema), and whose `Option`
//! fields are skipped when `None`. It implements
//! `escepine_contract::Payload`, whose schema is the one `schemars` (1.x, draft 2020-12) emits
//! for the type's `JsonSchema` derive, normalised into the registration subset.
//!
//! ```ignore
//! #[derive(Serialize, Deserialize, JsonSchema, Payload)]
//! #[serde(deny_unknown_fields)]
//! pub struct TextStatsInput {
//!     /// The text to measure.
//!     pub text: String,
//!     #[serde(default, skip_serializing_if = "Option::is_none")]
//!     pub top_words: Option<u32>,
//! }
//! ```
//!
//! # `#[tool]` on an `async fn`
//!
//! The function takes the payload (and, optionally, an `escepine_contract::CallContext`) and
//! returns `Result<Output, E>` with `E: Into<ToolError>` (or just `Output`). Next to it the macro
//! defines a braced struct named like the function (type namespace; the function keeps its
//! name), which implements `escepine_contract::ToolFn` and which a tool host serves:
//! `escepine_toolhost::main!(text_stats, url_normalize)`.
//!
//! **Record-first** — the contract is a JSON record, compiled by the crate's `build.rs`:
//!
//! ```ignore
//! #[tool(record = "url_normalize")] // types = crate::registry by default
//! async fn url_normalize(
//!     input: registry::url_normalize::Input,
//! ) -> Result<registry::url_normalize::Output, ToolError> {
//!     todo!()
//! }
//! ```
//!
//! The types must be those generated from the record (`<types>::<record>::Input`/`Output`):
//! another type is a compile error on the signature, and a record the build did not compile is
//! a compile error on the `record` string.
//!
//! **Rust-first** — the whole contract in Rust; the description is the doc comment:
//!
//! ```ignore
//! /// Count the characters, words and lines of a text.
//! #[tool(
//!     id = "text_stats",
//!     version = "1.0.0",
//!     side_effect = "read-only",            // read-only | compensatable | supersede
//!     timeout_ms = 5000,                    // > 0
//!     retry(max_attempts = 3, backoff_ms = 100),  // max_attempts >= 1
//!     on_failure(halt, halt_and_escalate),  // non-empty; also `compensate`
//!     // optional:
//!     action_groups("text"),
//!     sandbox(egress("api.example.com:443")),  // hosts, never URLs
//!     secrets("X_API_KEY"),
//!     compensation(tool = "x_undo", map(id = "/output/id")),  // compensatable only, required there
//!     command = "my-tool-host",             // endpoint binary; default: this crate's binary
//!     types = crate::registry,              // where build.rs's generated code is included
//! )]
//! async fn text_stats(input: TextStatsInput) -> Result<TextStatsOutput, ToolError> {
//!     todo!()
//! }
//! ```
//!
//! Its Cedar action is named through the generated `<types>::action!`, which the crate's
//! build.rs generates with one arm per action of its `.cedarschema` (each the marker
//! `<types>::actions::<id>`): an action the schema does not declare is a compile error at the
//! tool's `id = "…"` naming the action and the `.cedarschema` file. The marker carries the
//! context the `.cedarschema` declares (`CedarAction::CONTEXT`), and `#[derive(Payload)]` the
//! shape its fields imply (`Payload::CEDAR_SHAPE`, the fields it can read as written): a constant
//! compares the two, so a mismatch is a compile error at the tool's input type. A generated
//! `#[test]` checks the tool's record (with the schemas of its payload types) against every
//! registration rule and the action's whole declared context type against the one its payload
//! schema implies.

#![deny(missing_docs)]

use proc_macro::TokenStream;

mod ctxt;
mod payload;
mod serde_attrs;
mod shape;
mod tool;

/// Implement `escepine_contract::Payload` for a closed, credential-free struct.
///
/// See the [crate documentation](crate) for the rules.
#[proc_macro_derive(Payload)]
pub fn derive_payload(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    payload::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declare an `async fn` a governed tool: record-first (`record = "…"`) or Rust-first
/// (`id = "…"` and the whole contract).
///
/// See the [crate documentation](crate) for the syntax.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}
