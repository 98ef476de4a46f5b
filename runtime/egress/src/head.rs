//! Reading and parsing an HTTP/1.x request head, strictly and within bounds.
//!
//! The parser accepts only what a proxy client legitimately sends: a request line of three
//! space-separated parts, `HTTP/1.0` or `HTTP/1.1`, CRLF line endings, header names that are
//! tokens with no space before the colon, no obsolete line folding and no control bytes. Anything
//! else is a [`ParseError`] (answered with 400), never a panic.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// At most this many header fields.
pub(crate) const MAX_HEADERS: usize = 100;
/// At most this long a method.
const MAX_METHOD: usize = 32;

/// Why no request head could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeadError {
    /// The client closed the connection before sending anything.
    #[error("the connection closed before a request")]
    Closed,
    /// The client closed the connection in the middle of the head.
    #[error("the connection closed in the middle of the request head")]
    Truncated,
    /// The head exceeds the bound.
    #[error("request head larger than {0} bytes")]
    TooLarge(usize),
    /// Reading failed.
    #[error("reading the request failed: {0}")]
    Io(#[from] io::Error),
}

/// Read a request head of at most `max` bytes (terminator included).
///
/// Returns the head (through its final CRLF CRLF) and whatever the client already sent after it
/// (the start of a body, or of tunnelled bytes), which the caller must forward.
pub(crate) async fn read_head<R: AsyncRead + Unpin>(
    r: &mut R,
    max: usize,
) -> Result<(Vec<u8>, Vec<u8>), HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = r.read(&mut chunk).await?;
        if n == 0 {
            return Err(if buf.is_empty() {
                HeadError::Closed
            } else {
                HeadError::Truncated
            });
        }
        let searched = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = find_terminator(&buf[searched..]) {
            let end = searched + at + 4;
            if end > max {
                return Err(HeadError::TooLarge(max));
            }
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() >= max {
            return Err(HeadError::TooLarge(max));
        }
    }
}

fn find_terminator(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n")
}

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestHead {
    /// The method (a token).
    pub(crate) method: String,
    /// The request target as written (visible ASCII, or UTF-8 beyond it).
    pub(crate) target: String,
    /// The minor version: 0 or 1.
    pub(crate) minor: u8,
    /// Header fields in order: name as written, value trimmed.
    pub(crate) headers: Vec<(String, Vec<u8>)>,
}

/// Why a request head is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParseError {
    /// The head does not end in CRLF CRLF, or has a bare CR or LF.
    #[error("malformed line endings")]
    LineEndings,
    /// The request line is not `METHOD SP target SP HTTP/1.x`.
    #[error("malformed request line")]
    RequestLine,
    /// A version other than HTTP/1.0 or HTTP/1.1.
    #[error("unsupported HTTP version")]
    Version,
    /// A malformed header line.
    #[error("malformed header field")]
    Header,
    /// More than [`MAX_HEADERS`] header fields.
    #[error("too many header fields")]
    TooManyHeaders,
}

/// `tchar` of RFC 9110.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// Parse a head as returned by [`read_head`] (ending in CRLF CRLF).
pub(crate) fn parse_head(head: &[u8]) -> Result<RequestHead, ParseError> {
    let body = head
        .strip_suffix(b"\r\n\r\n")
        .ok_or(ParseError::LineEndings)?;
    // Every line but the last ends in CR (the LF was the separator); no other CR anywhere.
    let pieces: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let last = pieces.len().saturating_sub(1);
    let mut lines = Vec::with_capacity(pieces.len());
    for (i, piece) in pieces.into_iter().enumerate() {
        let line = if i == last {
            piece
        } else {
            piece.strip_suffix(b"\r").ok_or(ParseError::LineEndings)?
        };
        if line.contains(&b'\r') {
            return Err(ParseError::LineEndings);
        }
        lines.push(line);
    }
    let mut lines = lines.into_iter();
    let line = lines.next().ok_or(ParseError::LineEndings)?;
    // Visible ASCII and spaces; bytes above 0x7f only inside the target (checked below), so
    // that a client sending a raw UTF-8 (U-label) host can still be normalised.
    if !line
        .iter()
        .all(|&b| b == b' ' || b.is_ascii_graphic() || b >= 0x80)
    {
        return Err(ParseError::RequestLine);
    }
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ParseError::RequestLine);
    };
    if !is_token(method) || method.len() > MAX_METHOD || target.is_empty() {
        return Err(ParseError::RequestLine);
    }
    let target = std::str::from_utf8(target).map_err(|_| ParseError::RequestLine)?;
    let minor = match version {
        b"HTTP/1.1" => 1,
        b"HTTP/1.0" => 0,
        v if v.starts_with(b"HTTP/") => return Err(ParseError::Version),
        _ => return Err(ParseError::RequestLine),
    };
    let mut headers = Vec::new();
    for line in lines {
        if headers.len() == MAX_HEADERS {
            return Err(ParseError::TooManyHeaders);
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or(ParseError::Header)?;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        // A name that is not a token covers obsolete folding (a leading SP/HT) and a space before
        // the colon, both of which RFC 9112 has a server reject.
        if !is_token(name) {
            return Err(ParseError::Header);
        }
        let value = value.trim_ascii();
        if value.iter().any(|&b| b != b'\t' && (b < 0x20 || b == 0x7f)) {
            return Err(ParseError::Header);
        }
        headers.push((String::from_utf8_lossy(name).into_owned(), value.to_vec()));
    }
    Ok(RequestHead {
        method: String::from_utf8_lossy(method).into_owned(),
        target: target.to_string(),
        minor,
        headers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(s: &str) -> Result<RequestHead, ParseError> {
        parse_head(s.as_bytes())
    }

    #[test]
    fn parses_a_proxy_request() {
        let h = parse(
            "GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\nX-A:  v \r\nEmpty:\r\n\r\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(h.method, "GET");
        assert_eq!(h.target, "http://example.com/a?b");
        assert_eq!(h.minor, 1);
        assert_eq!(
            h.headers,
            vec![
                ("Host".to_string(), b"example.com".to_vec()),
                ("X-A".to_string(), b"v".to_vec()),
                ("Empty".to_string(), Vec::new()),
            ]
        );
        let c = parse("CONNECT example.com:443 HTTP/1.0\r\n\r\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((c.method.as_str(), c.minor), ("CONNECT", 0));
        let u =
            parse("CONNECT bücher.example:443 HTTP/1.1\r\n\r\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.target, "bücher.example:443");
        assert_eq!(
            parse_head(b"CONNECT \xff:443 HTTP/1.1\r\n\r\n"),
            Err(ParseError::RequestLine)
        );
    }

    #[test]
    fn rejects_malformed_heads() {
        for (bad, why) in [
            ("GET / HTTP/1.1\r\n", ParseError::LineEndings),
            ("\r\n\r\n", ParseError::RequestLine),
            ("GET / HTTP/1.1\nHost: a\r\n\r\n", ParseError::LineEndings),
            (
                "GET / HTTP/1.1\r\nHo\rst: a\r\n\r\n",
                ParseError::LineEndings,
            ),
            ("GET /  HTTP/1.1\r\n\r\n", ParseError::RequestLine),
            ("GET / HTTP/1.1 x\r\n\r\n", ParseError::RequestLine),
            ("GET\t/ HTTP/1.1\r\n\r\n", ParseError::RequestLine),
            ("G(T / HTTP/1.1\r\n\r\n", ParseError::RequestLine),
            ("GET / HTTP/2.0\r\n\r\n", ParseError::Version),
            ("GET / http/1.1\r\n\r\n", ParseError::RequestLine),
            ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", ParseError::Header),
            ("GET / HTTP/1.1\r\nA : b\r\n\r\n", ParseError::Header),
            ("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", ParseError::Header),
            ("GET / HTTP/1.1\r\n: b\r\n\r\n", ParseError::Header),
            ("GET / HTTP/1.1\r\nA: b\u{1}c\r\n\r\n", ParseError::Header),
            ("GÉT / HTTP/1.1\r\n\r\n", ParseError::RequestLine),
            ("GET / HTTP/1.1\u{e9}\r\n\r\n", ParseError::Version),
        ] {
            assert_eq!(parse(bad), Err(why), "{bad:?}");
        }
        let many: String = (0..=MAX_HEADERS).map(|i| format!("H{i}: v\r\n")).collect();
        assert_eq!(
            parse(&format!("GET / HTTP/1.1\r\n{many}\r\n")),
            Err(ParseError::TooManyHeaders)
        );
    }

    #[tokio::test]
    async fn reads_heads_within_bounds() {
        let mut input: &[u8] = b"CONNECT a:1 HTTP/1.1\r\n\r\nhello";
        let (head, rest) = read_head(&mut input, 1024)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(head, b"CONNECT a:1 HTTP/1.1\r\n\r\n");
        assert_eq!(rest, b"hello");

        let mut empty: &[u8] = b"";
        assert!(matches!(
            read_head(&mut empty, 1024).await,
            Err(HeadError::Closed)
        ));
        let mut partial: &[u8] = b"GET / HTTP/1.1\r\n";
        assert!(matches!(
            read_head(&mut partial, 1024).await,
            Err(HeadError::Truncated)
        ));
        let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(2000));
        let mut big_in = big.as_bytes();
        assert!(matches!(
            read_head(&mut big_in, 1024).await,
            Err(HeadError::TooLarge(1024))
        ));
        // A head that ends exactly at the bound fits.
        let exact = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(1024 - 23));
        assert_eq!(exact.len(), 1024);
        let mut exact_in = exact.as_bytes();
        assert!(read_head(&mut exact_in, 1024).await.is_ok());
        let over = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(1024 - 22));
        let mut over_in = over.as_bytes();
        assert!(matches!(
            read_head(&mut over_in, 1024).await,
            Err(HeadError::TooLarge(1024))
        ));
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut head = bytes.clone();
            head.extend_from_slice(b"\r\n\r\n");
            let _ = parse_head(&bytes);
            let _ = parse_head(&head);
        }

        #[test]
        fn near_valid_heads_never_panic(
            method in "[A-Z\\(\\x00-\\x20]{0,8}",
            target in "[ -~\\x80-\\xff]{0,40}",
            version in "HTTP/[0-9.]{0,4}|.{0,8}",
            headers in proptest::collection::vec("[ -~\\t\\r\\n]{0,30}", 0..6),
        ) {
            let head = format!("{method} {target} {version}\r\n{}\r\n\r\n", headers.join("\r\n"));
            let _ = parse_head(head.as_bytes());
        }
    }
}
