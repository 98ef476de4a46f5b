//! The generated code reviewed as golden files: the catalog's (`tools/`, as the examples build
//! it) and the generator's own fixtures. Any change to the generated text fails here until the
//! golden file is regenerated — `ESCEPINE_BLESS=1 cargo test -p escepine-registry-build --test
//! suite golden` — and the diff is reviewed.
//!
//! The golden files of records with no registry behind them (no `REGISTRY`) are also compiled:
//! see `tests/suite/golden_compiles.rs`.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// Compare `code` with the golden file `name`, or rewrite it under `ESCEPINE_BLESS=1`.
fn check_golden(name: &str, code: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("ESCEPINE_BLESS").is_some() {
        std::fs::write(&path, code).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let golden = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; generate it with ESCEPINE_BLESS=1", path.display()));
    if golden != code {
        let first = golden
            .lines()
            .zip(code.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| golden.lines().count().min(code.lines().count()));
        let show = |t: &str| t.lines().skip(first).take(5).collect::<Vec<_>>().join("\n");
        panic!(
            "the generated code differs from {} from line {}:\n--- golden\n{}\n--- generated\n{}\n\
             review the change and regenerate with ESCEPINE_BLESS=1",
            path.display(),
            first + 1,
            show(&golden),
            show(code)
        );
    }
}

#[test]
fn the_catalogs_generated_code_is_the_golden_file() {
    let ws = workspace();
    let tools = ws.join("tools");
    let code = escepine_registry_build::Builder::new()
        .records(tools.join("records"))
        .policies(tools.join("policies"))
        .envelope(tools.join("envelope.json"))
        .sops(tools.join("sops"))
        .workspace_root(&ws)
        .manifest_dir(ws.join("examples/catalog-client"))
        .cargo_directives(false)
        .generate()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !code.contains(&ws.display().to_string()),
        "the generated text names the checkout's path"
    );
    check_golden("catalog.rs", &code);
}
