//! The compile-time guarantees of `#[derive(Payload)]` and `#[tool]`, with trybuild.
//!
//! `fail/*.rs` must not compile, each with the diagnostics of its checked-in `.stderr` (pointing
//! at the user's tokens); `pass/*.rs` must compile and run. One `TestCases`, so the dependencies
//! are built once. After a deliberate change of the generator or of a message, regenerate
//! `registry.rs` first (the workspace package's suite checks it), then the `.stderr` files, which
//! quote it, and review the diff:
//! `TRYBUILD=overwrite cargo test -p escepine-workspace --test suite macros`, then
//! `TRYBUILD=overwrite cargo test -p escepine-macro-cases`.

#[test]
fn macros() {
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}
