//! Why a tool call failed, and the exit status each reason maps to.

use escepine_contract::EXIT_TRANSIENT;

/// `EX_USAGE` (sysexits.h): the command line named no tool, or an unknown one.
pub const EXIT_USAGE: i32 = 64;
/// `EX_DATAERR`: the payload is not what the tool's input schema describes.
pub const EXIT_DATAERR: i32 = 65;
/// `EX_CONFIG`: a required configuration variable is missing or malformed.
pub const EXIT_CONFIG: i32 = 78;
/// Any other permanent failure (a 4xx answer, a malformed response, a refused target).
pub const EXIT_PERMANENT: i32 = 1;

/// Why a tool call failed. Every variant carries a one-line message for stderr; none ever holds
/// a secret value (messages name configuration variables, never their values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// A failure a retry may cure: a timeout, a reset or refused connection, HTTP 408, 425, 429
    /// or 5xx. Exit 75 (`EX_TEMPFAIL`), which the runtime retries within the record's budget.
    #[error("transient: {0}")]
    Transient(String),
    /// A failure no retry cures: a 4xx answer, a malformed response, a target the egress proxy
    /// refuses, content the tool cannot render. Exit 1.
    #[error("{0}")]
    Permanent(String),
    /// The payload does not decode into the tool's input type. Exit 65.
    #[error("invalid input: {0}")]
    Input(String),
    /// Configuration is missing or malformed (see [`crate::config`]). Exit 78.
    #[error("configuration: {0}")]
    Config(String),
    /// The command line is wrong. Exit 64.
    #[error("usage: {0}")]
    Usage(String),
}

impl ToolError {
    /// The process exit status for this failure (`stdio-json`: 75 is transient, anything else
    /// but 0 permanent).
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Transient(_) => EXIT_TRANSIENT,
            Self::Permanent(_) => EXIT_PERMANENT,
            Self::Input(_) => EXIT_DATAERR,
            Self::Config(_) => EXIT_CONFIG,
            Self::Usage(_) => EXIT_USAGE,
        }
    }

    /// Whether the runtime may retry the call.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }

    /// The same failure with `context` prepended to its message.
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        match self {
            Self::Transient(m) => Self::Transient(format!("{context}: {m}")),
            Self::Permanent(m) => Self::Permanent(format!("{context}: {m}")),
            Self::Input(m) => Self::Input(format!("{context}: {m}")),
            Self::Config(m) => Self::Config(format!("{context}: {m}")),
            Self::Usage(m) => Self::Usage(format!("{context}: {m}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_protocol() {
        assert_eq!(ToolError::Transient("x".into()).exit_code(), 75);
        assert_eq!(ToolError::Permanent("x".into()).exit_code(), 1);
        assert_eq!(ToolError::Input("x".into()).exit_code(), 65);
        assert_eq!(ToolError::Config("x".into()).exit_code(), 78);
        assert_eq!(ToolError::Usage("x".into()).exit_code(), 64);
        assert!(ToolError::Transient("x".into()).is_transient());
        assert_eq!(
            ToolError::Permanent("b".into()).context("a").to_string(),
            "a: b"
        );
    }
}
