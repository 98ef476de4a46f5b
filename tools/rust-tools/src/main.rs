//! `escepine-rust-tools`: tools written in Rust with `#[tool]`, served by the tool host.
//!
//! - `text_stats` (Rust-first, [`stats`]): its whole contract is declared on the function, its
//!   Cedar action in `policies/schema.cedarschema`.
//! - `url_normalize` (record-first, [`urls`]): implements `tools/records/url_normalize.json`,
//!   whose types `build.rs` generates into [`registry`].
//!
//! This binary is both tools' endpoint: `escepine-rust-tools <tool id>` serves one call over
//! `stdio-json`; `escepine-rust-tools --describe [--out DIR]` prints their records.

mod stats;
mod urls;

/// What `build.rs` generated: the record's types and `Tool`, the Cedar action markers (those of
/// the `.cedarschema` included), and the build's `SOURCES`.
#[allow(dead_code, missing_docs, clippy::all)]
mod registry {
    escepine_contract::include_tools!();
}

escepine_toolhost::main!(stats::text_stats, urls::url_normalize);
