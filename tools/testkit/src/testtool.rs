//! The testtool as a registered tool: [`testtool`] finds `escepine-testtool` (see [`crate::bins`];
//! `ESCEPINE_TESTTOOL=/path/to/escepine-testtool` names another), and [`testtool_record`] is a
//! registered record whose endpoint is the testtool in a given mode.

use std::path::PathBuf;
use std::sync::OnceLock;

use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;

use crate::bins;

/// Name of the testtool's binary.
pub const TESTTOOL: &str = bins::TESTTOOL.bin;

/// The path of a current `escepine-testtool`.
///
/// # Panics
/// When it is not built or older than its sources (the message says how to build it).
pub fn testtool() -> PathBuf {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(|| bins::path(bins::TESTTOOL)).clone()
}

/// A registered record for the testtool in `mode` (its first argument), at its absolute path,
/// with permissive schemas (the executor does not gate) and a 10 s timeout: the builder of the
/// same record, to vary before [`RecordBuilder::build`].
///
/// # Panics
/// As [`testtool`].
pub fn testtool_builder(tool_id: &str, mode: &str) -> RecordBuilder {
    RecordBuilder::new(tool_id)
        .description(&format!("escepine-testtool in mode {mode}"))
        .binary(&testtool())
        .args([mode])
}

/// [`testtool_builder`], registered.
///
/// # Panics
/// As [`testtool`], or when the record breaks a registration rule (a tool id that is not one).
pub fn testtool_record(tool_id: &str, mode: &str) -> ToolRecord {
    match testtool_builder(tool_id, mode).build() {
        Ok(record) => record,
        Err(d) => panic!(
            "the testtool record `{tool_id}` does not register:\n{}",
            d.render()
        ),
    }
}
