//! Compiles the governed-path test records (`runtime/tests/fixtures/path`) into typed Rust for
//! the workspace-level scenario `tests/typed_client.rs`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    escepine_registry_build::Builder::new()
        .records("../../runtime/tests/fixtures/path/records")
        .policies("../../runtime/tests/fixtures/path/policies")
        .envelope("../../runtime/tests/fixtures/path/envelope.json")
        .workspace_root("../..")
        .file_name("path_tools.rs")
        .compile()?;
    Ok(())
}
