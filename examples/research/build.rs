//! Compiles the catalog (records, policies, envelope, SOPs) into the typed client this program
//! is linked against, and embeds the bundled corpus (`corpus/`) as a table of pages.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    escepine_registry_build::Builder::new()
        .records("../../tools/records")
        .policies("../../tools/policies")
        .envelope("../../tools/envelope.json")
        .sops("../../tools/sops")
        .policy_tests("../../tools/policy-tests")
        .workspace_root("../..")
        .compile()?;
    embed_corpus()
}

/// Writes `$OUT_DIR/corpus.rs`: `pub static FILES: &[(&str, &str)]`, each file of `corpus/`
/// (its path relative to `corpus/`, with `/` separators) and its text, by `include_str!`.
fn embed_corpus() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time, not baked in with `env!`: a build script binary cached in a shared
    // target directory may run for a checkout at another path.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("corpus");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files)?;
    files.sort();
    let mut out = String::from("/// Every file of `corpus/`: its relative path and its text.\n");
    out.push_str("pub static FILES: &[(&str, &str)] = &[\n");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let rel = file
            .strip_prefix(&root)?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        writeln!(
            out,
            "    ({rel:?}, include_str!({:?})),",
            file.display().to_string()
        )?;
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR")?).join("corpus.rs");
    std::fs::write(dest, out)?;
    Ok(())
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    Ok(())
}
