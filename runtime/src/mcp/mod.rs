//! Model Context Protocol in the runtime (feature `mcp-stdio`): MCP servers as governed tools.
//!
//! - [`transport`]: the `mcp-stdio` endpoint transport. The process executor starts the MCP
//!   server binary a record names, initializes a session on its stdio, calls the one tool, and
//!   shuts it down — every attempt, on the governed path like any `stdio-json` tool.
//! - [`rpc`]: the raw MCP client the transport (and `escepine import mcp`, in `escepine-mcp`)
//!   speaks; [`definition`]: the pinned definition digest (`endpoint.definition_sha256`) and what
//!   changed when it differs.
//! - [`names`]: the mapping between MCP tool names and tool ids both directions share.
//!
//! Serving the governed tools over MCP (`escepine serve`), the principal's listing, bearer
//! tokens and the import of an existing server live in the `escepine-mcp` crate.

pub mod definition;
pub mod names;
pub mod rpc;
pub mod transport;
