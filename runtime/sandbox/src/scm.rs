//! Descriptors passed with a message over a Unix socket (`SCM_RIGHTS`): how the host, the
//! zygote and each sandbox's init hand each other descriptors.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// The most descriptors one message carries (a sandbox handed to the zygote, a provision).
pub(crate) const MAX_FDS: usize = 3;

/// Sends as much of `bytes` on `socket` as it takes at once, with `fds` attached to it; never
/// raises `SIGPIPE`.
///
/// # Errors
/// The socket's, or `E2BIG` for more than [`MAX_FDS`] descriptors.
pub(crate) fn send(
    socket: impl AsFd,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
    flags: SendFlags,
) -> Result<usize, Errno> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    if fds.len() > MAX_FDS
        || (!fds.is_empty() && !ancillary.push(SendAncillaryMessage::ScmRights(fds)))
    {
        return Err(Errno::TOOBIG);
    }
    rustix::net::sendmsg(
        socket,
        &[std::io::IoSlice::new(bytes)],
        &mut ancillary,
        flags | SendFlags::NOSIGNAL,
    )
}

/// One read of `socket` into `buf`, with the descriptors that came with it, close-on-exec
/// (room for one more than [`MAX_FDS`], so that a message carrying too many is seen as such);
/// an interrupted read is tried again.
///
/// # Errors
/// The socket's.
pub(crate) fn recv(
    socket: impl AsFd,
    buf: &mut [u8],
    flags: RecvFlags,
) -> Result<(usize, Vec<OwnedFd>), Errno> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS + 1))];
    loop {
        let mut ancillary = RecvAncillaryBuffer::new(&mut space);
        let got = match rustix::net::recvmsg(
            socket.as_fd(),
            &mut [std::io::IoSliceMut::new(buf)],
            &mut ancillary,
            flags | RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(Errno::INTR) => continue,
            other => other?,
        };
        let mut fds = Vec::new();
        for msg in ancillary.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = msg {
                fds.extend(received);
            }
        }
        return Ok((got.bytes, fds));
    }
}
