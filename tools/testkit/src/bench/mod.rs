//! What the runtime's benchmarks share (feature `bench`): a synthetic catalog and the naive
//! Cedar floor ([`catalog`]), governed calls from many tasks ([`concurrent`]), and the sandbox
//! benchmarks' binaries, records, run counts and p50/p99 rows ([`sandboxed`]).

pub mod catalog;
pub mod concurrent;
pub mod sandboxed;
