//! PID 1 while the tool runs, on its one thread: it reaps every process of the sandbox that
//! ends (orphans are re-parented to it), serves the loopback relay when the sandbox has egress
//! (`relay`), and watches the host's end of the control socket when asked to (the gVisor
//! guest) — until the tool itself has ended. With neither a relay nor a host to watch it only
//! waits in `wait` ([`spawn::reap`]).
//!
//! `SIGCHLD` arrives through a descriptor (`signalfd`), so that a child's end wakes the same
//! `poll` as the sockets. It is blocked in this thread from the loop's start on: the tool's
//! process, started before, keeps its own signal mask, and nothing is started after. Children
//! that ended before the block are reaped on the loop's first round.

use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};

use rustix::event::{PollFd, PollFlags};

use super::control::HOST_GONE;
use super::relay::{Relay, Socket};
use super::{exit, spawn};
use crate::protocol::FromInit;

/// Reaps every process until the tool `tool` has ended, serving `relay` and ending this
/// process ([`HOST_GONE`]) once `host`'s peer has closed it: the tool's status.
pub(super) fn until_tool_ends(
    tool: i32,
    mut relay: Option<Relay>,
    host: Option<BorrowedFd<'_>>,
) -> Result<FromInit, String> {
    if relay.is_none() && host.is_none() {
        return spawn::reap(tool);
    }
    let children = sigchld()?;
    loop {
        if let Some(status) = spawn::reap_ended(tool)? {
            return Ok(status);
        }
        let (children_ended, host_ready, ready) = {
            let interest = relay.as_ref().map(Relay::interest).unwrap_or_default();
            let mut fds = Vec::with_capacity(interest.len() + 2);
            fds.push(PollFd::new(&children, PollFlags::IN));
            if let Some(host) = host {
                fds.push(PollFd::from_borrowed_fd(host, PollFlags::IN));
            }
            let watched = fds.len();
            fds.extend(
                interest
                    .iter()
                    .map(|&(fd, flags, _)| PollFd::from_borrowed_fd(fd, flags)),
            );
            match rustix::event::poll(&mut fds, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(format!("poll: {e}")),
            }
            let ready: Vec<Socket> = interest
                .iter()
                .zip(&fds[watched..])
                .filter(|(_, fd)| !fd.revents().is_empty())
                .map(|(&(_, _, socket), _)| socket)
                .collect();
            (
                !fds[0].revents().is_empty(),
                watched == 2 && !fds[1].revents().is_empty(),
                ready,
            )
        };
        if children_ended {
            drain(&children);
        }
        if let (true, Some(host)) = (host_ready, host) {
            // The host sends nothing after the job: whatever arrives is read and ignored.
            let mut buf = [0u8; 64];
            match rustix::io::read(host, &mut buf) {
                Ok(0) => exit::end(HOST_GONE),
                Ok(_) | Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => {}
                Err(_) => exit::end(HOST_GONE),
            }
        }
        if let Some(relay) = relay.as_mut() {
            relay.advance(&ready);
        }
    }
}

/// `SIGCHLD` blocked in this thread and readable from the descriptor returned (non-blocking).
fn sigchld() -> Result<OwnedFd, String> {
    // SAFETY: a signal set built in place and passed by pointer to calls that only read it;
    // the descriptor `signalfd` returns is new and owned by nothing else.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        let blocked = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if blocked != 0 {
            return Err(format!(
                "blocking SIGCHLD: {}",
                std::io::Error::from_raw_os_error(blocked)
            ));
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(format!("signalfd: {}", std::io::Error::last_os_error()));
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Reads every pending signal off `fd` (the `wait` that follows reaps their children).
fn drain(fd: &OwnedFd) {
    let mut infos = [0u8; 4 * std::mem::size_of::<libc::signalfd_siginfo>()];
    while let Ok(n) = rustix::io::read(fd, &mut infos) {
        if n < infos.len() {
            return;
        }
    }
}
