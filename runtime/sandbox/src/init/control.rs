//! One end of a sandbox's control socket inside it (PID 1's, or the gVisor guest's):
//! line-delimited JSON.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use serde::de::DeserializeOwned;

use crate::protocol::{FromInit, MAX_LINE};

/// The exit status of an init whose host went away during the job.
pub(super) const HOST_GONE: i32 = 125;

/// One end of the control socket, line-delimited JSON.
pub(super) struct Control {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Control {
    pub(super) fn new(fd: OwnedFd) -> std::io::Result<Self> {
        let stream = UnixStream::from(fd);
        let writer = stream.try_clone()?;
        Ok(Self {
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// The next message; `None` at end of stream (the host is gone).
    pub(super) fn recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>, String> {
        let mut line = String::new();
        let n = (&mut self.reader)
            .take(MAX_LINE as u64)
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the control socket: {e}"))?;
        if n == 0 {
            return Ok(None);
        }
        serde_json::from_str(&line)
            .map(Some)
            .map_err(|e| format!("malformed control message: {e}"))
    }

    /// The socket itself, to watch for the host's end closing (the runtime gone, killed
    /// included).
    pub(super) fn socket(&self) -> BorrowedFd<'_> {
        self.writer.as_fd()
    }

    pub(super) fn send(&mut self, msg: &FromInit) {
        if let Some(line) = line(msg) {
            // The host may be gone; then nobody is listening and the sandbox dies anyway.
            let _ = self.writer.write_all(&line);
        }
    }
}

/// Sends `msg` on the control socket `fd` without a [`Control`], with `fds` attached
/// (`SCM_RIGHTS`) if any: the zygote's messages about a sandbox it starts, short, on a socket
/// nobody else has written to yet, so one `sendmsg` holds the line.
pub(super) fn send_on(fd: &impl AsFd, msg: &FromInit, fds: &[BorrowedFd<'_>]) {
    if let Some(line) = line(msg) {
        // The host may be gone; then nobody is listening.
        let _ = crate::scm::send(fd, &line, fds, rustix::net::SendFlags::empty());
    }
}

/// `msg` as a line of the protocol.
fn line(msg: &FromInit) -> Option<Vec<u8>> {
    let mut line = serde_json::to_vec(msg).ok()?;
    line.push(b'\n');
    Some(line)
}
