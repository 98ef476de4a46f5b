//! The tool host's tests, one binary: the build step on inputs made here, the records it
//! describes, and its tools on the governed path.

mod build_helper;
mod governed_path;
mod record_schema;
