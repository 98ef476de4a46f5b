//! Reading a tool's output stream to its end while keeping at most a bound of it: shared by the
//! process executor, the sandbox backend and the `mcp-stdio` transport.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::scrub::Scrubber;

/// A stream read to its end, of which at most a bound was kept.
#[derive(Debug, Default)]
pub(crate) struct Bounded {
    /// The bytes kept.
    pub(crate) kept: Vec<u8>,
    /// Bytes read beyond the bound and thrown away.
    pub(crate) dropped: u64,
}

/// Reads `r` to its end, keeping at most `limit` bytes. With `drain` the rest is read and
/// counted (stderr: the tool never blocks on it); without, reading stops at the first byte
/// beyond the bound (stdout: the attempt has failed anyway).
pub(crate) async fn read_bounded<R: AsyncRead + Unpin>(
    mut r: R,
    limit: usize,
    drain: bool,
) -> io::Result<Bounded> {
    let mut out = Bounded::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            return Ok(out);
        }
        let room = limit.saturating_sub(out.kept.len());
        let keep = n.min(room);
        out.kept.extend_from_slice(&buf[..keep]);
        out.dropped += (n - keep) as u64;
        if out.dropped > 0 && !drain {
            return Ok(out);
        }
    }
}

/// A stderr stream read to its end and kept to `limit` bytes, scrubbed before it is cut: the
/// stream is read to `limit` plus the scrubber's [margin](Scrubber::margin), scrubbed, and then
/// cut ([`Scrubber::text_within`]), so that a secret straddling the bound is replaced whole
/// rather than half kept. Invalid UTF-8 is replaced; what was not kept is noted. An unreadable
/// stream becomes a note.
pub(crate) async fn read_stderr<R: AsyncRead + Unpin>(
    r: R,
    limit: usize,
    scrubber: &Scrubber,
) -> String {
    match read_bounded(r, limit.saturating_add(scrubber.margin()), true).await {
        Ok(b) => {
            let text = String::from_utf8_lossy(&b.kept);
            let within = scrubber.text_within(&text, limit);
            let mut text = within.text;
            let dropped = b.dropped + within.dropped as u64;
            if dropped > 0 {
                text.push_str(&format!(
                    "\n[stderr truncated: {dropped} more bytes not kept]"
                ));
            }
            text
        }
        Err(e) => format!("[stderr unreadable: {e}]"),
    }
}

/// Most bytes of a stderr tail quoted in a failure message ([`with_stderr_tail`]).
pub(crate) const STDERR_TAIL_BYTES: usize = 400;

/// Most lines of a stderr tail quoted in a failure message.
const STDERR_TAIL_LINES: usize = 3;

/// `message` with the end of `stderr` (already scrubbed and bounded by [`read_stderr`]) quoted,
/// for a process that ended before answering: its last non-empty lines (at most
/// [`STDERR_TAIL_LINES`], at most [`STDERR_TAIL_BYTES`]), where an interpreter says why it
/// stopped (`ModuleNotFoundError: No module named 'mcp'`). The whole stderr stays in the
/// attempt's evidence; the note of what was not kept and the sandbox's egress refusals are not
/// quoted.
pub(crate) fn with_stderr_tail(mut message: String, stderr: &str) -> String {
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
