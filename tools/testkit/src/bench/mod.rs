//! What the runtime's benchmarks share (feature `bench`): a synthetic catalog and the naive
//! Cedar floor ([`catalog`]), governed calls from many tasks ([`concurrent`]), and the sandbox
//! benchmarks' binaries, records, run counts and p50/p99 rows ([`sandboxed`]).

pub mod catalog;
pub mod concurrent;
pub mod sandboxed;

/// Whether this run is a smoke run: the program was started without `--bench`, as
/// `cargo test --benches` starts it, so every row runs once to prove the bench works.
pub fn smoke() -> bool {
    !std::env::args().any(|a| a == "--bench")
}

/// The size of a bench's data set (recorded calls, ledger entries, policies): `full` when it is
/// measured, a tenth of it (at least one) in a [`smoke`] run, which proves the bench works
/// without building the whole set in the unoptimized test profile.
pub fn scaled(full: usize) -> usize {
    if smoke() {
        (full / 10).max(1)
    } else {
        full
    }
}
