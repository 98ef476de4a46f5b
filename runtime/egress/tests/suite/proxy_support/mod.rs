//! Shared helpers of the egress proxy tests: proxies on temporary sockets, an injected resolver,
//! loopback servers (127.0.0.1 only) and a minimal HTTP client speaking to the Unix socket.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use escepine_contract::EgressEntry;
use escepine_egress::BoxFuture;
use escepine_egress::{EgressProxy, ProxyHandle, Resolver};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio::sync::mpsc;

/// A resolver answering from a map and recording every name it is asked for.
#[derive(Clone, Default)]
pub struct MapResolver {
    map: Arc<Mutex<HashMap<String, Vec<IpAddr>>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl MapResolver {
    pub fn with(pairs: &[(&str, &[&str])]) -> Self {
        let r = Self::default();
        for (name, ips) in pairs {
            let ips = ips
                .iter()
                .map(|ip| ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}")))
                .collect();
            r.map
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((*name).to_string(), ips);
        }
        r
    }

    /// The names asked so far.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Resolver for MapResolver {
    fn resolve(&self, host: &str, port: u16) -> BoxFuture<'_, io::Result<Vec<SocketAddr>>> {
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(host.to_string());
        let answer = self
            .map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(host)
            .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"));
        Box::pin(async move { answer })
    }
}

pub fn entries(list: &[String]) -> Vec<EgressEntry> {
    list.iter()
        .map(|s| s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
        .collect()
}

/// A proxy on a socket in its own temporary directory.
pub struct Proxy {
    pub handle: ProxyHandle,
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Proxy {
    /// A proxy started elsewhere, on `path` in `dir`.
    pub fn new(handle: ProxyHandle, path: PathBuf, dir: tempfile::TempDir) -> Self {
        assert_eq!(handle.socket_path(), path);
        Self {
            handle,
            path,
            _dir: dir,
        }
    }
}

pub async fn proxy(list: &[String], resolver: MapResolver) -> Proxy {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let path = dir.path().join("egress.sock");
    let handle = EgressProxy::start(&path, entries(list), Arc::new(resolver))
        .await
        .unwrap_or_else(|e| panic!("start: {e}"));
    assert_eq!(handle.socket_path(), path);
    Proxy {
        handle,
        path,
        _dir: dir,
    }
}

/// Read up to the end of a response head (byte by byte: nothing after it is consumed).
pub async fn read_head<R: AsyncRead + Unpin>(r: &mut R) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match tokio::time::timeout(Duration::from_secs(20), r.read(&mut byte)).await {
            Ok(Ok(1)) => head.push(byte[0]),
            Ok(_) => break,
            Err(_) => panic!(
                "no response head within 20 s: {:?}",
                String::from_utf8_lossy(&head)
            ),
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Send `request` to the proxy; the response head and the open stream.
pub async fn send(path: &Path, request: &[u8]) -> (String, UnixStream) {
    let mut s = UnixStream::connect(path)
        .await
        .unwrap_or_else(|e| panic!("connect to the proxy: {e}"));
    s.write_all(request)
        .await
        .unwrap_or_else(|e| panic!("write: {e}"));
    let head = read_head(&mut s).await;
    (head, s)
}

/// Send `request` and read the whole response (until the proxy or server closes).
pub async fn roundtrip(path: &Path, request: &[u8]) -> (String, Vec<u8>) {
    let (head, mut s) = send(path, request).await;
    let mut body = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut body))
        .await
        .unwrap_or_else(|_| panic!("response body not complete within 20 s"))
        .unwrap_or_else(|e| panic!("read: {e}"));
    (head, body)
}

pub fn status(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a response: {head:?}"))
}

/// A loopback port that must see no connection.
pub struct Silent {
    listener: TcpListener,
    pub port: u16,
}

pub async fn silent() -> Silent {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    Silent { listener, port }
}

impl Silent {
    /// Nothing connected (the refusals under test precede any connection, so a short wait after
    /// the answer suffices).
    pub async fn assert_untouched(&self) {
        let got = tokio::time::timeout(Duration::from_millis(300), self.listener.accept()).await;
        assert!(got.is_err(), "the listener saw a connection: {got:?}");
    }
}

/// What the test HTTP server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub head: String,
    pub body: Vec<u8>,
}

/// An HTTP/1.1 server on 127.0.0.1: reads one request per connection (with a `Content-Length`
/// or chunked body), reports it, and answers `200` with the body echoed and `Connection: close`.
pub async fn http_server() -> (u16, mpsc::UnboundedReceiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                if let Ok(got) = serve_one(stream).await {
                    let _ = tx.send(got);
                }
            });
        }
    });
    (port, rx)
}

async fn serve_one(mut s: TcpStream) -> io::Result<Received> {
    let head = read_head(&mut s).await;
    let lower = head.to_ascii_lowercase();
    let header = |name: &str| {
        lower.lines().find_map(|l| {
            l.strip_prefix(&format!("{name}:"))
                .map(|v| v.trim().to_string())
        })
    };
    if header("expect").as_deref() == Some("100-continue") {
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let mut body = Vec::new();
    if header("transfer-encoding").as_deref() == Some("chunked") {
        loop {
            let line = read_line(&mut s).await?;
            let size = usize::from_str_radix(line.trim(), 16)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if size == 0 {
                read_line(&mut s).await?;
                break;
            }
            let mut chunk = vec![0u8; size];
            s.read_exact(&mut chunk).await?;
            body.extend_from_slice(&chunk);
            read_line(&mut s).await?;
        }
    } else if let Some(n) = header("content-length") {
        let n: usize = n
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        body.resize(n, 0);
        s.read_exact(&mut body).await?;
    }
    let mut answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Seen-Bytes: {}\r\nConnection: close\r\n\r\n",
        body.len(),
        body.len()
    )
    .into_bytes();
    answer.extend_from_slice(&body);
    s.write_all(&answer).await?;
    s.shutdown().await?;
    Ok(Received { head, body })
}

async fn read_line(s: &mut TcpStream) -> io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        s.read_exact(&mut byte).await?;
        line.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// A TCP server on 127.0.0.1 that greets each connection with `hello\n` and then echoes.
pub async fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                if s.write_all(b"hello\n").await.is_err() {
                    return;
                }
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
                let _ = w.shutdown().await;
            });
        }
    });
    port
}

/// A relay from a TCP port on 127.0.0.1 to the proxy's Unix socket (what the sandbox runs on
/// its loopback), so that ordinary proxy clients such as curl can be pointed at it.
pub async fn tcp_relay(socket: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let socket = socket.clone();
            tokio::spawn(async move {
                if let Ok(mut unix) = UnixStream::connect(&socket).await {
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                }
            });
        }
    });
    port
}
