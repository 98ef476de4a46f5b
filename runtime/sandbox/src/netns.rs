//! Network namespaces made ahead of demand, off the sandboxes' critical path.
//!
//! Creating a network namespace is the largest single cost of a sandbox's `clone` (the kernel
//! sets up every protocol's per-namespace state and registers the loopback device), and it
//! waits for the RTNL lock, which the kernel's clean-up of ended namespaces holds for
//! milliseconds at a time. So the backend keeps a few never-used namespaces ready: a thread of
//! the runtime makes each (`unshare(CLONE_NEWNET)`, its `/proc/thread-self/ns/net` opened, the
//! thread back in the runtime's own namespace), and each sandbox takes one, whose descriptor
//! travels with its provision; its outer process enters it (`setns`) before it creates PID 1,
//! which then gets no network namespace of its own making.
//!
//! Two stocks are kept: namespaces as the kernel makes them, loopback down, for sandboxes
//! without egress (nothing in them can reach even themselves over IP), and namespaces whose
//! loopback the thread brought up, for sandboxes with egress (their relay listens there).
//!
//! A namespace is handed out once and never comes back: it ends with the last process of its
//! sandbox. It belongs to the host's user namespace, so the sandbox's root holds no capability
//! over it (it cannot configure its interfaces, which the tool could not anyway). When its
//! stock is empty (a burst of sandboxes) or the runtime may not make namespaces (not root), a
//! sandbox creates its own in its `clone`, as it always could.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// How many namespaces with loopback down the pool keeps ready.
pub(super) const KEPT: usize = 8;
/// How many namespaces with loopback up the pool keeps ready.
pub(super) const KEPT_LOOPBACK: usize = 4;

#[derive(Debug, Default)]
struct State {
    /// Loopback down.
    ready: Vec<OwnedFd>,
    /// Loopback up.
    looped: Vec<OwnedFd>,
    /// Set when the pool is dropped (the thread ends) or the thread cannot make namespaces.
    closed: bool,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when a namespace is taken or the pool closes.
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

/// Up to [`KEPT`] never-used network namespaces with loopback down and [`KEPT_LOOPBACK`] with
/// it up, refilled by a thread of their own.
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

    /// A never-used namespace, its loopback up if `loopback` (for a sandbox with egress), if
    /// one is ready.
    pub(super) fn take(&self, loopback: bool) -> Option<OwnedFd> {
        let taken = self.shared.lock().stock(loopback).pop();
        if taken.is_some() {
            self.shared.wanted.notify_one();
        }
        taken
    }

    /// How many namespaces with loopback up (`loopback`) or down are ready now.
    #[cfg(test)]
    pub(super) fn ready(&self, loopback: bool) -> usize {
        self.shared.lock().stock(loopback).len()
    }
}

impl Drop for NetnsPool {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        state.ready.clear();
        state.looped.clear();
        self.shared.wanted.notify_one();
    }
}

/// The pool's thread: keeps both stocks full until the pool is dropped; ends at the first
/// namespace it cannot make (the pool stays empty).
fn fill(shared: &Shared) {
    let Ok(home) = own_netns() else {
        shared.lock().closed = true;
        return;
    };
    loop {
        let up = {
            let mut state = shared.lock();
            loop {
                if state.closed {
                    return;
                }
                match state.next() {
                    Some(up) => break up,
                    None => {
                        state = shared
                            .wanted
                            .wait(state)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                }
            }
        };
        match make(&home, up) {
            Ok(netns) => {
                let mut state = shared.lock();
                if state.closed {
                    return;
                }
                state.stock(up).push(netns);
            }
            Err(e) => {
                tracing::debug!(error = %e, "no network namespaces ahead of demand");
                shared.lock().closed = true;
                return;
            }
        }
    }
}

/// This thread's network namespace.
fn own_netns() -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        "/proc/thread-self/ns/net",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?)
}

/// A new network namespace, its loopback up if `loopback`, made by this thread, which then
/// returns to `home`.
fn make(home: &OwnedFd, loopback: bool) -> std::io::Result<OwnedFd> {
    // SAFETY: only the network namespace is unshared, never the descriptor table.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }?;
    let made = if loopback {
        loopback_up().map_err(std::io::Error::other)
    } else {
        Ok(())
    }
    .and_then(|()| own_netns());
    rustix::thread::move_into_link_name_space(
        std::os::fd::AsFd::as_fd(home),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )?;
    made
}

/// Brings the loopback interface of this thread's network namespace up (it starts down,
/// without its addresses routed).
pub(crate) fn loopback_up() -> Result<(), String> {
    let sock = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )
    .map_err(|e| format!("socket for SIOCSIFFLAGS: {e}"))?;
    // SAFETY: `ifreq` is a plain C struct (a name and a union of integers and addresses), for
    // which all-zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo") {
        *dst = *src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads one `ifreq` through the pointer, which is valid for the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) };
    if rc != 0 {
        return Err(format!(
            "bringing loopback up: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inode of a namespace descriptor: which namespace it is.
    fn inode(fd: &OwnedFd) -> u64 {
        rustix::fs::fstat(fd).expect("fstat").st_ino
    }

    /// Whether the loopback interface of the namespace `fd` is up, asked from a thread that
    /// enters it (and ends there).
    fn loopback_is_up(fd: &OwnedFd) -> bool {
        let fd = fd.try_clone().expect("dup");
        std::thread::spawn(move || {
            rustix::thread::move_into_link_name_space(
                std::os::fd::AsFd::as_fd(&fd),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .expect("setns");
            let sock = rustix::net::socket(
                rustix::net::AddressFamily::INET,
                rustix::net::SocketType::DGRAM,
                None,
            )
            .expect("socket");
            // SAFETY: all-zero bytes are a valid `ifreq`.
            let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
            for (dst, src) in req.ifr_name.iter_mut().zip(b"lo") {
                *dst = *src as libc::c_char;
            }
            // SAFETY: SIOCGIFFLAGS writes one `ifreq` through the pointer, valid for the call.
            let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) };
            assert_eq!(rc, 0, "SIOCGIFFLAGS: {}", std::io::Error::last_os_error());
            // SAFETY: SIOCGIFFLAGS filled the union's flags.
            let flags = unsafe { req.ifr_ifru.ifru_flags };
            flags & libc::IFF_UP as libc::c_short != 0
        })
        .join()
        .expect("the asking thread")
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
