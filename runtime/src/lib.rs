//! The runtime of Escepine: the governed call path and the `escepine` command-line tool.
//!
//! So far this crate holds the command-line front end over the registry rules
//! (`escepine check`, `escepine cedar-schema`); the call path, sandbox, ledger and SOP engine
//! build on the same loaded [`registry_build::Registry`].

#![deny(missing_docs)]

pub mod cli;
pub mod gate;
pub mod overlay;
pub mod scrub;
pub mod secrets;
