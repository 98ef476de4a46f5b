//! [`Ended`]: how a call past its intent ended, what its outcome entry records.

use crate::report::CallOutcome;

/// A call past its intent that has ended: the outcome and what its entry records besides.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ended {
    /// How it ended.
    pub(crate) outcome: CallOutcome,
    /// SHA-256 of the canonical output, returned or rejected.
    pub(crate) output_hash: Option<String>,
    /// The error recorded (scrubbed).
    pub(crate) error: Option<String>,
}
