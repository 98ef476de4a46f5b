//! The loopback relay: `127.0.0.1:3128` inside the sandbox, each connection spliced to the
//! host's egress proxy through its Unix socket, so that ordinary `HTTP_PROXY`/`HTTPS_PROXY`
//! clients work although the sandbox has no network. PID 1 reaches the socket through a
//! descriptor of the host's socket directory it opened before the host's tree was detached
//! (`/proc/self/fd/N/proxy.sock`): nothing of the host is mounted for it, and the tool, which
//! never gets the descriptor, cannot reach it.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use crate::protocol::{PROXY_SOCKET, RELAY_PORT};

/// The relay's listening socket (bound before the tool starts, so its first connect succeeds).
pub(super) fn listen() -> Result<TcpListener, String> {
    TcpListener::bind(("127.0.0.1", RELAY_PORT))
        .map_err(|e| format!("relay: bind 127.0.0.1:{RELAY_PORT}: {e}"))
}

/// Serves the relay on a thread of PID 1 until the sandbox ends, connecting each client to the
/// proxy's socket in the directory `dir` (an `O_PATH` descriptor, held as long as the relay).
pub(super) fn spawn(listener: TcpListener, dir: OwnedFd) {
    let proxy = Arc::new(format!("/proc/self/fd/{}/{PROXY_SOCKET}", dir.as_raw_fd()));
    let _ = std::thread::Builder::new()
        .name("relay".into())
        .spawn(move || {
            let _dir = dir;
            for conn in listener.incoming() {
                let Ok(tcp) = conn else { continue };
                let proxy = Arc::clone(&proxy);
                let _ = std::thread::Builder::new()
                    .name("relay-conn".into())
                    .spawn(move || splice(tcp, &proxy));
            }
        });
}

/// Copies both ways between one client and the proxy, half-closing as each side finishes.
fn splice(tcp: TcpStream, proxy: &str) {
    let unix = match UnixStream::connect(proxy) {
        Ok(u) => u,
        Err(_) => return,
    };
    let (Ok(mut tcp_r), Ok(mut unix_w)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let up = std::thread::Builder::new()
        .name("relay-up".into())
        .spawn(move || {
            let _ = io::copy(&mut tcp_r, &mut unix_w);
            let _ = unix_w.shutdown(Shutdown::Write);
        });
    let (mut unix_r, mut tcp_w) = (unix, tcp);
    let _ = io::copy(&mut unix_r, &mut tcp_w);
    let _ = tcp_w.shutdown(Shutdown::Write);
    if let Ok(up) = up {
        let _ = up.join();
    }
}
