//! Model Context Protocol: Escepine's governed tools as an MCP server, MCP servers as governed
//! tools.
//!
//! - [`transport`]: the `mcp-stdio` endpoint transport. The process executor starts the MCP
//!   server binary a record names, initializes a session on its stdio, calls the one tool, and
//!   shuts it down — every attempt, on the governed path like any `stdio-json` tool.
//! - [`server`] and [`listing`]: `escepine serve --mcp stdio|http`. `tools/list` shows a
//!   principal the tools some request of theirs could be permitted to call (decided from the
//!   policies, [`listing::Listing`]), in exactly the form `escepine export --format mcp` writes;
//!   `tools/call` runs the governed path. Over HTTP (streamable HTTP, loopback by default) the
//!   principal comes from a bearer token ([`tokens`]), and each session serves only the
//!   principal that opened it ([`sessions`]).
//! - [`import`]: `escepine import mcp -- <command …>` reads an existing server's `tools/list` and
//!   writes draft records for `escepine check` to finish.
//! - [`rpc`]: the raw MCP client both the transport and the import speak; [`definition`]: the
//!   pinned definition digest (`endpoint.definition_sha256`) and what changed when it differs.
//! - [`names`]: the mapping between MCP tool names and tool ids both directions share.

pub mod definition;
pub mod import;
pub mod listing;
pub mod names;
pub mod rpc;
pub mod server;
pub mod sessions;
pub mod tokens;
pub mod transport;
