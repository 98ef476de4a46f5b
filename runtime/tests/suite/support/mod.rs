//! Helpers the test modules share that need the runtime (those that do not live in
//! `escepine_testkit`).

pub mod authorize;
pub mod host;
pub mod ledger;
pub mod logs;
pub mod mcp;
pub mod pin;
pub mod sandbox;
pub mod sop;
