//! The testkit's tests, one binary: the testtool's modes, the installed fixtures, and the
//! errors when they are missing.

mod fixtures;
mod fixtures_missing;
mod modes;
