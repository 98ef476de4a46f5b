//! How a `stdio-json` attempt that ran to its end is read, one way for the process executor and
//! the sandbox executor: exit 0 with exactly one JSON value on stdout is success; exit 75
//! (`EX_TEMPFAIL`) is a transient failure; any other status or a signal is a permanent one;
//! too much stdout is a protocol violation.

use escepine_contract::EXIT_TRANSIENT;
use escepine_sandbox::JobStatus;

use super::bounded::with_stderr_tail;
use super::seam::{ExecError, Execution};

/// What a finished `stdio-json` tool produced.
#[derive(Debug)]
pub struct Finished {
    /// How it ended.
    pub status: JobStatus,
    /// Its stdout, as kept.
    pub stdout: Vec<u8>,
    /// Whether it wrote more than `stdout_limit` bytes on stdout.
    pub stdout_overflow: bool,
    /// Its stderr, bounded and scrubbed.
    pub stderr: String,
}

/// The attempt's result for `tool`, whose stdout was bounded to `stdout_limit` bytes.
///
/// # Errors
/// [`ExecError::Protocol`], [`ExecError::Transient`] or [`ExecError::Permanent`] as the module
/// documentation says.
pub fn stdio_json(tool: &str, end: Finished, stdout_limit: usize) -> Result<Execution, ExecError> {
    let Finished {
        status,
        stdout,
        stdout_overflow,
        stderr,
    } = end;
    if stdout_overflow {
        return Err(ExecError::Protocol(format!(
            "`{tool}` wrote more than {stdout_limit} bytes on stdout"
        )));
    }
    match status {
        JobStatus::Exited(0) => {
            if stdout.iter().all(u8::is_ascii_whitespace) {
                return Err(ExecError::Protocol(with_stderr_tail(
                    format!("`{tool}` exited 0 but wrote no output on stdout"),
                    &stderr,
                )));
            }
            // One JSON value, surrounding whitespace allowed; anything after it is an error.
            let output = serde_json::from_slice(&stdout).map_err(|e| {
                ExecError::Protocol(format!(
                    "the stdout of `{tool}` is not exactly one JSON value: {e}"
                ))
            })?;
            Ok(Execution { output, stderr })
        }
        JobStatus::Exited(EXIT_TRANSIENT) => Err(ExecError::Transient {
            message: with_stderr_tail(format!("`{tool}` {status} (EX_TEMPFAIL)"), &stderr),
            stderr,
        }),
        _ => Err(ExecError::Permanent {
            message: with_stderr_tail(format!("`{tool}` {status}"), &stderr),
            stderr,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(status: JobStatus, stdout: &str) -> Finished {
        Finished {
            status,
            stdout: stdout.as_bytes().to_vec(),
            stdout_overflow: false,
            stderr: "last words\n".into(),
        }
    }

    #[test]
    fn each_end_is_read_as_the_protocol_says() {
        let ok = stdio_json("t", end(JobStatus::Exited(0), " {\"a\":1}\n"), 64).expect("ok");
        assert_eq!(ok.output, serde_json::json!({"a": 1}));
        let cases = [
            (
                end(JobStatus::Exited(0), "  \n"),
                "exited 0 but wrote no output",
            ),
            (
                end(JobStatus::Exited(0), "{} {}"),
                "not exactly one JSON value",
            ),
            (
                end(JobStatus::Exited(75), ""),
                "exited with status 75 (EX_TEMPFAIL)",
            ),
            (end(JobStatus::Exited(3), ""), "exited with status 3"),
            (
                end(JobStatus::Signaled(libc::SIGSEGV), ""),
                "was killed by signal 11 (SIGSEGV)",
            ),
            (end(JobStatus::Signaled(64), ""), "was killed by signal 64"),
        ];
        for (e, want) in cases {
            let err = stdio_json("t", e, 64).expect_err(want);
            assert!(err.to_string().contains(want), "{err} / {want}");
            let transient = matches!(err, ExecError::Transient { .. });
            assert_eq!(transient, want.contains("EX_TEMPFAIL"), "{err}");
        }
        let mut over = end(JobStatus::Exited(0), "{}");
        over.stdout_overflow = true;
        let err = stdio_json("t", over, 64).expect_err("overflow");
        assert!(matches!(err, ExecError::Protocol(ref m) if m.contains("more than 64 bytes")));
    }

    #[test]
    fn a_failure_quotes_the_stderr_tail() {
        let err = stdio_json("t", end(JobStatus::Exited(1), ""), 64).expect_err("fails");
        assert!(err.to_string().contains("last words"), "{err}");
    }
}
