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
