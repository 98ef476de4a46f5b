//! Compiles the catalog's tool records into typed Rust (see `src/main.rs`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    registry_build::Builder::new()
        .records("../../tools/records")
        .policies("../../tools/policies")
        .envelope("../../tools/envelope.json")
        .workspace_root("../..")
        .compile()?;
    Ok(())
}
