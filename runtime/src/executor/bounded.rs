//! Reading a tool's output stream to its end while keeping at most a bound of it: shared by the
//! process executor, the sandbox backend and the `mcp-stdio` transport.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// A stream read to its end, of which at most a bound was kept.
#[derive(Debug, Default)]
pub(crate) struct Bounded {
    /// The bytes kept.
    pub(crate) kept: Vec<u8>,
    /// Bytes read beyond the bound and thrown away.
    pub(crate) dropped: u64,
}

impl Bounded {
    /// The kept bytes as text (invalid UTF-8 replaced), with a note if some were dropped.
    pub(crate) fn into_text(self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!(
                "\n[stderr truncated: {} more bytes not kept]",
                self.dropped
            ));
        }
        text
    }
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

/// [`read_bounded`] of a stderr stream, drained, as text ([`Bounded::into_text`]); an
/// unreadable stream becomes a note.
pub(crate) async fn read_stderr<R: AsyncRead + Unpin>(r: R, limit: usize) -> String {
    match read_bounded(r, limit, true).await {
        Ok(b) => b.into_text(),
        Err(e) => format!("[stderr unreadable: {e}]"),
    }
}
