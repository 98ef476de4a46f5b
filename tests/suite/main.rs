//! The workspace package's tests, one binary: the registry the macros' trybuild cases include
//! (`tests/macros/`) checked against the generator, a renamed record field breaking its call
//! site, and README's snippets built and run outside the workspace.

mod macros;
mod readme;
mod rename_breaks_call_site;
