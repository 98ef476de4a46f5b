//! The loopback relay: `127.0.0.1:3128` inside the sandbox, each connection spliced to the
//! host's egress proxy through its Unix socket, so that ordinary `HTTP_PROXY`/`HTTPS_PROXY`
//! clients work although the sandbox has no network. PID 1 reaches the socket through a
//! descriptor of the host's socket directory it opened before the host's tree was detached
//! (`/proc/self/fd/N/proxy.sock`): nothing of the host is mounted for it, and the tool, which
//! never gets the descriptor, cannot reach it.
//!
//! The relay has no thread of its own: PID 1 serves it in the loop in which it waits for the
//! tool (`watch`), with every socket non-blocking. A thread cost a PID 1 its stack, an
//! allocator arena, their page faults and a second thread to tear down at exit — for every
//! sandbox with egress, whether its tool connected or not — and each connection two more.

use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::event::PollFlags;

use crate::protocol::{PROXY_SOCKET, RELAY_PORT};

/// What one direction of a connection holds in flight at most.
const BUFFER: usize = 16 << 10;

/// The relay: its listening socket and the connections it splices.
pub(super) struct Relay {
    listener: TcpListener,
    /// The proxy's socket, through `_dir`.
    proxy: String,
    /// The proxy's socket directory (an `O_PATH` descriptor), held as long as the relay.
    _dir: OwnedFd,
    splices: Vec<Splice>,
    /// Whether the listener is watched: not after an accept failed for want of descriptors
    /// or memory (it would wake the loop at once, again and again), until a splice closes.
    accepting: bool,
}

/// The relay's listening socket (bound before the tool starts, so its first connect succeeds),
/// connecting each client to the proxy's socket in the directory `dir`.
pub(super) fn listen(dir: OwnedFd) -> Result<Relay, String> {
    let listener = TcpListener::bind(("127.0.0.1", RELAY_PORT))
        .map_err(|e| format!("relay: bind 127.0.0.1:{RELAY_PORT}: {e}"))?;
    Relay::on(listener, dir)
}

impl Relay {
    /// The relay on `listener`, to the proxy's socket in `dir`.
    fn on(listener: TcpListener, dir: OwnedFd) -> Result<Self, String> {
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("relay: {e}"))?;
        Ok(Self {
            listener,
            proxy: format!("/proc/self/fd/{}/{PROXY_SOCKET}", dir.as_raw_fd()),
            _dir: dir,
            splices: Vec::new(),
            accepting: true,
        })
    }
}

/// Which socket of the relay a poll entry watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Socket {
    /// The listening socket.
    Listener,
    /// The client's end of splice `n`.
    Client(usize),
    /// The proxy's end of splice `n`.
    Proxy(usize),
}

impl Relay {
    /// The sockets to watch now and for what: the listener while it accepts, each
    /// connection's ends for what its two directions wait on (none for a direction that is
    /// over, so that a hung-up socket does not wake the loop again and again).
    pub(super) fn interest(&self) -> Vec<(BorrowedFd<'_>, PollFlags, Socket)> {
        let mut out = Vec::with_capacity(1 + 2 * self.splices.len());
        if self.accepting {
            out.push((self.listener.as_fd(), PollFlags::IN, Socket::Listener));
        }
        for (n, s) in self.splices.iter().enumerate() {
            let client = s.up.reads_when() | s.down.writes_when();
            let proxy = s.down.reads_when() | s.up.writes_when();
            if !client.is_empty() {
                out.push((s.client.as_fd(), client, Socket::Client(n)));
            }
            if !proxy.is_empty() {
                out.push((s.proxy.as_fd(), proxy, Socket::Proxy(n)));
            }
        }
        out
    }

    /// Acts on what the loop saw ready: accepts the clients waiting (each connected to the
    /// proxy), moves what each ready connection can move, and closes the connections over.
    pub(super) fn advance(&mut self, ready: &[Socket]) {
        for socket in ready {
            match *socket {
                Socket::Listener => self.accept(),
                Socket::Client(n) | Socket::Proxy(n) => {
                    if let Some(s) = self.splices.get_mut(n) {
                        s.pump();
                    }
                }
            }
        }
        let open = self.splices.len();
        self.splices.retain(|s| !s.is_over());
        if self.splices.len() < open {
            self.accepting = true;
        }
    }

    /// Accepts every client waiting; a client whose proxy connection fails is closed.
    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((client, _)) => {
                    if let Some(splice) = Splice::connect(client, &self.proxy) {
                        self.splices.push(splice);
                    }
                }
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR | libc::ECONNABORTED) => {}
                    Some(libc::EAGAIN) => return,
                    // Out of descriptors or memory: accept again once a splice has closed
                    // (at once if there is none to wait for).
                    _ => {
                        self.accepting = self.splices.is_empty();
                        return;
                    }
                },
            }
        }
    }
}

/// One client's connection, spliced to the proxy both ways.
struct Splice {
    client: TcpStream,
    proxy: UnixStream,
    /// Client → proxy.
    up: Flow,
    /// Proxy → client.
    down: Flow,
}

impl Splice {
    /// `client` (just accepted, without Nagle's wait: what the relay writes to it is all it
    /// has) and a new connection to the proxy's socket `proxy`, both non-blocking; `None` when
    /// the proxy cannot be reached (the client is closed then).
    fn connect(client: TcpStream, proxy: &str) -> Option<Self> {
        let proxy = UnixStream::connect(proxy).ok()?;
        proxy.set_nonblocking(true).ok()?;
        client.set_nonblocking(true).ok()?;
        client.set_nodelay(true).ok()?;
        Some(Self {
            client,
            proxy,
            up: Flow::new(),
            down: Flow::new(),
        })
    }

    /// Moves what can be moved each way without blocking.
    fn pump(&mut self) {
        self.up.pump(&mut self.client, &mut self.proxy);
        self.down.pump(&mut self.proxy, &mut self.client);
    }

    /// Whether both ways are over (its sockets are closed when it is dropped).
    fn is_over(&self) -> bool {
        self.up.over && self.down.over
    }
}

/// Where a flow writes: a socket, sent to without `SIGPIPE` (a peer gone is an error, not
/// the end of PID 1), and half-closed once the flow's source has ended.
trait Sink {
    fn send(&mut self, buf: &[u8]) -> io::Result<usize>;
    fn close_write(&mut self);
}

impl<T: AsFd> Sink for T {
    fn send(&mut self, buf: &[u8]) -> io::Result<usize> {
        rustix::net::send(self.as_fd(), buf, rustix::net::SendFlags::NOSIGNAL).map_err(Into::into)
    }

    fn close_write(&mut self) {
        let _ = rustix::net::shutdown(self.as_fd(), rustix::net::Shutdown::Write);
    }
}

/// One direction of a connection: what was read from one end and not yet written to the
/// other. It reads only once all it read is written, so it holds at most [`BUFFER`] bytes
/// (allocated at its first read: a connection that sends nothing costs none).
struct Flow {
    buf: Vec<u8>,
    /// `buf[start..end]` is still to be written.
    start: usize,
    end: usize,
    /// The source has ended (or failed).
    eof: bool,
    /// Nothing more will go this way: the end was passed on, or the destination failed.
    over: bool,
}

impl Flow {
    fn new() -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
            over: false,
        }
    }

    /// What its source is watched for: input, once all it read is written.
    fn reads_when(&self) -> PollFlags {
        if self.over || self.eof || self.start < self.end {
            PollFlags::empty()
        } else {
            PollFlags::IN
        }
    }

    /// What its destination is watched for: room, while bytes wait to be written.
    fn writes_when(&self) -> PollFlags {
        if !self.over && self.start < self.end {
            PollFlags::OUT
        } else {
            PollFlags::empty()
        }
    }

    /// Writes what it holds and reads more, until either end would block; passes the
    /// source's end on (a half-close) once everything before it is written.
    fn pump(&mut self, from: &mut impl Read, to: &mut impl Sink) {
        while !self.over {
            if self.start < self.end {
                match to.send(&self.buf[self.start..self.end]) {
                    Ok(0) => self.fail(),
                    Ok(n) => self.start += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                    Err(_) => self.fail(),
                }
                continue;
            }
            if self.eof {
                to.close_write();
                self.over = true;
                return;
            }
            if self.buf.is_empty() {
                self.buf = vec![0; BUFFER];
            }
            match from.read(&mut self.buf) {
                Ok(0) => self.eof = true,
                Ok(n) => (self.start, self.end) = (0, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // A reset source ends this way as an end of file would.
                Err(_) => self.eof = true,
            }
        }
    }

    /// The destination failed: what is held is dropped and nothing more goes this way.
    fn fail(&mut self) {
        self.buf = Vec::new();
        (self.start, self.end) = (0, 0);
        self.eof = true;
        self.over = true;
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::unix::net::{UnixListener, UnixStream};

    use super::{Flow, Relay, Socket, BUFFER};
    use crate::protocol::PROXY_SOCKET;

    /// Set in the child process [`out_of_descriptors_the_listener_rests_until_a_connection_closes`]
    /// runs itself in.
    const CHILD: &str = "ESCEPINE_RELAY_TEST_CHILD";

    /// Whether the loop would watch `relay`'s listening socket.
    fn watches_listener(relay: &Relay) -> bool {
        relay
            .interest()
            .iter()
            .any(|&(_, _, socket)| socket == Socket::Listener)
    }

    /// Out of descriptors, the relay stops watching its listener (which would wake its loop at
    /// once, again and again) until one of its connections closes; then it accepts again.
    #[test]
    fn out_of_descriptors_the_listener_rests_until_a_connection_closes() {
        let name =
            "init::relay::tests::out_of_descriptors_the_listener_rests_until_a_connection_closes";
        if std::env::var_os(CHILD).is_none() {
            // In a child process: the descriptor limit it lowers is its own.
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads", "1"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
            assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let proxy = UnixListener::bind(dir.path().join(PROXY_SOCKET)).unwrap();
        let dir_fd = rustix::fs::open(
            dir.path(),
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let mut relay = Relay::on(TcpListener::bind("127.0.0.1:0").unwrap(), dir_fd).unwrap();
        let addr = relay.listener.local_addr().unwrap();
        let clients: Vec<TcpStream> = (0..6).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // Room for two descriptors more: one splice (the accepted client and its proxy
        // connection), then none. The holes below the highest descriptor are filled first.
        let highest = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .max()
            .unwrap();
        let mut fillers = Vec::new();
        loop {
            let filler = rustix::io::dup(std::io::stderr()).unwrap();
            let at = std::os::fd::AsRawFd::as_raw_fd(&filler);
            fillers.push(filler);
            if at >= highest {
                break;
            }
        }
        let highest =
            highest.max(std::os::fd::AsRawFd::as_raw_fd(&fillers[fillers.len() - 1])) as u64;
        let before = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let limit = rustix::process::Rlimit {
            current: Some(highest + 1 + 2),
            maximum: before.maximum,
        };
        rustix::process::setrlimit(rustix::process::Resource::Nofile, limit).unwrap();
        relay.advance(&[Socket::Listener]);
        // One splice (more only if the descriptor table had holes), not six.
        assert!(
            (1..6).contains(&relay.splices.len()),
            "{}",
            relay.splices.len()
        );
        // Relayed bytes go out as they come: no Nagle wait for the client's delayed ACK.
        assert!(relay.splices.iter().all(|s| s.client.nodelay().unwrap()));
        assert!(!relay.accepting);
        assert!(!watches_listener(&relay));
        // Descriptors to spare again: the listener still rests, until a splice closes.
        rustix::process::setrlimit(rustix::process::Resource::Nofile, before).unwrap();
        drop(fillers);
        relay.advance(&[]);
        assert!(!watches_listener(&relay));
        // The proxy ends its connections, and the clients theirs: the splices close.
        proxy.set_nonblocking(true).unwrap();
        while let Ok((theirs, _)) = proxy.accept() {
            drop(theirs);
        }
        drop(clients);
        let all: Vec<Socket> = (0..relay.splices.len())
            .flat_map(|n| [Socket::Client(n), Socket::Proxy(n)])
            .collect();
        relay.advance(&all);
        assert!(relay.splices.is_empty());
        assert!(watches_listener(&relay));
    }

    /// A socket pair's end whose peer reads only when the test says, `room` bytes at a time:
    /// the other end's send buffer fills and the flow must hold the rest.
    fn narrow() -> (UnixStream, UnixStream) {
        let (to, peer) = UnixStream::pair().unwrap();
        to.set_nonblocking(true).unwrap();
        (to, peer)
    }

    #[test]
    fn a_flow_holds_what_its_destination_cannot_take_and_reads_no_more_meanwhile() {
        // More than the socket pair's buffers hold, so that the flow must wait for room.
        let data: Vec<u8> = (0..64 * BUFFER).map(|i| (i % 251) as u8).collect();
        let mut from = std::io::Cursor::new(data.clone());
        let (mut to, mut peer) = narrow();
        let mut flow = Flow::new();
        flow.pump(&mut from, &mut to);
        // The destination is full: what the flow read and could not write waits in it, and
        // it reads nothing more until that is written.
        assert!(flow.writes_when().contains(rustix::event::PollFlags::OUT));
        assert!(flow.reads_when().is_empty());
        assert!((from.position() as usize) < data.len());
        let held = from.position();
        flow.pump(&mut from, &mut to);
        assert_eq!(from.position(), held, "it read while it held bytes");
        let mut got = Vec::new();
        let mut chunk = vec![0u8; 4096];
        while !flow.over {
            let n = peer.read(&mut chunk).unwrap();
            got.extend_from_slice(&chunk[..n]);
            flow.pump(&mut from, &mut to);
        }
        peer.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), data.len());
        assert!(got == data, "the bytes arrived changed or out of order");
    }

    #[test]
    fn an_end_of_file_is_passed_on_once_everything_before_it_is_written() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let (c, mut d) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        c.set_nonblocking(true).unwrap();
        let (mut b, mut c) = (b, c);
        a.write_all(b"request").unwrap();
        a.shutdown(std::net::Shutdown::Write).unwrap();
        let mut flow = Flow::new();
        flow.pump(&mut b, &mut c);
        assert!(flow.over);
        let mut got = Vec::new();
        d.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"request");
    }

    #[test]
    fn a_destination_that_fails_ends_the_flow_and_drops_what_it_held() {
        let (a, b) = UnixStream::pair().unwrap();
        let (c, d) = UnixStream::pair().unwrap();
        drop(d);
        b.set_nonblocking(true).unwrap();
        let (mut a, mut b, mut c) = (a, b, c);
        a.write_all(b"lost").unwrap();
        let mut flow = Flow::new();
        flow.pump(&mut b, &mut c);
        assert!(flow.over);
        assert!(flow.writes_when().is_empty() && flow.reads_when().is_empty());
    }
}
