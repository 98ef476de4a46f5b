//! Compiles the governed-path test records (`runtime/tests/fixtures/path`) and a remote tool's
//! (`runtime/tests/fixtures/remote`) into typed Rust for the workspace-level scenarios
//! `tests/typed_client.rs` and `tests/typed_remote.rs`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    escepine_registry_build::Builder::new()
        .records("../../runtime/tests/fixtures/path/records")
        .policies("../../runtime/tests/fixtures/path/policies")
        .envelope("../../runtime/tests/fixtures/path/envelope.json")
        .workspace_root("../..")
        .file_name("path_tools.rs")
        .compile()?;
    // A remote (`mcp-http`) tool: its URL a placeholder the scenario replaces with a live
    // server's (the typed client is bound to the tool's id, version and schemas, not its URL).
    escepine_registry_build::Builder::new()
        .records("../../runtime/tests/fixtures/remote/records")
        .policies("../../runtime/tests/fixtures/remote/policies")
        .envelope("../../runtime/tests/fixtures/remote/envelope.json")
        .workspace_root("../..")
        .file_name("remote_tools.rs")
        .compile()?;
    Ok(())
}
