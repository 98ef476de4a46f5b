//! The MCP crate's tests, one binary: the listing's analysis of real policies, and the Cedar
//! types of strands-agents' tool schemas (ignored unless `STRANDS_TOOLS_JSON` names them).

mod mcp_listing;
mod strands_schemas;
