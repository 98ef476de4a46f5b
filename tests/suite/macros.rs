//! The registry the macros' trybuild cases include (`tests/macros/`, the package
//! `escepine-macro-cases`) checked against the generator: it needs the build step, which the
//! cases' own package must not depend on (trybuild would compile Cedar for them).

/// The registry the Rust-first cases include, `tests/macros/registry.rs`, is what the generator
/// makes of `tests/macros/registry/policies` now: the cases exercise the generated `action!`
/// and markers, not a copy of them. `TRYBUILD=overwrite` rewrites it with the `.stderr` files.
#[test]
fn the_cases_registry_is_what_the_generator_makes() {
    let cases = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/macros");
    let generated = escepine_registry_build::Builder::new()
        .policies(cases.join("registry/policies"))
        .embed_registry(false)
        .cargo_directives(false)
        .manifest_dir(&cases)
        .generate()
        .unwrap_or_else(|e| panic!("generating the cases' registry: {e}"));
    let file = cases.join("registry.rs");
    if std::env::var_os("TRYBUILD").is_some_and(|v| v == "overwrite") {
        std::fs::write(&file, &generated)
            .unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
        return;
    }
    let committed = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    assert!(
        committed == generated,
        "{} is not what the generator makes now; regenerate it with \
         `TRYBUILD=overwrite cargo test -p escepine-workspace --test suite macros`, then the \
         cases' `.stderr` files with `TRYBUILD=overwrite cargo test -p escepine-macro-cases`, \
         and review the diff",
        file.display()
    );
}
