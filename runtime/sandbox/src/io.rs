//! Reading a tool's output streams while keeping at most a bound of them, and copying a file
//! while hashing it: shared by the Linux backend and the runtime's process executor and
//! `mcp-stdio` transport.

use std::fmt;
use std::io::{Read, Write};

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt};

/// What removes secrets from a stream's text before it is cut to its bound (the runtime's
/// scrubber).
pub trait Scrub: Send + Sync + fmt::Debug {
    /// How many bytes beyond the bound must be read so that a secret straddling it can be
    /// replaced whole.
    fn margin(&self) -> usize;

    /// `text` with every secret replaced, cut to at most `limit` bytes; with the number of
    /// bytes of `text` not represented in what is kept.
    fn scrub_within(&self, text: &str, limit: usize) -> (String, usize);
}

/// A stream read to its end, of which at most a bound was kept.
#[derive(Debug, Default)]
pub struct Bounded {
    /// The bytes kept.
    pub kept: Vec<u8>,
    /// Bytes read beyond the bound and thrown away.
    pub dropped: u64,
}

/// The most read from a stream at once.
const READ_CHUNK: usize = 32 * 1024;

/// Reads `r` to its end, keeping at most `limit` bytes. With `drain` the rest is read and
/// counted (stderr: the tool never blocks on it); without, reading stops at the first byte
/// beyond the bound (stdout: the attempt has failed anyway).
///
/// # Errors
/// A read error.
pub async fn read_bounded<R: AsyncRead + Unpin>(
    mut r: R,
    limit: usize,
    drain: bool,
) -> std::io::Result<Bounded> {
    let mut out = Bounded::default();
    // Read into spare capacity (never zeroed), and under 64 KiB, whose free would have the
    // allocator consolidate its heap: both were a few µs of every call's end.
    let mut buf = Vec::with_capacity(READ_CHUNK);
    loop {
        buf.clear();
        let n = r.read_buf(&mut buf).await?;
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
/// stream is read to `limit` plus the scrubber's [margin](Scrub::margin), scrubbed, and then
/// cut ([`Scrub::scrub_within`]), so that a secret straddling the bound is replaced whole
/// rather than half kept. Invalid UTF-8 is replaced; what was not kept is noted. An unreadable
/// stream becomes a note. Without a scrubber the text is only cut.
pub async fn read_stderr<R: AsyncRead + Unpin>(
    r: R,
    limit: usize,
    scrubber: Option<&dyn Scrub>,
) -> String {
    let margin = scrubber.map_or(0, Scrub::margin);
    match read_bounded(r, limit.saturating_add(margin), true).await {
        Ok(b) => {
            let text = String::from_utf8_lossy(&b.kept);
            let (mut text, cut) = match scrubber {
                Some(s) => s.scrub_within(&text, limit),
                None => cut_within(&text, limit),
            };
            let dropped = b.dropped + cut as u64;
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

/// `text` cut to at most `limit` bytes at a character boundary, and the bytes cut.
fn cut_within(text: &str, limit: usize) -> (String, usize) {
    if text.len() <= limit {
        return (text.to_string(), 0);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_string(), text.len() - end)
}

/// Reads all of `src` into `dst`, returning the lower-case hex SHA-256 digest of what was
/// copied.
///
/// # Errors
/// A read or write error.
pub fn copy_hashing(src: &mut impl Read, dst: &mut impl Write) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        dst.write_all(&buf[..n])?;
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_without_a_scrubber_is_cut_and_noted() {
        let text = read_stderr(&b"0123456789"[..], 4, None).await;
        assert_eq!(text, "0123\n[stderr truncated: 6 more bytes not kept]");
        assert_eq!(read_stderr(&b"ok"[..], 4, None).await, "ok");
    }

    #[test]
    fn cut_keeps_characters_whole() {
        assert_eq!(cut_within("aé", 2), ("a".to_string(), 2));
    }

    /// A stream written in pieces of odd sizes through a pipe-like duplex, several times the
    /// read chunk: every byte up to the bound is kept, in order, and the rest counted.
    #[tokio::test]
    async fn a_stream_longer_than_the_read_chunk_is_kept_to_its_bound_and_the_rest_counted() {
        use tokio::io::AsyncWriteExt;
        let total = 3 * READ_CHUNK + 12_345;
        let bytes: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
        for (limit, drain) in [(total, true), (READ_CHUNK + 7, true), (total + 1, false)] {
            let (mut w, r) = tokio::io::duplex(4096);
            let sent = bytes.clone();
            let writer = tokio::spawn(async move {
                for piece in sent.chunks(9_999) {
                    w.write_all(piece).await.expect("the reader reads");
                }
            });
            let got = read_bounded(r, limit, drain).await.expect("read");
            writer.await.expect("the writer ends");
            let kept = limit.min(total);
            assert_eq!(got.kept, bytes[..kept], "limit {limit}");
            assert_eq!(got.dropped, (total - kept) as u64, "limit {limit}");
        }
    }

    #[tokio::test]
    async fn stdout_stops_at_the_first_byte_beyond_the_bound() {
        let b = read_bounded(&b"abcdef"[..], 3, false).await.unwrap();
        assert_eq!(b.kept, b"abc");
        assert!(b.dropped > 0);
    }
}
