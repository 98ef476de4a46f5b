//! The compile-time guarantees of `#[derive(Payload)]` and `#[tool]`, with trybuild.
//!
//! `fail/*.rs` must not compile, each with the diagnostics of its checked-in `.stderr` (pointing
//! at the user's tokens); `pass/*.rs` must compile and run. One `TestCases`, so the dependencies
//! are built once. After a deliberate change of a message, regenerate the `.stderr` files (and
//! `registry.rs`, which the workspace package's suite checks) with
//! `TRYBUILD=overwrite cargo test -p escepine-macro-cases -p escepine-workspace` and review the diff.

#[test]
fn macros() {
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}
