//! Network namespaces made ahead of demand, off the sandboxes' critical path, and given again
//! once emptied.
//!
//! Creating a network namespace is the largest single cost of a sandbox's `clone` (the kernel
//! sets up every protocol's per-namespace state and registers the loopback device), and it
//! waits for the RTNL lock, which the kernel's clean-up of ended namespaces holds for
//! milliseconds at a time. So the backend keeps a few namespaces ready: a thread of the runtime
//! makes each (`unshare(CLONE_NEWNET)` from a namespace of its own, whose settings give each
//! namespace made from it socket tables of its own, [`emptied`]; its
//! `/proc/thread-self/ns/net` opened, the thread back in the runtime's own namespace), and each
//! sandbox takes one, whose descriptor travels with its provision; the zygote enters it
//! (`setns`) to clone the sandbox's PID 1, which then gets no network namespace of its own
//! making, and returns to its own.
//!
//! Two stocks are kept: namespaces as the kernel makes them, loopback down, for sandboxes
//! without egress (nothing in them can reach even themselves over IP), and namespaces whose
//! loopback the thread brought up, for sandboxes with egress (their relay listens there).
//!
//! A namespace belongs to the host's user namespace, so the sandbox's root holds no capability
//! over it (it cannot configure its interfaces, which the tool could not anyway). When its
//! sandbox has ended — its PID 1, the last of its processes, has exited — the backend
//! gives it back ([`NetnsPool::give_back`]), and the thread, having entered it, puts it back in
//! its stock only if it holds nothing of that sandbox ([`emptied`]: no TCP connection in any
//! state, no Unix socket, SCTP association or flow label, loopback as made); otherwise it is let
//! go and the kernel destroys it.
//! Making and destroying a namespace per sandbox took a sixth of the CPU of a burst of
//! sandboxes, and both hold the RTNL lock that the next sandbox's namespace waits for.
//!
//! When its stock is empty (a burst of sandboxes) or the runtime may not make namespaces (not
//! root), a sandbox creates its own in its `clone`, as it always could; that one is never given
//! again.

mod emptied;
mod loopback;

pub(crate) use loopback::loopback_up;

use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// How many namespaces with loopback down the pool keeps ready.
pub(super) const KEPT: usize = 8;
/// How many namespaces with loopback up the pool keeps ready.
pub(super) const KEPT_LOOPBACK: usize = 4;
/// How many emptied namespaces each stock may hold, beyond which one given back is let go
/// (each holds about 130 KB of kernel memory): as many as a burst of 64 sandboxes uses.
pub(super) const KEPT_EMPTIED: usize = 64;

#[derive(Debug, Default)]
struct State {
    /// Loopback down.
    ready: Vec<OwnedFd>,
    /// Loopback up.
    looped: Vec<OwnedFd>,
    /// Given back by ended sandboxes, with whether their loopback is up; not yet looked into.
    returned: Vec<(OwnedFd, bool)>,
    /// How many namespaces given back the thread has looked into (and kept or let go).
    looked_into: u64,
    /// Set when the pool is dropped (the thread ends) or the thread cannot make namespaces.
    closed: bool,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when a namespace is taken or given back, or the pool closes.
    wanted: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// The stock of namespaces with loopback `up` or down.
    fn stock(&mut self, up: bool) -> &mut Vec<OwnedFd> {
        if up {
            &mut self.looped
        } else {
            &mut self.ready
        }
    }

    /// The next namespace to make (loopback up or not): for the stock furthest below what it
    /// keeps, in proportion; `None` when both are full.
    fn next(&self) -> Option<bool> {
        let short = |have: usize, kept: usize| (have < kept).then_some(have * 1000 / kept);
        match (
            short(self.ready.len(), KEPT),
            short(self.looped.len(), KEPT_LOOPBACK),
        ) {
            (None, None) => None,
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (Some(down), Some(up)) => Some(up < down),
        }
    }
}

/// Network namespaces with loopback down and up: at least [`KEPT`] and [`KEPT_LOOPBACK`] kept
/// ready by a thread of their own, which makes them, and up to [`KEPT_EMPTIED`] of each given
/// back emptied.
#[derive(Debug)]
pub(super) struct NetnsPool {
    shared: Arc<Shared>,
}

impl NetnsPool {
    /// A pool whose thread starts making namespaces at once; `None` when the thread cannot be
    /// started.
    pub(super) fn start() -> Option<Self> {
        let shared = Arc::new(Shared::default());
        let filler = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("escepine-netns".into())
            .spawn(move || fill(&filler))
            .ok()?;
        Some(Self { shared })
    }

    /// A namespace never used or emptied, its loopback up if `loopback` (for a sandbox with
    /// egress), if one is ready.
    pub(super) fn take(&self, loopback: bool) -> Option<OwnedFd> {
        let taken = self.shared.lock().stock(loopback).pop();
        if taken.is_some() {
            self.shared.wanted.notify_one();
        }
        taken
    }

    /// Gives back the namespace of an ended sandbox, every process of which has exited, with
    /// whether its loopback is up: the pool's thread looks into it and keeps it for another
    /// sandbox only if it holds nothing of this one.
    pub(super) fn give_back(&self, netns: OwnedFd, loopback: bool) {
        let mut state = self.shared.lock();
        if state.closed || state.returned.len() >= KEPT_EMPTIED {
            return;
        }
        state.returned.push((netns, loopback));
        drop(state);
        self.shared.wanted.notify_one();
    }

    /// How many namespaces with loopback up (`loopback`) or down are ready now.
    #[cfg(test)]
    pub(super) fn ready(&self, loopback: bool) -> usize {
        self.shared.lock().stock(loopback).len()
    }

    /// Whether the stock with loopback up (`loopback`) or down holds the namespace of inode
    /// `ino`.
    #[cfg(test)]
    pub(super) fn holds(&self, loopback: bool, ino: u64) -> bool {
        self.shared
            .lock()
            .stock(loopback)
            .iter()
            .any(|fd| rustix::fs::fstat(fd).is_ok_and(|st| st.st_ino == ino))
    }

    /// How many namespaces given back the pool's thread has looked into.
    #[cfg(test)]
    pub(super) fn looked_into(&self) -> u64 {
        self.shared.lock().looked_into
    }
}

impl Drop for NetnsPool {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        state.ready.clear();
        state.looped.clear();
        state.returned.clear();
        self.shared.wanted.notify_one();
    }
}

/// What the pool's thread does next.
enum Work {
    /// Look into a namespace given back (loopback up or not).
    LookInto(OwnedFd, bool),
    /// Make a namespace (loopback up or not).
    Make(bool),
}

/// The pool's thread: looks into each namespace given back, then keeps both stocks full, until
/// the pool is dropped; ends at the first namespace it cannot make or leave (the pool stays
/// empty).
fn fill(shared: &Shared) {
    let Ok((home, parent)) = own_netns().and_then(|home| {
        let parent = make_parent(&home)?;
        Ok((home, parent))
    }) else {
        shared.lock().closed = true;
        return;
    };
    loop {
        let work = {
            let mut state = shared.lock();
            loop {
                if state.closed {
                    return;
                }
                if let Some((netns, up)) = state.returned.pop() {
                    break Work::LookInto(netns, up);
                }
                match state.next() {
                    Some(up) => break Work::Make(up),
                    None => {
                        state = shared
                            .wanted
                            .wait(state)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                }
            }
        };
        let looked = matches!(work, Work::LookInto(..));
        let made = match work {
            Work::LookInto(netns, up) => match look_into(&home, &netns, up) {
                Ok(None) => Ok(Some((netns, up))),
                Ok(Some(left)) => {
                    tracing::debug!(left = %left, "a used network namespace is not given again");
                    Ok(None)
                }
                Err(e) => Err(e),
            },
            Work::Make(up) => make(&home, &parent, up).map(|netns| Some((netns, up))),
        };
        match made {
            Ok(kept) => {
                let mut state = shared.lock();
                if state.closed {
                    return;
                }
                if let Some((netns, up)) = kept {
                    let stock = state.stock(up);
                    if stock.len() < KEPT_EMPTIED {
                        stock.push(netns);
                    }
                }
                state.looked_into += u64::from(looked);
            }
            Err(e) => {
                tracing::debug!(error = %e, "no network namespaces ahead of demand");
                shared.lock().closed = true;
                return;
            }
        }
    }
}

/// What the namespace `netns` holds of the sandbox that used it ([`emptied::leftover`]),
/// looked at from inside it by this thread, which then returns to `home`. A namespace this
/// thread cannot enter or look into counts as holding something; an error is this thread not
/// being able to return.
fn look_into(home: &OwnedFd, netns: &OwnedFd, loopback: bool) -> std::io::Result<Option<String>> {
    if let Err(e) = enter(netns) {
        return Ok(Some(format!("cannot enter it: {e}")));
    }
    let left = emptied::leftover(loopback).unwrap_or_else(|e| Some(format!("cannot tell: {e}")));
    enter(home)?;
    Ok(left)
}

/// Moves this thread into the network namespace `netns`.
fn enter(netns: &OwnedFd) -> std::io::Result<()> {
    rustix::thread::move_into_link_name_space(
        std::os::fd::AsFd::as_fd(netns),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )?;
    Ok(())
}

/// This thread's network namespace.
fn own_netns() -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        "/proc/thread-self/ns/net",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?)
}

/// The namespace the pool's namespaces are made from ([`emptied::own_tables`]): made by this
/// thread, which then returns to `home`. Nothing ever runs in it.
fn make_parent(home: &OwnedFd) -> std::io::Result<OwnedFd> {
    // SAFETY: only the network namespace is unshared, never the descriptor table.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }?;
    let made = emptied::own_tables().and_then(|()| own_netns());
    enter(home)?;
    made
}

/// A new network namespace, made from `parent` (so with socket tables of its own), its loopback
/// up (and TCP's metrics off, see [`emptied`]) if `loopback`, made by this thread, which then
/// returns to `home`.
fn make(home: &OwnedFd, parent: &OwnedFd, loopback: bool) -> std::io::Result<OwnedFd> {
    enter(parent)?;
    // SAFETY: only the network namespace is unshared, never the descriptor table.
    let made = unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }
        .map_err(std::io::Error::from)
        .and_then(|()| {
            if loopback {
                loopback_up()
                    .map_err(std::io::Error::other)
                    .and_then(|()| emptied::forget_tcp_peers())
            } else {
                Ok(())
            }
        })
        .and_then(|()| own_netns());
    enter(home)?;
    made
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inode of a namespace descriptor: which namespace it is.
    fn inode(fd: &OwnedFd) -> u64 {
        rustix::fs::fstat(fd).expect("fstat").st_ino
    }

    /// `f`'s answer, asked from a thread that enters the namespace `fd` (and ends there).
    fn inside<T: Send + 'static>(fd: &OwnedFd, f: impl FnOnce() -> T + Send + 'static) -> T {
        let fd = fd.try_clone().expect("dup");
        std::thread::spawn(move || {
            enter(&fd).expect("setns");
            f()
        })
        .join()
        .expect("the asking thread")
    }

    /// Whether the loopback interface of the namespace `fd` is up.
    fn loopback_is_up(fd: &OwnedFd) -> bool {
        inside(fd, || loopback::loopback_is_up().expect("SIOCGIFFLAGS"))
    }

    /// A TCP connection on loopback (`127.0.0.1` and `::1`), from its start to its orderly
    /// end, in this thread's namespace: the side that closes first is left in `TIME-WAIT`.
    fn connect_and_close() {
        connect_and_close_on("127.0.0.1:0");
        connect_and_close_on("[::1]:0");
    }

    fn connect_and_close_on(addr: &str) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind(addr).expect("bind");
        let mut client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        client.write_all(b"ping").expect("write");
        let mut buf = [0u8; 4];
        server.read_exact(&mut buf).expect("read");
        server.write_all(b"pong").expect("write");
        client.read_exact(&mut buf).expect("read");
        drop(client);
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).expect("the end");
    }

    /// What `ip tcp_metrics show` prints in this thread's namespace.
    fn tcp_metrics() -> String {
        let out = std::process::Command::new("ip")
            .args(["tcp_metrics", "show"])
            .output()
            .expect("ip (iproute2) runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Gives `fd` back to `pool` and waits until the pool's thread has looked into it: whether
    /// the pool keeps it.
    fn given_back(pool: &NetnsPool, fd: OwnedFd, loopback: bool) -> bool {
        let ino = inode(&fd);
        let before = pool.looked_into();
        pool.give_back(fd, loopback);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while pool.looked_into() == before {
            assert!(
                std::time::Instant::now() < deadline,
                "the pool looks into it"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        pool.holds(loopback, ino)
    }

    /// A namespace of the stock with loopback `up`, waited for.
    fn taken(pool: &NetnsPool, up: bool) -> OwnedFd {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(fd) = pool.take(up) {
                return fd;
            }
            assert!(std::time::Instant::now() < deadline, "the pool fills");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn a_namespace_given_back_is_handed_out_again_only_if_it_holds_nothing() {
        if !rustix::process::geteuid().is_root() {
            return; // the pool makes no namespaces (the test above covers that)
        }
        let pool = NetnsPool::start().expect("a thread");

        // Used by nothing: kept, both kinds.
        for up in [false, true] {
            let fd = taken(&pool, up);
            assert!(
                given_back(&pool, fd, up),
                "an unused namespace (loopback up: {up})"
            );
        }

        // A Unix socket still bound in it (in flight, say, when its process ended).
        let fd = taken(&pool, false);
        let name = format!("escepine-netns-test-{}", std::process::id());
        let held = inside(&fd, move || {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).expect("name");
            std::os::unix::net::UnixListener::bind_addr(&addr).expect("bind")
        });
        assert!(!given_back(&pool, fd, false), "a Unix socket is left in it");
        drop(held);

        // A TCP connection's TIME-WAIT.
        let fd = taken(&pool, true);
        inside(&fd, connect_and_close);
        assert!(!given_back(&pool, fd, true), "a TIME-WAIT is left in it");

        // Loopback up in a namespace made with it down (which only the host could do).
        let fd = taken(&pool, false);
        inside(&fd, || loopback_up().expect("lo up"));
        assert!(!given_back(&pool, fd, false), "its loopback changed");

        // A namespace with loopback up keeps no TCP metrics past a connection's end: an IPv4
        // and an IPv6 connection leave none; the same connection in a namespace made without
        // the pool's settings leaves some (what the kernel would keep for the next sandbox).
        let fd = taken(&pool, true);
        let metrics = inside(&fd, || {
            connect_and_close();
            tcp_metrics()
        });
        assert_eq!(metrics, "", "no TCP metrics in the pool's namespaces");
        let plain = std::thread::spawn(|| {
            // SAFETY: only the network namespace is unshared, never the descriptor table.
            unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }
                .expect("unshare");
            loopback_up().expect("lo up");
            connect_and_close();
            tcp_metrics()
        })
        .join()
        .expect("the thread");
        assert!(
            plain.contains("127.0.0.1") && plain.contains("::1"),
            "{plain:?}"
        );
    }

    #[test]
    fn the_pool_hands_out_distinct_fresh_namespaces_and_refills() {
        if !rustix::process::geteuid().is_root() {
            // Without CAP_SYS_ADMIN the thread cannot make namespaces: the pool stays empty.
            let pool = NetnsPool::start().expect("a thread");
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(pool.take(false).is_none());
            assert!(pool.take(true).is_none());
            return;
        }
        let own = inode(&own_netns().expect("own namespace"));
        let pool = NetnsPool::start().expect("a thread");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut seen = std::collections::HashSet::new();
        let mut taken = Vec::new();
        // Both stocks, drained in turns (three of one for each of the other).
        let mut turn = 0usize;
        while taken.len() < 3 * KEPT {
            assert!(std::time::Instant::now() < deadline, "the pool refills");
            let loopback = turn % 4 == 3;
            match pool.take(loopback) {
                Some(fd) => {
                    let ino = inode(&fd);
                    assert_ne!(ino, own, "not this process's namespace");
                    assert!(seen.insert(ino), "each namespace is handed out once");
                    assert_eq!(
                        loopback_is_up(&fd),
                        loopback,
                        "loopback is up exactly in the namespaces for egress"
                    );
                    taken.push(fd);
                    turn += 1;
                }
                None => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
        // This thread never left its namespace; the pool's thread went back to it too, with
        // its own loopback as it was.
        assert_eq!(inode(&own_netns().expect("own namespace")), own);
        while pool.ready(false) < KEPT || pool.ready(true) < KEPT_LOOPBACK {
            assert!(std::time::Instant::now() < deadline, "the pool fills up");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(pool.ready(false), KEPT, "no more than it keeps");
        assert_eq!(pool.ready(true), KEPT_LOOPBACK, "no more than it keeps");
    }

    #[test]
    fn the_emptier_stock_is_filled_first() {
        let mut state = State::default();
        assert_eq!(state.next(), Some(false), "both empty: loopback down first");
        let fd = || own_netns().expect("a descriptor");
        state.ready.push(fd());
        assert_eq!(state.next(), Some(true));
        state.looped.push(fd());
        state.ready.push(fd());
        // 2 of 8 against 1 of 4: equally short, loopback down first.
        assert_eq!(state.next(), Some(false));
        state.ready.push(fd());
        assert_eq!(state.next(), Some(true));
        while state.ready.len() < KEPT {
            state.ready.push(fd());
        }
        assert_eq!(state.next(), Some(true));
        while state.looped.len() < KEPT_LOOPBACK {
            state.looped.push(fd());
        }
        assert_eq!(state.next(), None, "both full");
        state.ready.pop();
        assert_eq!(state.next(), Some(false));
    }
}
