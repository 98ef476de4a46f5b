//! The `escepine` binary's tests, one binary: every command run as a process over the catalog,
//! broken copies of it, real MCP servers and SDK clients, SQLite and PostgreSQL ledgers.

mod export_rules;
mod sop_harness;

mod approval_cli;
mod cli_call;
mod cli_check;
mod cli_sop;
mod console;
mod export_cli;
mod export_providers;
mod ledger_checkpoints;
mod mcp_approval;
mod mcp_edge;
mod mcp_export;
mod mcp_flows;
mod mcp_import;
mod mcp_oauth;
mod mcp_remote;
mod mcp_serve_http;
mod mcp_serve_stdio;
mod policy_prove;
mod policy_test;
mod real_servers;
mod shadow_cli;
mod sop_approval;
mod sop_cli;
mod sop_cli_postgres;
mod telemetry;
