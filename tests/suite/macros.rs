//! The compile-time guarantees of `#[derive(Payload)]` and `#[tool]`, with trybuild.
//!
//! `tests/macros/fail/*.rs` must not compile, each with the diagnostics of its checked-in
//! `.stderr` (pointing at the user's tokens); `tests/macros/pass/*.rs` must compile and run.
//! One `TestCases`, so the dependencies are built once. After a deliberate change of a message,
//! regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test suite macros` and review
//! the diff.

#[test]
fn macros() {
    let t = trybuild::TestCases::new();
    t.pass("tests/macros/pass/*.rs");
    t.compile_fail("tests/macros/fail/*.rs");
}

/// The registry the Rust-first cases include, `tests/macros/registry.rs`, is what the generator
/// makes of `tests/macros/registry/policies` now: the cases exercise the generated `action!`
/// and markers, not a copy of them. `TRYBUILD=overwrite` rewrites it with the `.stderr` files.
#[test]
fn the_cases_registry_is_what_the_generator_makes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let generated = escepine_registry_build::Builder::new()
        .policies(root.join("tests/macros/registry/policies"))
        .embed_registry(false)
        .cargo_directives(false)
        .manifest_dir(root)
        .generate()
        .unwrap_or_else(|e| panic!("generating the cases' registry: {e}"));
    let file = root.join("tests/macros/registry.rs");
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
         `TRYBUILD=overwrite cargo test --test suite macros` and review the diff",
        file.display()
    );
}
