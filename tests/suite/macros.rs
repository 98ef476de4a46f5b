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
