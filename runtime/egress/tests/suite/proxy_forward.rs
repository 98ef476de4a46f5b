//! The egress proxy forwarding plain HTTP (absolute-form requests) to loopback servers the test
//! starts, admitted by entries naming `127.0.0.1:<port>`.

use crate::proxy_support;

use std::time::Duration;

use proxy_support::{http_server, proxy, roundtrip, silent, status, MapResolver};

async fn received(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<proxy_support::Received>,
) -> proxy_support::Received {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("the server received no request"))
}

#[tokio::test]
async fn get_is_rewritten_to_origin_form() {
    let (port, mut rx) = http_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    let request = format!(
        "GET http://127.0.0.1:{port}/a/b?c=d#frag HTTP/1.1\r\n\
         Host: evil.example\r\n\
         Proxy-Authorization: Basic dXNlcjpwdw==\r\n\
         Proxy-Connection: keep-alive\r\n\
         Connection: keep-alive, X-Hop\r\n\
         X-Hop: 1\r\n\
         Accept: text/plain\r\n\
         User-Agent: test\r\n\r\n"
    );
    let (head, body) = roundtrip(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 200, "{head}");
    assert!(body.is_empty());

    let got = received(&mut rx).await;
    assert_eq!(
        got.head,
        format!(
            "GET /a/b?c=d HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/plain\r\n\
             User-Agent: test\r\nConnection: close\r\n\r\n"
        )
    );
    assert_eq!(p.handle.connect_attempts(), 1);
    assert!(p.handle.shutdown().await.is_empty());
}

#[tokio::test]
async fn post_with_content_length_body() {
    let (port, mut rx) = http_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    // A body larger than any read buffer, part of it in the same write as the head.
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut request = format!(
        "POST http://127.0.0.1:{port}/upload HTTP/1.1\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {}\r\n\r\n",
        payload.len()
    )
    .into_bytes();
    request.extend_from_slice(&payload);
    let (head, body) = roundtrip(&p.path, &request).await;
    assert_eq!(status(&head), 200, "{head}");
    assert!(
        head.contains(&format!("X-Seen-Bytes: {}", payload.len())),
        "{head}"
    );
    assert_eq!(body, payload, "the echoed body differs");
    let got = received(&mut rx).await;
    assert!(
        got.head.starts_with("POST /upload HTTP/1.1\r\n"),
        "{}",
        got.head
    );
    assert_eq!(got.body, payload);
    p.handle.shutdown().await;
}

#[tokio::test]
async fn post_with_chunked_body() {
    let (port, mut rx) = http_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    let request = format!(
        "POST http://127.0.0.1:{port}/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\
         Connection: Transfer-Encoding\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
    );
    let (head, body) = roundtrip(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 200, "{head}");
    assert_eq!(body, b"hello, world");
    let got = received(&mut rx).await;
    assert!(
        got.head.contains("\r\nTransfer-Encoding: chunked\r\n"),
        "framing must survive: {}",
        got.head
    );
    assert_eq!(got.body, b"hello, world");
    p.handle.shutdown().await;
}

#[tokio::test]
async fn expect_continue_passes_through() {
    let (port, mut rx) = http_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    let request = format!(
        "PUT http://127.0.0.1:{port}/x HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"
    );
    let (head, mut s) = proxy_support::send(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 100, "{head}");
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    s.write_all(b"abc").await.unwrap_or_else(|e| panic!("{e}"));
    let head = proxy_support::read_head(&mut s).await;
    assert_eq!(status(&head), 200, "{head}");
    let mut body = Vec::new();
    s.read_to_end(&mut body)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(body, b"abc");
    assert_eq!(received(&mut rx).await.body, b"abc");
    p.handle.shutdown().await;
}

#[tokio::test]
async fn refused_forward_is_recorded_and_never_connects() {
    let quiet = silent().await;
    let (allowed, _rx) = http_server().await;
    let p = proxy(&[format!("127.0.0.1:{allowed}")], MapResolver::default()).await;
    let request = format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n", quiet.port);
    let (head, body) = roundtrip(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 403, "{head}");
    let line = format!("refused GET 127.0.0.1:{}/: not in the profile", quiet.port);
    assert!(String::from_utf8_lossy(&body).contains(&line));
    quiet.assert_untouched().await;
    assert_eq!(p.handle.connect_attempts(), 0);
    assert_eq!(p.handle.shutdown().await, vec![line]);
}

#[tokio::test]
async fn only_absolute_http_targets_are_forwarded() {
    let (port, _rx) = http_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    for (request, line) in [
        (
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_string(),
            "refused GET request: the proxy forwards only absolute `http://` request targets \
             (use CONNECT for others)",
        ),
        (
            format!("GET https://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
            "refused GET request: the proxy forwards only absolute `http://` request targets \
             (use CONNECT for others)",
        ),
        (
            format!("GET http://user:pw@127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
            "refused GET request: the request target carries user information",
        ),
        (
            "GET http://127.0.0.1:0/ HTTP/1.1\r\n\r\n".to_string(),
            "refused GET request: the target port is not a number in 1-65535",
        ),
    ] {
        let (head, _) = roundtrip(&p.path, request.as_bytes()).await;
        assert_eq!(status(&head), 400, "{request}: {head}");
        assert_eq!(p.handle.refusals().last().map(String::as_str), Some(line));
    }
    assert_eq!(p.handle.connect_attempts(), 0);
    p.handle.shutdown().await;
}
