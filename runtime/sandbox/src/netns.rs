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
//! A namespace is handed out once and never comes back: it ends with the last process of its
//! sandbox. It belongs to the host's user namespace, so the sandbox's root holds no capability
//! over it (it cannot configure its interfaces, which the tool could not anyway); the outer
//! process, the host's root, brings its loopback up when the sandbox has egress. When the pool
//! is empty (a burst of sandboxes) or the runtime may not make namespaces (not root), a sandbox
//! creates its own in its `clone`, as it always could.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// How many namespaces the pool keeps ready.
pub(super) const KEPT: usize = 8;

#[derive(Debug, Default)]
struct State {
    ready: Vec<OwnedFd>,
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

/// Up to [`KEPT`] never-used network namespaces, refilled by a thread of their own.
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

    /// A never-used namespace, if one is ready.
    pub(super) fn take(&self) -> Option<OwnedFd> {
        let taken = self.shared.lock().ready.pop();
        if taken.is_some() {
            self.shared.wanted.notify_one();
        }
        taken
    }

    /// How many namespaces are ready now.
    #[cfg(test)]
    pub(super) fn ready(&self) -> usize {
        self.shared.lock().ready.len()
    }
}

impl Drop for NetnsPool {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        state.ready.clear();
        self.shared.wanted.notify_one();
    }
}

/// The pool's thread: keeps [`KEPT`] namespaces ready until the pool is dropped; ends at the
/// first namespace it cannot make (the pool stays empty).
fn fill(shared: &Shared) {
    let Ok(home) = own_netns() else {
        shared.lock().closed = true;
        return;
    };
    loop {
        {
            let mut state = shared.lock();
            while !state.closed && state.ready.len() >= KEPT {
                state = shared
                    .wanted
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.closed {
                return;
            }
        }
        match make(&home) {
            Ok(netns) => {
                let mut state = shared.lock();
                if state.closed {
                    return;
                }
                state.ready.push(netns);
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

/// A new network namespace, made by this thread, which then returns to `home`.
fn make(home: &OwnedFd) -> std::io::Result<OwnedFd> {
    // SAFETY: only the network namespace is unshared, never the descriptor table.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }?;
    let made = own_netns();
    rustix::thread::move_into_link_name_space(
        std::os::fd::AsFd::as_fd(home),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )?;
    made
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inode of a namespace descriptor: which namespace it is.
    fn inode(fd: &OwnedFd) -> u64 {
        rustix::fs::fstat(fd).expect("fstat").st_ino
    }

    #[test]
    fn the_pool_hands_out_distinct_fresh_namespaces_and_refills() {
        if !rustix::process::geteuid().is_root() {
            // Without CAP_SYS_ADMIN the thread cannot make namespaces: the pool stays empty.
            let pool = NetnsPool::start().expect("a thread");
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(pool.take().is_none());
            return;
        }
        let own = inode(&own_netns().expect("own namespace"));
        let pool = NetnsPool::start().expect("a thread");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut seen = std::collections::HashSet::new();
        let mut taken = Vec::new();
        while taken.len() < 3 * KEPT {
            assert!(std::time::Instant::now() < deadline, "the pool refills");
            match pool.take() {
                Some(fd) => {
                    let ino = inode(&fd);
                    assert_ne!(ino, own, "not this process's namespace");
                    assert!(seen.insert(ino), "each namespace is handed out once");
                    taken.push(fd);
                }
                None => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
        // This thread never left its namespace; the pool's thread went back to it too.
        assert_eq!(inode(&own_netns().expect("own namespace")), own);
        while pool.ready() < KEPT {
            assert!(std::time::Instant::now() < deadline, "the pool fills up");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(pool.ready(), KEPT, "no more than it keeps");
    }
}
