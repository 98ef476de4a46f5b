//! The egress proxy: the only way out of a sandbox.
//!
//! A sandbox has no network of its own. Its tool reaches the outside through this host-side
//! proxy, which listens on a Unix socket that the sandbox's PID 1 reaches through a descriptor of
//! its directory (a relay on the sandbox's loopback, `127.0.0.1:3128`, forwards to it, so ordinary
//! `HTTP_PROXY`/`HTTPS_PROXY` clients work). One proxy serves one call: it admits only that
//! call's [`EgressGrant`] — its egress entries (profile plus overlay) and the origins its
//! authorization allowed (`authorized-urls`) — and records every refusal, which the executor
//! returns as the attempt's `egress_refusals`.
//!
//! # Protocol
//! - `CONNECT host:port` opens a tunnel (HTTPS and anything else); bytes sent right after the
//!   request head are forwarded too.
//! - An absolute-form request (`GET http://host:port/path HTTP/1.1`) is forwarded as an
//!   origin-form request: `Host` taken from the target, `Proxy-*` and hop-by-hop fields dropped,
//!   `Connection: close`; then the rest of the client stream (the body, `Content-Length` or
//!   chunked) is spliced to the server unchanged. One request per connection.
//! - Anything else (origin-form, `https://` targets, HTTP/2, malformed heads) is answered 400.
//!
//! # Admission
//! The target host is normalised (lower case, trailing dots removed, IDNA A-labels, IPv4 in any
//! spelling turned into its address) and admitted by some entry for its port
//! ([`EgressEntry::admits`](escepine_contract::EgressEntry::admits)); an IP literal only by an entry naming that very address. The proxy
//! resolves names itself, through the injected [`Resolver`], and refuses a name any of whose
//! addresses is loopback, private, link-local, shared (CGNAT), unspecified, broadcast, multicast,
//! reserved or a cloud metadata address — a name never unlocks such an address (DNS rebinding);
//! only an entry naming the address as an IP literal (`127.0.0.1:8080`) does. All of this happens
//! before any connection is attempted, and the proxy then connects to a vetted address, never to a
//! re-resolution. Empty `entries` admit nothing.
//!
//! An **authorized origin** (scheme, host, port: [`escepine_contract::Origin`]) admits a
//! forwarded `http://` request to exactly its host and port when its scheme is `http`, and a
//! `CONNECT` to exactly its host and port whatever its scheme (the proxy does not see inside a
//! tunnel). Hosts compare as the URL facts spell them. Unlike an IP-literal entry, an origin's
//! address literal came from a payload, so the address policy applies to it as to a resolved
//! address: an authorized `http://10.0.0.1/` is still refused. The grant's `public_addresses`
//! (an overlay's, for tests and offline demos on loopback) are the only addresses the policy
//! lets through although their class is forbidden.
//!
//! # Evidence
//! Each refusal is one line, `refused <METHOD> <host>:<port>[<path>]: <reason>` (a forwarded
//! request's path and query as the client sent them; a tunnel has none), e.g.
//! `refused CONNECT evil.example:443: not in the profile`,
//! `refused GET 127.0.0.1:8081/private?q=1: not in the profile nor an origin this call's
//! authorization allowed` or
//! `refused CONNECT allowed.test:443: resolves to 10.0.0.1, a private address`; a request that is
//! not well-formed is `refused request: <reason>`. Only normalised hosts appear, never raw input.
//! Each request admitted and connected is one line too, `<METHOD> <host>:<port>[<path>]`
//! ([`ProxyHandle::requests`]): with the refusals, the evidence holds every request's path.
//! At most 1,000 lines of each are kept per proxy; a last line counts the rest.
//!
//! # Bounds
//! Request heads are bounded (16 KiB, answered 431) and must arrive within 10 s (answered 408);
//! resolution and each connection attempt are bounded (10 s, answered 504); at most 256
//! connections are served at once (more wait to be accepted). Shutting down stops accepting,
//! closes every connection and tunnel and removes the socket; dropping the handle does the same
//! without waiting.

#![deny(missing_docs)]

mod addr_policy;
mod connect;
mod forward;
mod head;
mod resolver;
mod shared;

pub use resolver::{BoxFuture, Resolver, SystemResolver};

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use escepine_contract::EgressGrant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::{oneshot, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::timeout;

use addr_policy::{parse_authority, Target};
use connect::{dial, vet, Vetting};
use forward::{parse_absolute, rewrite};
use head::{parse_head, read_head, HeadError, RequestHead};
use shared::{Limits, Shared};

/// At most this many bytes of a client's unread input are drained after an error answer.
const LINGER_BYTES: usize = 64 * 1024;

/// The host-side egress proxy of one sandbox: see the [module documentation](self).
#[derive(Debug, Clone, Copy, Default)]
pub struct EgressProxy;

impl EgressProxy {
    /// Listen on a fresh Unix socket at `socket_path` and admit only what `grant` allows: its
    /// entries, its authorized origins, with its public addresses exempt from the address
    /// policy (a plain `Vec<EgressEntry>` is a grant of entries only).
    ///
    /// Must be called inside a tokio runtime; the proxy runs on it until
    /// [`ProxyHandle::shutdown`] (or until the handle is dropped). The socket is created with
    /// mode 0666 so that the sandbox's unprivileged user can connect to it; keep it in a
    /// directory only that sandbox (and the host) can reach.
    ///
    /// # Errors
    /// When the socket cannot be created — in particular when `socket_path` already exists
    /// (a fresh path is required; nothing is removed to make room).
    pub async fn start(
        socket_path: &Path,
        grant: impl Into<EgressGrant>,
        resolver: Arc<dyn Resolver>,
    ) -> io::Result<ProxyHandle> {
        start_with(socket_path, Shared::new(grant, resolver, Limits::default()))
    }
}

fn start_with(socket_path: &Path, shared: Shared) -> io::Result<ProxyHandle> {
    let listener = UnixListener::bind(socket_path)?;
    let identity = fs::set_permissions(socket_path, fs::Permissions::from_mode(0o666))
        .and_then(|()| fs::symlink_metadata(socket_path))
        .map(|m| (m.dev(), m.ino()));
    let identity = match identity {
        Ok(id) => id,
        Err(e) => {
            drop(listener);
            let _ = fs::remove_file(socket_path);
            return Err(e);
        }
    };
    let shared = Arc::new(shared);
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stopped));
    Ok(ProxyHandle {
        socket_path: socket_path.to_path_buf(),
        shared,
        stop: Some(stop),
        task: Some(task),
        socket_identity: Some(identity),
    })
}

/// A running [`EgressProxy`].
pub struct ProxyHandle {
    socket_path: PathBuf,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    /// Device and inode of the socket we created, so that only it is ever removed.
    socket_identity: Option<(u64, u64)>,
}

impl fmt::Debug for ProxyHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyHandle")
            .field("socket_path", &self.socket_path)
            .field("entries", &self.shared.entries)
            .field("running", &self.task.is_some())
            .finish_non_exhaustive()
    }
}

impl ProxyHandle {
    /// The Unix socket the proxy listens on.
    #[must_use]
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The refusals recorded so far, in order.
    #[must_use]
    pub fn refusals(&self) -> Vec<String> {
        self.shared.refusals()
    }

    /// The requests admitted and connected so far, in order, one line each:
    /// `<METHOD> <host>:<port>[<path>]` (a forwarded request's path and query; a tunnel has
    /// none), e.g. `GET 127.0.0.1:8080/page?q=1` or `CONNECT example.com:443`. Bounded as the
    /// refusals are.
    #[must_use]
    pub fn requests(&self) -> Vec<String> {
        self.shared.requests()
    }

    /// How many outbound connection attempts the proxy has made so far (evidence for tests that
    /// a refusal came before any connection).
    #[must_use]
    pub fn connect_attempts(&self) -> u64 {
        self.shared.connects.load(Ordering::SeqCst)
    }

    /// Stop accepting, close every connection and tunnel, remove the socket, and return all
    /// refusals.
    pub async fn shutdown(mut self) -> Vec<String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            if let Err(e) = task.await {
                tracing::warn!(error = %e, "egress proxy task ended abnormally");
            }
        }
        self.remove_socket();
        self.shared.refusals()
    }

    fn remove_socket(&mut self) {
        let Some((dev, ino)) = self.socket_identity.take() else {
            return;
        };
        match fs::symlink_metadata(&self.socket_path) {
            Ok(m) if m.file_type().is_socket() && m.dev() == dev && m.ino() == ino => {
                if let Err(e) = fs::remove_file(&self.socket_path) {
                    tracing::warn!(path = %self.socket_path.display(), error = %e,
                        "could not remove the egress proxy socket");
                }
            }
            _ => {}
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(task) = self.task.take() {
            // Aborting the accept loop drops its task set, which aborts every connection.
            task.abort();
        }
        self.remove_socket();
    }
}

async fn accept_loop(
    listener: UnixListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let permits = Arc::new(Semaphore::new(shared.limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let permit = tokio::select! {
            biased;
            _ = &mut stopped => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            biased;
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors and the like: back off rather than spin.
                    tracing::warn!(error = %e, "egress proxy accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            serve(&shared, stream).await;
            drop(permit);
        });
    }
    drop(listener);
    connections.shutdown().await;
}

/// Serve one client connection: one request, then a tunnel or a forwarded exchange.
async fn serve(shared: &Shared, mut client: UnixStream) {
    let limits = &shared.limits;
    let read = timeout(limits.head_timeout, read_head(&mut client, limits.max_head)).await;
    let (head, rest) = match read {
        Ok(Ok(read)) => read,
        Err(_) => {
            let why = format!(
                "request head not received within {} s",
                limits.head_timeout.as_secs_f64()
            );
            shared.refuse(format!("refused request: {why}"));
            respond(shared, &mut client, (408, "Request Timeout"), &why).await;
            return;
        }
        Ok(Err(e @ HeadError::TooLarge(_))) => {
            shared.refuse(format!("refused request: {e}"));
            let status = (431, "Request Header Fields Too Large");
            respond(shared, &mut client, status, &e.to_string()).await;
            return;
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "egress proxy client went away");
            return;
        }
    };
    let request = match parse_head(&head) {
        Ok(request) => request,
        Err(e) => {
            shared.refuse(format!("refused request: {e}"));
            respond(shared, &mut client, (400, "Bad Request"), &e.to_string()).await;
            return;
        }
    };
    if request.method == "CONNECT" {
        tunnel(shared, client, &request, &rest).await;
    } else {
        forward(shared, client, &request, &rest).await;
    }
}

/// `CONNECT host:port`: a tunnel to a vetted address.
async fn tunnel(shared: &Shared, mut client: UnixStream, request: &RequestHead, rest: &[u8]) {
    let target = match parse_authority(&request.target, None) {
        Ok(target) => target,
        Err(e) => {
            shared.refuse(format!("refused CONNECT request: {e}"));
            respond(shared, &mut client, (400, "Bad Request"), &e.to_string()).await;
            return;
        }
    };
    let Some(mut upstream) = open(
        shared,
        &mut client,
        "CONNECT",
        Requested::default(),
        &target,
    )
    .await
    else {
        return;
    };
    let established = async {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        upstream.write_all(rest).await
    };
    if let Err(e) = established.await {
        tracing::debug!(error = %e, %target, "egress tunnel failed to start");
        return;
    }
    if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
        tracing::debug!(error = %e, %target, "egress tunnel ended with an error");
    }
}

/// An absolute-form request: rewritten to origin-form, then the stream spliced.
async fn forward(shared: &Shared, mut client: UnixStream, request: &RequestHead, rest: &[u8]) {
    let method = &request.method;
    let fwd = match parse_absolute(&request.target) {
        Ok(fwd) => fwd,
        Err(e) => {
            shared.refuse(format!("refused {method} request: {e}"));
            respond(shared, &mut client, (400, "Bad Request"), &e.to_string()).await;
            return;
        }
    };
    let requested = Requested {
        scheme: Some("http"),
        path: Some(&fwd.origin_form),
    };
    let Some(mut upstream) = open(shared, &mut client, method, requested, &fwd.target).await else {
        return;
    };
    let mut out = rewrite(request, &fwd);
    out.extend_from_slice(rest);
    if let Err(e) = upstream.write_all(&out).await {
        let why = format!("could not send the request to {}: {e}", fwd.target);
        respond(shared, &mut client, (502, "Bad Gateway"), &why).await;
        return;
    }
    if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
        tracing::debug!(error = %e, target = %fwd.target, "egress forwarding ended with an error");
    }
}

/// What a request asks for besides its target: the scheme it speaks (`None` for a tunnel, whose
/// content the proxy does not see) and its path (a forwarded request's origin-form).
#[derive(Debug, Clone, Copy, Default)]
struct Requested<'a> {
    scheme: Option<&'a str>,
    path: Option<&'a str>,
}

/// Vet `target` and connect to it; on refusal or failure, answer the client and return `None`.
async fn open(
    shared: &Shared,
    client: &mut UnixStream,
    method: &str,
    requested: Requested<'_>,
    target: &Target,
) -> Option<TcpStream> {
    let failure = match vet(shared, requested.scheme, target).await {
        Ok(addrs) => match dial(shared, &addrs).await {
            Ok(stream) => {
                shared.admitted(format!(
                    "{method} {target}{}",
                    requested.path.unwrap_or_default()
                ));
                return Some(stream);
            }
            Err(e) => e,
        },
        Err(Vetting::Refused(refusal)) => {
            let line = match requested.path {
                Some(path) => format!("refused {method} {target}{path}: {refusal}"),
                None => format!("refused {method} {target}: {refusal}"),
            };
            shared.refuse(line.clone());
            respond(shared, client, (403, "Forbidden"), &line).await;
            return None;
        }
        Err(Vetting::Failed(e)) => e,
    };
    tracing::debug!(error = %failure, %target, "egress target unreachable");
    respond(shared, client, failure.status(), &failure.to_string()).await;
    None
}

/// Answer with an error status and a one-line text, close our side, and drain (bounded) what the
/// client still sends, so that a relay in front does not reset the connection before the client
/// has read the answer.
async fn respond(shared: &Shared, client: &mut UnixStream, status: (u16, &str), text: &str) {
    let (code, phrase) = status;
    let body = format!("escepine egress proxy: {text}\n");
    let answer = format!(
        "HTTP/1.1 {code} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let written = timeout(shared.limits.reply_timeout, async {
        client.write_all(answer.as_bytes()).await?;
        client.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < LINGER_BYTES {
            match client.read(&mut sink).await? {
                0 => break,
                n => drained += n,
            }
        }
        Ok::<(), io::Error>(())
    })
    .await;
    if let Ok(Err(e)) = written {
        tracing::debug!(error = %e, "egress proxy could not answer the client");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::net::{IpAddr, SocketAddr};

    use super::*;
    use crate::shared::MAX_REFUSALS;
    use tokio::net::TcpListener;

    struct MapResolver(HashMap<String, Vec<IpAddr>>);

    impl Resolver for MapResolver {
        fn resolve(&self, host: &str, port: u16) -> BoxFuture<'_, io::Result<Vec<SocketAddr>>> {
            let answer = self
                .0
                .get(host)
                .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"));
            Box::pin(async move { answer })
        }
    }

    fn entries(list: &[String]) -> Vec<escepine_contract::EgressEntry> {
        list.iter()
            .map(|s| s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
            .collect()
    }

    async fn exchange(path: &Path, request: &[u8]) -> (String, UnixStream) {
        let mut s = UnixStream::connect(path)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"));
        s.write_all(request)
            .await
            .unwrap_or_else(|e| panic!("write: {e}"));
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match s.read(&mut byte).await {
                Ok(1) => head.push(byte[0]),
                _ => break,
            }
        }
        (String::from_utf8_lossy(&head).into_owned(), s)
    }

    /// The name path end to end (admission by a wildcard, resolution, dialling the vetted
    /// address, tunnelling), possible against a loopback server only because this unit test
    /// treats loopback as public; the integration tests prove names never reach loopback.
    #[tokio::test]
    async fn wildcard_name_is_resolved_and_tunnelled() {
        let server = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let port = server.local_addr().map(|a| a.port()).unwrap_or_default();
        let echo = tokio::spawn(async move {
            if let Ok((mut s, _)) = server.accept().await {
                let mut buf = [0u8; 5];
                if s.read_exact(&mut buf).await.is_ok() {
                    let _ = s.write_all(&buf).await;
                }
            }
        });
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("p.sock");
        let resolver = MapResolver(HashMap::from([(
            "a.example.test".to_string(),
            vec![IpAddr::from([127, 0, 0, 1])],
        )]));
        let mut shared = Shared::new(
            entries(&["*.example.test".to_string()]),
            Arc::new(resolver),
            Limits::default(),
        );
        shared.loopback_is_public = true;
        let proxy = start_with(&path, shared).unwrap_or_else(|e| panic!("{e}"));

        let req = format!("CONNECT A.Example.TEST.:{port} HTTP/1.1\r\n\r\nhello");
        let (head, mut s) = exchange(&path, req.as_bytes()).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let mut back = [0u8; 5];
        s.read_exact(&mut back)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&back, b"hello");
        let _ = echo.await;
        assert_eq!(proxy.connect_attempts(), 1);

        // `example.test` itself is not covered by `*.example.test`.
        let req = format!("CONNECT example.test:{port} HTTP/1.1\r\n\r\n");
        let (head, _s) = exchange(&path, req.as_bytes()).await;
        assert!(head.starts_with("HTTP/1.1 403"), "{head}");
        assert_eq!(
            proxy.shutdown().await,
            vec![format!(
                "refused CONNECT example.test:{port}: not in the profile"
            )]
        );
    }

    #[tokio::test]
    async fn a_stalled_head_times_out_and_is_recorded() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("p.sock");
        let limits = Limits {
            head_timeout: Duration::from_millis(200),
            ..Limits::default()
        };
        let proxy = start_with(
            &path,
            Shared::new(Vec::new(), Arc::new(SystemResolver), limits),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (head, _s) = exchange(&path, b"GET http://a.test/ HTTP/1.1\r\nHost:").await;
        assert!(head.starts_with("HTTP/1.1 408"), "{head}");
        assert_eq!(
            proxy.shutdown().await,
            vec!["refused request: request head not received within 0.2 s".to_string()]
        );
    }

    #[tokio::test]
    async fn refusals_are_bounded() {
        let shared = Shared::new(Vec::new(), Arc::new(SystemResolver), Limits::default());
        for i in 0..MAX_REFUSALS + 5 {
            shared.refuse(format!("refused CONNECT h{i}.test:443: not in the profile"));
        }
        let got = shared.refusals();
        assert_eq!(got.len(), MAX_REFUSALS + 1);
        assert_eq!(
            got.last().map(String::as_str),
            Some("refused 5 more requests (not itemised)")
        );
    }
}
