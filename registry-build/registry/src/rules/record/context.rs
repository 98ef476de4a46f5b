//! What the record rules are given (the envelope, the workspace's binaries, whether the record
//! is a draft) and what the per-record rules hand to the cross-record ones.

use crate::diagnostic::SourceFile;
use crate::endpoint::WorkspaceBins;
use crate::envelope::Envelope;
use crate::record::ToolRecord;

/// What the record rules need beyond the records themselves.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The deployment envelope; `None` skips the rules that compare with it (egress coverage,
    /// image sources, read-only prefixes).
    pub envelope: Option<&'a Envelope>,
    /// The workspace's declared binaries, for endpoint resolution.
    pub bins: &'a WorkspaceBins,
}

/// Whether the record is complete or a draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completeness {
    /// A record file: every rule applies.
    Full,
    /// A draft: see [`check_draft`](super::check_draft).
    Draft,
}

/// A record that passed the per-record rules, with where it came from.
pub(super) struct Checked {
    pub record: ToolRecord,
    pub src: SourceFile,
    /// Whether the record declares a compensation (checked against its inverse).
    pub has_compensation: bool,
}
