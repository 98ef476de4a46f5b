//! The trybuild cases of the macros live in `tests/cases.rs`; this library is empty.
