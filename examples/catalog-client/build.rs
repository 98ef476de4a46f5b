//! Compiles the catalog's tool records and SOPs into typed Rust (see `src/main.rs`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    escepine_registry_build::Builder::new()
        .records("../../tools/records")
        .policies("../../tools/policies")
        .envelope("../../tools/envelope.json")
        .sops("../../tools/sops")
        .workspace_root("../..")
        .compile()?;
    Ok(())
}
