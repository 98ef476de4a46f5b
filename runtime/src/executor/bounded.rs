//! Reading a tool's output stream to its end while keeping at most a bound of it: shared by the
//! process executor, the sandbox backend and the `mcp-stdio` transport. The reading itself is
//! `escepine_sandbox::io`'s (the backend's too); the runtime's [`Scrubber`] scrubs stderr.

use tokio::io::AsyncRead;

pub(crate) use escepine_sandbox::io::{read_bounded, Bounded};

use crate::scrub::Scrubber;

/// A stderr stream read to its end and kept to `limit` bytes, scrubbed by `scrubber` before it
/// is cut ([`escepine_sandbox::io::read_stderr`]).
pub async fn read_stderr<R: AsyncRead + Unpin>(r: R, limit: usize, scrubber: &Scrubber) -> String {
    escepine_sandbox::io::read_stderr(r, limit, Some(scrubber)).await
}

/// Most bytes of a stderr tail quoted in a failure message ([`with_stderr_tail`]).
pub const STDERR_TAIL_BYTES: usize = 400;

/// Most lines of a stderr tail quoted in a failure message.
const STDERR_TAIL_LINES: usize = 3;

/// `message` with the end of `stderr` (already scrubbed and bounded by [`read_stderr`]) quoted,
/// for a process that ended before answering: its last non-empty lines (at most
/// `STDERR_TAIL_LINES` (3), at most [`STDERR_TAIL_BYTES`]), where an interpreter says why it
/// stopped (`ModuleNotFoundError: No module named 'mcp'`). The whole stderr stays in the
/// attempt's evidence; the note of what was not kept and the sandbox's egress refusals are not
/// quoted.
pub fn with_stderr_tail(mut message: String, stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim_end)
        .filter(|l| {
            !l.trim().is_empty()
                && !l.starts_with("[stderr truncated:")
                && !l.starts_with("[egress ")
        })
        .collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0;
    for line in lines.iter().rev().take(STDERR_TAIL_LINES) {
        if bytes + line.len() > STDERR_TAIL_BYTES && !kept.is_empty() {
            break;
        }
        bytes += line.len();
        kept.push(line);
    }
    if kept.is_empty() {
        return message;
    }
    kept.reverse();
    let mut tail = kept.join(" | ");
    if tail.len() > STDERR_TAIL_BYTES {
        let mut from = tail.len() - STDERR_TAIL_BYTES;
        while !tail.is_char_boundary(from) {
            from += 1;
        }
        tail = format!("…{}", &tail[from..]);
    }
    message.push_str(&format!("; its stderr ends: {tail}"));
    message
}

#[cfg(test)]
mod tail_tests {
    use super::with_stderr_tail;

    #[test]
    fn the_last_lines_are_quoted_and_bounded() {
        let stderr = "Traceback (most recent call last):\n  File \"s.py\", line 1\n    import mcp\n\
                      ModuleNotFoundError: No module named 'mcp'\n\n[stderr truncated: 9 more bytes not kept]";
        let m = with_stderr_tail("it exited with status 1".into(), stderr);
        assert_eq!(
            m,
            "it exited with status 1; its stderr ends:   File \"s.py\", line 1 |     import mcp | \
             ModuleNotFoundError: No module named 'mcp'"
        );
        assert_eq!(with_stderr_tail("m".into(), "\n \n"), "m");
        let long = "é".repeat(1000);
        let m = with_stderr_tail("m".into(), &long);
        assert!(m.len() < 420 + 30, "{}", m.len());
        assert!(m.ends_with('é'));
    }
}
