//! How a `stdio-json` attempt that ran to its end is read, one way for the process executor and
//! the sandbox executor: exit 0 with exactly one JSON value on stdout is success; exit 75
//! (`EX_TEMPFAIL`) is a transient failure; any other status or a signal is a permanent one;
//! too much stdout is a protocol violation. A stdout that is not exactly one JSON value is
//! quoted in the error (its start, [`QUOTE_LIMIT`] bytes at most, the attempt's secrets
//! scrubbed before it is cut), so that the tool's author sees what it printed.

use escepine_contract::EXIT_TRANSIENT;
use escepine_sandbox::JobStatus;

use super::bounded::with_stderr_tail;
use super::seam::{ExecError, Execution};
use crate::scrub::Scrubber;

/// Most bytes of a malformed stdout quoted in the error.
pub const QUOTE_LIMIT: usize = 200;

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

/// The attempt's result for `tool`, whose stdout was bounded to `stdout_limit` bytes;
/// `scrubber` holds the attempt's secrets, for the quote of a malformed stdout.
///
/// # Errors
/// [`ExecError::Protocol`], [`ExecError::Transient`] or [`ExecError::Permanent`] as the module
/// documentation says.
pub fn stdio_json(
    tool: &str,
    end: Finished,
    stdout_limit: usize,
    scrubber: &Scrubber,
) -> Result<Execution, ExecError> {
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
                ExecError::Protocol(with_stderr_tail(
                    format!(
                        "the stdout of `{tool}` is not exactly one JSON value: {e}; it began {}",
                        quote(&stdout, scrubber)
                    ),
                    &stderr,
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

/// The start of `stdout` as the error quotes it: scrubbed, then cut to [`QUOTE_LIMIT`] bytes,
/// control characters escaped, in quotes (`[…]` when cut).
fn quote(stdout: &[u8], scrubber: &Scrubber) -> String {
    let text = String::from_utf8_lossy(stdout);
    let within = scrubber.text_within(text.trim_start(), QUOTE_LIMIT);
    let escaped: String = within.text.escape_debug().collect();
    let more = if within.dropped > 0 { " […]" } else { "" };
    format!("\"{escaped}\"{more}")
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
        let none = Scrubber::default();
        let ok = stdio_json("t", end(JobStatus::Exited(0), " {\"a\":1}\n"), 64, &none).expect("ok");
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
            let err = stdio_json("t", e, 64, &none).expect_err(want);
            assert!(err.to_string().contains(want), "{err} / {want}");
            let transient = matches!(err, ExecError::Transient { .. });
            assert_eq!(transient, want.contains("EX_TEMPFAIL"), "{err}");
        }
        let mut over = end(JobStatus::Exited(0), "{}");
        over.stdout_overflow = true;
        let err = stdio_json("t", over, 64, &none).expect_err("overflow");
        assert!(matches!(err, ExecError::Protocol(ref m) if m.contains("more than 64 bytes")));
    }

    #[test]
    fn a_failure_quotes_the_stderr_tail() {
        let none = Scrubber::default();
        let err = stdio_json("t", end(JobStatus::Exited(1), ""), 64, &none).expect_err("fails");
        assert!(err.to_string().contains("last words"), "{err}");
    }

    #[test]
    fn a_malformed_stdout_is_quoted_scrubbed_and_bounded() {
        let secret = "s3cr3t-token-value";
        let scrubber = Scrubber::new([secret]);
        let printed = format!("Loading model {secret}...\n{{\"words\": 3}}");
        let err = stdio_json("t", end(JobStatus::Exited(0), &printed), 1 << 20, &scrubber)
            .expect_err("not one JSON value");
        let text = err.to_string();
        assert!(text.contains("it began \"Loading model "), "{text}");
        assert!(text.contains("\\n{\\\"words"), "newlines escaped: {text}");
        assert!(!text.contains(secret), "{text}");
        // A long stdout is cut after scrubbing, a secret across the cut not half kept.
        let long = format!("{}{secret}{}", "x".repeat(QUOTE_LIMIT - 5), "y".repeat(500));
        let err = stdio_json("t", end(JobStatus::Exited(0), &long), 1 << 20, &scrubber)
            .expect_err("not JSON");
        let text = err.to_string();
        assert!(text.contains("[…]"), "{text}");
        assert!(!text.contains("s3cr"), "{text}");
        assert!(!text.contains(&"y".repeat(10)), "{text}");
    }
}
