//! Model Context Protocol for Escepine: the governed tools as an MCP server, MCP servers as
//! governed tools.
//!
//! - [`server`] and [`listing`]: `escepine serve --mcp stdio|http`. `tools/list` shows a
//!   principal the tools some request of theirs could be permitted to call (decided from the
//!   policies, [`listing::Listing`]), in exactly the form `escepine export --format mcp` writes
//!   ([`escepine_export::mcp`]); `tools/call` runs the governed path. Over HTTP
//!   (streamable HTTP, loopback by default) the caller comes from a bearer token ([`auth`]: a
//!   development token file, [`escepine_identity::tokens`], or an OAuth 2.1 access token whose claims give the
//!   principal and its parents), and each 2025-era session serves only the principal that
//!   opened it ([`sessions`]).
//! - [`tasks`] and [`approve`]: a call waiting for approval is an MCP task (its state read from
//!   the ledger) or an `awaiting_approval` tool error; the built-in tool `approve` decides it.
//! - [`import`]: `escepine import mcp -- <command …>` reads an existing server's `tools/list` and
//!   writes draft records for `escepine check` to finish.
//!
//! The `mcp-stdio` endpoint transport that calls an imported server on the governed path, the
//! raw MCP client both it and the import speak, the pinned definition digest and the name
//! mapping live in the runtime ([`escepine_runtime::mcp`], feature `mcp-stdio`), below this
//! crate, and are re-exported here.

#![deny(missing_docs)]

pub mod approve;
pub mod auth;
pub mod import;
pub mod listing;
pub mod results;
pub mod server;
pub mod sessions;
pub mod tasks;
