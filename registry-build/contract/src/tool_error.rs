//! How a tool implementation reports a failure, and what a `stdio-json` tool process reads
//! from its environment.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The outcome a tool implementation reports when it fails.
///
/// A transient failure may be retried within the tool's retry budget (on the `stdio-json`
/// transport it is exit status 75, `EX_TEMPFAIL`); a permanent one never is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    /// Whether a retry may succeed.
    pub transient: bool,
    /// What went wrong, for the evidence record.
    pub message: String,
}

impl ToolError {
    /// A failure a retry may cure (a timeout of a remote service, a 503).
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            transient: true,
            message: message.into(),
        }
    }

    /// A failure no retry will cure.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self {
            transient: false,
            message: message.into(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.transient {
            "transient"
        } else {
            "permanent"
        };
        write!(f, "{kind} tool failure: {}", self.message)
    }
}

impl std::error::Error for ToolError {}

/// Exit status of a `stdio-json` tool process that failed transiently (`EX_TEMPFAIL`).
pub const EXIT_TRANSIENT: i32 = 75;
/// Environment variable carrying the call id into a tool process.
pub const ENV_CALL_ID: &str = "ESCEPINE_CALL_ID";
/// Environment variable carrying the idempotency key (the same across a call's attempts).
pub const ENV_IDEMPOTENCY_KEY: &str = "ESCEPINE_IDEMPOTENCY_KEY";
