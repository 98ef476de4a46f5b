//! The workspace package's tests, one binary: the proc macros' compile-fail and pass cases
//! (trybuild over `tests/macros/`), a renamed record field breaking its call site, and README's
//! snippets built and run outside the workspace.

mod macros;
mod readme;
mod rename_breaks_call_site;
