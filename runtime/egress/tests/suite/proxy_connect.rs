//! CONNECT tunnels through the egress proxy to loopback servers the test starts; concurrency,
//! shutdown and the socket's life cycle.

use crate::proxy_support;

use std::time::Duration;

use escepine_egress::{EgressProxy, SystemResolver};
use proxy_support::{echo_server, proxy, send, status, MapResolver};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn read_exactly<R: AsyncReadExt + Unpin>(r: &mut R, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(Duration::from_secs(20), r.read_exact(&mut buf))
        .await
        .unwrap_or_else(|_| panic!("{n} bytes not received within 20 s"))
        .unwrap_or_else(|e| panic!("read: {e}"));
    buf
}

#[tokio::test]
async fn tunnel_carries_bytes_both_ways() {
    let port = echo_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    // Bytes sent right after the request head (before the 200) must reach the server too.
    let request =
        format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\nearly\n");
    let (head, mut s) = send(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 200, "{head}");
    // Server to client first (its greeting), then the echo of what the client sent.
    assert_eq!(read_exactly(&mut s, 12).await, b"hello\nearly\n");
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    let (mut r, mut w) = s.into_split();
    let sent = big.clone();
    let writer = tokio::spawn(async move {
        w.write_all(&sent).await.unwrap_or_else(|e| panic!("{e}"));
        w
    });
    assert_eq!(read_exactly(&mut r, big.len()).await, big);
    let _w = writer.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.handle.connect_attempts(), 1);
    assert!(p.handle.shutdown().await.is_empty());
}

#[tokio::test]
async fn ipv4_spellings_are_one_address() {
    let port = echo_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    for spelling in ["127.1", "2130706433", "0x7f.0.0.1", "127.0.0.1."] {
        let request = format!("CONNECT {spelling}:{port} HTTP/1.1\r\n\r\n");
        let (head, mut s) = send(&p.path, request.as_bytes()).await;
        assert_eq!(status(&head), 200, "{spelling}: {head}");
        assert_eq!(read_exactly(&mut s, 6).await, b"hello\n");
    }
    assert!(p.handle.shutdown().await.is_empty());
}

#[tokio::test]
async fn many_tunnels_at_once() {
    let port = echo_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    let mut tasks = Vec::new();
    for i in 0..64u32 {
        let path = p.path.clone();
        tasks.push(tokio::spawn(async move {
            let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
            let (head, mut s) = send(&path, request.as_bytes()).await;
            assert_eq!(status(&head), 200, "{head}");
            assert_eq!(read_exactly(&mut s, 6).await, b"hello\n");
            let msg = format!("tunnel {i}\n");
            s.write_all(msg.as_bytes())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(read_exactly(&mut s, msg.len()).await, msg.as_bytes());
        }));
    }
    for t in tasks {
        t.await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(p.handle.connect_attempts(), 64);
    p.handle.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_tunnels_and_removes_the_socket() {
    let port = echo_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
    let (head, mut tunnel) = send(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 200, "{head}");
    assert_eq!(read_exactly(&mut tunnel, 6).await, b"hello\n");
    // A client that never finishes its head, and one refused request on the record.
    let (idle, _) = tokio::join!(
        tokio::net::UnixStream::connect(&p.path),
        send(&p.path, b"CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n")
    );
    let mut idle = idle.unwrap_or_else(|e| panic!("{e}"));
    idle.write_all(b"GET http://127.0.0.1/ HT")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(Duration::from_millis(50)).await;

    let path = p.path.clone();
    assert!(path.exists());
    let refusals = tokio::time::timeout(Duration::from_secs(5), p.handle.shutdown())
        .await
        .unwrap_or_else(|_| panic!("shutdown did not complete"));
    assert_eq!(
        refusals,
        vec!["refused CONNECT 10.1.2.3:443: not in the profile".to_string()]
    );
    assert!(!path.exists(), "the socket file is left behind");

    // Both open connections are closed.
    for s in [&mut tunnel, &mut idle] {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
        assert!(
            matches!(read, Ok(Ok(_)) | Ok(Err(_))),
            "a connection outlived the shutdown"
        );
    }
    assert!(tokio::net::UnixStream::connect(&path).await.is_err());
}

#[tokio::test]
async fn dropping_the_handle_removes_the_socket() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("egress.sock");
    let handle = EgressProxy::start(&path, Vec::new(), Arc::new(SystemResolver))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(path.exists());
    drop(handle);
    assert!(!path.exists());
}

#[tokio::test]
async fn a_fresh_socket_path_is_required() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("egress.sock");
    std::fs::write(&path, b"someone else's").unwrap_or_else(|e| panic!("{e}"));
    let got = EgressProxy::start(&path, Vec::new(), Arc::new(SystemResolver)).await;
    assert!(got.is_err());
    assert_eq!(
        std::fs::read(&path).unwrap_or_else(|e| panic!("{e}")),
        b"someone else's"
    );
}

#[tokio::test]
async fn tunnel_after_a_refusal_on_another_connection() {
    // A refusal does not disturb the proxy: the next request on a new connection is served.
    let port = echo_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    let (head, _) = send(&p.path, b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n").await;
    assert_eq!(status(&head), 403, "{head}");
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
    let (head, mut s) = send(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 200, "{head}");
    assert_eq!(read_exactly(&mut s, 6).await, b"hello\n");
    p.handle.shutdown().await;
}
