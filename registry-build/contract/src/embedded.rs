//! A registry compiled into the program: the very texts its build checked.
//!
//! `registry-build`'s generator writes `REGISTRY`, an [`EmbeddedRegistry`] whose files are
//! embedded with `include_str!`, so a program needs no records directory at run time;
//! `escepine_policy::embedded::load(&REGISTRY)` turns it back into the registry the runtime
//! builds from.

/// One input file of the build: its path then (diagnostics name it) and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedFile {
    /// The absolute path the build read.
    pub path: &'static str,
    /// The text the build checked.
    pub text: &'static str,
}

/// Every input of the build that generated this code, checked by every registration rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedRegistry {
    /// The record files.
    pub records: &'static [EmbeddedFile],
    /// The policy files (`*.cedar`) and the Cedar schemas (`*.cedarschema`) beside them.
    pub policies: &'static [EmbeddedFile],
    /// The deployment envelope, when the build had one.
    pub envelope: Option<EmbeddedFile>,
    /// The SOP files.
    pub sops: &'static [EmbeddedFile],
    /// The workspace binaries the records' endpoints name, as the build resolved them.
    pub workspace_bins: &'static [&'static str],
    /// The tool hosts linked into the program, which serves their calls from its own binary
    /// (see [`crate::linked`]).
    pub linked_hosts: &'static [&'static str],
}
