//! A TCP echo server on `127.0.0.1` for tests and benches: each connection gets back every byte
//! it sends, until it ends (the relay's traffic in `escepine-hostile bulk`). It writes without
//! Nagle's wait, so that what a bench times is the path, not the echo's last short piece.

/// Starts the server on the current tokio runtime: its port.
///
/// # Panics
/// When no loopback port can be bound.
pub async fn start() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("the bound address").port();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = s.set_nodelay(true);
                let (mut r, mut w) = s.into_split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    port
}
