//! `escepine-catalog <tool_id>`: one catalog tool over `stdio-json` (see the library's
//! documentation for the tools, their configuration and their exit statuses).

fn main() -> std::process::ExitCode {
    escepine_catalog::serve::main()
}
