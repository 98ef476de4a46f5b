//! The hostile-tool suite (`hostile/suite.rs`, the same scenarios as `sandbox_hostile.rs`) with
//! the tool on an image root: its records name an OCI image holding the same binary and its
//! libraries, verified and unpacked by the image store, instead of the host binary.

#[path = "pin_support/mod.rs"]
mod pin_support;
mod sandbox_support;

include!("hostile/suite.rs");
