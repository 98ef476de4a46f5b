//! Plain HTTP forwarding: an absolute-form request (`GET http://host:port/path HTTP/1.1`)
//! becomes an origin-form request to the vetted address of `host`.
//!
//! The rewritten head carries `Host` from the request target (a client's own `Host` is dropped,
//! RFC 9112 §3.2.2), no `Proxy-*` or hop-by-hop fields, and `Connection: close`. The body is not
//! parsed: after the head, the proxy splices the rest of the client stream to the server
//! unchanged, so `Content-Length` and chunked bodies (and `Expect: 100-continue`) pass as sent,
//! one request per connection.

use super::addr_policy::{parse_authority, Target, TargetError};
use super::head::RequestHead;

/// Why a target is not one the proxy forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ForwardError {
    /// Not an `http://` URI (origin-form, `*`, or another scheme).
    #[error("the proxy forwards only absolute `http://` request targets (use CONNECT for others)")]
    NotHttp,
    /// The URI carries user information.
    #[error("the request target carries user information")]
    Userinfo,
    /// The authority is not a valid target.
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// A request target to forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Forward {
    /// Where to.
    pub(crate) target: Target,
    /// The path and query, as the client wrote them (never empty; the fragment dropped).
    pub(crate) origin_form: String,
}

/// Parse an absolute-form `http://` request target.
pub(crate) fn parse_absolute(target: &str) -> Result<Forward, ForwardError> {
    const SCHEME: &str = "http://";
    let rest = match target.get(..SCHEME.len()) {
        Some(s) if s.eq_ignore_ascii_case(SCHEME) => &target[SCHEME.len()..],
        _ => return Err(ForwardError::NotHttp),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(ForwardError::Userinfo);
    }
    if authority.contains('\\') {
        return Err(ForwardError::Target(TargetError::BadHost));
    }
    let target = parse_authority(authority, Some(80))?;
    let tail = tail.split('#').next().unwrap_or_default();
    let origin_form = if tail.starts_with('/') {
        tail.to_string()
    } else {
        format!("/{tail}")
    };
    Ok(Forward {
        target,
        origin_form,
    })
}

/// Header fields never passed on (besides `Proxy-*` and those `Connection` names).
const HOP_BY_HOP: &[&str] = &["host", "connection", "keep-alive", "upgrade"];
/// Framing fields passed on even when `Connection` names them: the body is spliced as sent.
const FRAMING: &[&str] = &["content-length", "transfer-encoding"];

/// The head to send to the server.
pub(crate) fn rewrite(head: &RequestHead, fwd: &Forward) -> Vec<u8> {
    let named: Vec<String> = head
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, v)| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .filter(|t| !FRAMING.contains(&t.as_str()))
        .collect();
    let host = if fwd.target.port == 80 {
        fwd.target.host.to_string()
    } else {
        fwd.target.to_string()
    };
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(
        format!(
            "{} {} HTTP/1.{}\r\nHost: {host}\r\n",
            head.method, fwd.origin_form, head.minor
        )
        .as_bytes(),
    );
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str())
            || lower.starts_with("proxy-")
            || named.contains(&lower)
        {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::head::parse_head;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn absolute_targets() {
        let f =
            parse_absolute("http://Example.COM./a/b?c=d#frag").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.target.to_string(), "example.com:80");
        assert_eq!(f.origin_form, "/a/b?c=d");
        let f = parse_absolute("HTTP://127.0.0.1:8080").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (f.target.to_string(), f.origin_form),
            ("127.0.0.1:8080".into(), "/".into())
        );
        let f = parse_absolute("http://[::1]:81?x").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (f.target.to_string(), f.origin_form),
            ("[::1]:81".into(), "/?x".into())
        );
        // The path is passed as written, not normalised.
        let f = parse_absolute("http://a.test/x/../%2e%2e/y").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.origin_form, "/x/../%2e%2e/y");

        for (bad, why) in [
            ("/path", ForwardError::NotHttp),
            ("*", ForwardError::NotHttp),
            ("https://a.test/", ForwardError::NotHttp),
            ("ftp://a.test/", ForwardError::NotHttp),
            ("http:/a.test/", ForwardError::NotHttp),
            ("http://user:pw@a.test/", ForwardError::Userinfo),
            ("http://a.test\\@evil.test/", ForwardError::Userinfo),
            (
                "http://a.test\\evil/",
                ForwardError::Target(TargetError::BadHost),
            ),
            ("http:///x", ForwardError::Target(TargetError::NoHost)),
            (
                "http://a.test:0/",
                ForwardError::Target(TargetError::BadPort),
            ),
        ] {
            assert_eq!(parse_absolute(bad), Err(why), "{bad}");
        }
    }

    #[test]
    fn rewrites_to_origin_form() {
        let head = parse_head(
            b"POST http://api.test:8080/v1?q=1 HTTP/1.1\r\n\
              Host: evil.test\r\n\
              Proxy-Authorization: Basic eA==\r\n\
              Proxy-Connection: keep-alive\r\n\
              Connection: keep-alive, X-Drop, Transfer-Encoding\r\n\
              Keep-Alive: timeout=5\r\n\
              X-Drop: 1\r\n\
              Transfer-Encoding: chunked\r\n\
              Accept: */*\r\n\r\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let fwd = parse_absolute(&head.target).unwrap_or_else(|e| panic!("{e}"));
        let out = String::from_utf8(rewrite(&head, &fwd)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            out,
            "POST /v1?q=1 HTTP/1.1\r\nHost: api.test:8080\r\nTransfer-Encoding: chunked\r\n\
             Accept: */*\r\nConnection: close\r\n\r\n"
        );
        let head =
            parse_head(b"GET http://a.test/ HTTP/1.0\r\n\r\n").unwrap_or_else(|e| panic!("{e}"));
        let fwd = parse_absolute(&head.target).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rewrite(&head, &fwd),
            b"GET / HTTP/1.0\r\nHost: a.test\r\nConnection: close\r\n\r\n"
        );
    }

    proptest! {
        #[test]
        fn arbitrary_targets_never_panic(t in "[hH][tT][tT][pP]:/{0,3}[ -~\\x80-\\u{10ffff}]{0,40}") {
            if let Ok(f) = parse_absolute(&t) {
                prop_assert!(f.origin_form.starts_with('/'));
            }
        }
    }
}
