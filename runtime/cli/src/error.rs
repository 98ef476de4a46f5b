//! [`CliError`]: how a command ended when it did not succeed — its exit status and what is left
//! to print on standard error (printed once, by [`crate::run`]).

use std::fmt;
use std::io::Write;

/// A command's result: `Ok` is exit status 0.
pub type CliResult = Result<(), CliError>;

/// A command that did not succeed: its exit status ([`crate::exit`]) and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    code: i32,
    report: Report,
}

/// What is left to print for a [`CliError`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Report {
    /// One message, printed as `error: <message>`.
    Message(String),
    /// Text printed as it is (rendered diagnostics, several `error:` lines).
    Text(String),
    /// Nothing: the command has printed its own report (an SOP run's end, say).
    Printed,
}

impl CliError {
    /// Exit status `code`, printing `error: <message>`.
    pub fn new(code: i32, message: impl fmt::Display) -> Self {
        Self {
            code,
            report: Report::Message(message.to_string()),
        }
    }

    /// Exit status `code`, printing `text` as it is (rendered diagnostics).
    pub fn text(code: i32, text: impl Into<String>) -> Self {
        Self {
            code,
            report: Report::Text(text.into()),
        }
    }

    /// Exit status `code`, with nothing more to print.
    pub fn code(code: i32) -> Self {
        Self {
            code,
            report: Report::Printed,
        }
    }

    /// The process exit status.
    pub fn exit_code(&self) -> i32 {
        self.code
    }

    /// Write what is left to print to `err`.
    pub(crate) fn print(&self, err: &mut dyn Write) {
        let _ = match &self.report {
            Report::Message(m) => writeln!(err, "error: {m}"),
            Report::Text(t) => write!(err, "{t}"),
            Report::Printed => Ok(()),
        };
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.report {
            Report::Message(m) => write!(f, "{m} (exit status {})", self.code),
            Report::Text(t) => write!(f, "{} (exit status {})", t.trim_end(), self.code),
            Report::Printed => write!(f, "exit status {}", self.code),
        }
    }
}

impl std::error::Error for CliError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(e: &CliError) -> String {
        let mut buf = Vec::new();
        e.print(&mut buf);
        String::from_utf8(buf).expect("utf-8")
    }

    #[test]
    fn each_report_prints_as_the_commands_always_did() {
        assert_eq!(printed(&CliError::new(3, "no")), "error: no\n");
        assert_eq!(printed(&CliError::text(1, "a\nb\n")), "a\nb\n");
        assert_eq!(printed(&CliError::code(10)), "");
        assert_eq!(CliError::new(4, "x").exit_code(), 4);
    }
}
