//! A hostile tool against the Linux sandbox, as root with real namespaces: every escape it tries
//! fails, each outcome asserted, and the host is checked clean after each scenario.

#[path = "pin_support/mod.rs"]
mod pin_support;
mod sandbox_support;

include!("hostile/suite.rs");
