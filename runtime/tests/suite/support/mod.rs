//! Helpers the test modules share that need the runtime (those that do not live in
//! `escepine_testkit`).

pub mod authorize;
pub mod fixtures;
pub mod host;
pub mod logs;
pub mod pin;
#[cfg(feature = "mcp-http")]
pub mod remote;
pub mod sandbox;
