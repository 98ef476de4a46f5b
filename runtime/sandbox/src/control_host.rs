//! The host's end of a sandbox's control socket: a line of JSON per message both ways, and the
//! descriptors the zygote attaches to its first message (`SCM_RIGHTS`: PID 1's pidfd).

use std::io;
use std::os::fd::OwnedFd;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

use crate::protocol::{FromInit, MAX_LINE};
use crate::scm;
use crate::SandboxError;

/// The host's end of one sandbox's control socket.
#[derive(Debug)]
pub(crate) struct ControlHost {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    /// Bytes read past the first message's line by [`ControlHost::recv_with_fds`]: the start
    /// of the next messages.
    pending: Vec<u8>,
    /// Whether a message has been read.
    read_one: bool,
}

impl ControlHost {
    /// The host end of `stream`.
    pub(crate) fn new(stream: UnixStream) -> Self {
        let (read, write) = stream.into_split();
        Self {
            reader: BufReader::new(read),
            writer: write,
            pending: Vec::new(),
            read_one: false,
        }
    }

    /// Sends one message, a line of JSON.
    pub(crate) async fn send<T: serde::Serialize>(&mut self, msg: &T) -> Result<(), SandboxError> {
        let mut line = serde_json::to_vec(msg)
            .map_err(|e| SandboxError::Protocol(format!("cannot encode a message: {e}")))?;
        line.push(b'\n');
        self.writer
            .write_all(&line)
            .await
            .map_err(|e| SandboxError::io("writing to the sandbox's init", e))
    }

    /// The next message of the init.
    pub(crate) async fn recv(&mut self) -> Result<FromInit, SandboxError> {
        self.read_one = true;
        let mut line = std::mem::take(&mut self.pending);
        if let Some(end) = line_end(&line) {
            self.pending = line.split_off(end);
            return parse(&line);
        }
        let room = MAX_LINE.saturating_sub(line.len()) as u64;
        let n = (&mut self.reader)
            .take(room)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| SandboxError::io("reading from the sandbox's init", e))?;
        if n == 0 && line_end(&line).is_none() {
            return Err(ended(&line));
        }
        parse(&line)
    }

    /// The first message of the init and the descriptors that came with it (read with the
    /// first message only: before it, nothing has been read into the buffer).
    pub(crate) async fn recv_with_fds(&mut self) -> Result<(FromInit, Vec<OwnedFd>), SandboxError> {
        if std::mem::replace(&mut self.read_one, true) {
            return Err(SandboxError::Misuse(
                "descriptors come with the init's first message only",
            ));
        }
        let socket: &UnixStream = self.reader.get_ref().as_ref();
        let mut line = Vec::new();
        let mut fds = Vec::new();
        // A message is a few dozen bytes; the kernel ends a read after the data that came
        // with descriptors, so nothing of a later message comes with them.
        let mut chunk = [0u8; 4096];
        let end = loop {
            let (n, got) = recv_some(socket, &mut chunk)
                .await
                .map_err(|e| SandboxError::io("reading from the sandbox's init", e))?;
            fds.extend(got);
            if n == 0 {
                return Err(ended(&line));
            }
            line.extend_from_slice(&chunk[..n]);
            if let Some(end) = line_end(&line) {
                break end;
            }
            if line.len() > MAX_LINE {
                return Err(SandboxError::Protocol(format!(
                    "a message longer than {MAX_LINE} bytes"
                )));
            }
        };
        self.pending = line.split_off(end);
        Ok((parse(&line)?, fds))
    }
}

/// Where the first line of `bytes` ends (just past its newline), if it is whole.
fn line_end(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n').map(|i| i + 1)
}

/// The error of a stream that ended after `partial`, a message's start or nothing.
fn ended(partial: &[u8]) -> SandboxError {
    SandboxError::Protocol(if partial.is_empty() {
        "it exited without a word".to_string()
    } else {
        format!(
            "it ended in the middle of a message ({} bytes read)",
            partial.len()
        )
    })
}

fn parse(line: &[u8]) -> Result<FromInit, SandboxError> {
    serde_json::from_slice(line)
        .map_err(|e| SandboxError::Protocol(format!("malformed message: {e}")))
}

/// One read of `socket` into `buf`, with the descriptors that came with it ([`scm::recv`]).
async fn recv_some(socket: &UnixStream, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    loop {
        socket.readable().await?;
        let got = socket.try_io(tokio::io::Interest::READABLE, || {
            scm::recv(socket, &mut *buf, rustix::net::RecvFlags::DONTWAIT).map_err(io::Error::from)
        });
        match got {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsFd, BorrowedFd};

    use super::ControlHost;
    use crate::protocol::FromInit;

    /// Sends `bytes` on `socket` in one message, with `fds` attached.
    fn send(socket: &std::os::unix::net::UnixStream, bytes: &[u8], fds: &[BorrowedFd<'_>]) {
        let sent =
            crate::scm::send(socket, bytes, fds, rustix::net::SendFlags::empty()).expect("sendmsg");
        assert_eq!(sent, bytes.len());
    }

    fn pair() -> (ControlHost, std::os::unix::net::UnixStream) {
        let (host, init) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        host.set_nonblocking(true).expect("nonblocking");
        let host = tokio::net::UnixStream::from_std(host).expect("tokio");
        (ControlHost::new(host), init)
    }

    fn line(msg: &FromInit) -> Vec<u8> {
        let mut line = serde_json::to_vec(msg).expect("json");
        line.push(b'\n');
        line
    }

    #[tokio::test]
    async fn the_first_message_brings_its_descriptor_and_the_next_line_is_kept() {
        let (mut host, init) = pair();
        let spawned = FromInit::Spawned { pid1: 42 };
        // Both lines in one write, the descriptor with them: the second is read with the first.
        let mut both = line(&spawned);
        both.extend(line(&FromInit::Ready));
        let file = tempfile::tempfile().expect("a file");
        send(&init, &both, &[file.as_fd()]);
        let (first, fds) = host.recv_with_fds().await.expect("the first message");
        assert_eq!(first, spawned);
        assert_eq!(fds.len(), 1, "the descriptor came with it");
        assert_eq!(host.recv().await.expect("the second"), FromInit::Ready);
        // Then the socket again, a line split over two writes.
        let exited = line(&FromInit::Exited { code: 3 });
        send(&init, &exited[..5], &[]);
        send(&init, &exited[5..], &[]);
        assert_eq!(
            host.recv().await.expect("the third"),
            FromInit::Exited { code: 3 }
        );
        drop(init);
        let err = host.recv().await.expect_err("end of stream");
        assert!(err.to_string().contains("exited without a word"), "{err}");
    }

    #[tokio::test]
    async fn a_first_message_in_pieces_comes_whole_and_no_later_one_brings_descriptors() {
        let (mut host, init) = pair();
        let failed = line(&FromInit::Failed {
            message: "no namespaces".into(),
        });
        // The line in two writes, without a descriptor.
        send(&init, &failed[..7], &[]);
        send(&init, &failed[7..], &[]);
        let (first, fds) = host.recv_with_fds().await.expect("the first message");
        assert!(matches!(first, FromInit::Failed { .. }), "{first:?}");
        assert!(fds.is_empty());
        let err = host
            .recv_with_fds()
            .await
            .expect_err("descriptors only with the first message");
        assert!(err.to_string().contains("first message only"), "{err}");
    }

    #[tokio::test]
    async fn a_first_message_that_never_ends_its_line_is_refused_at_end_of_stream() {
        let (mut host, init) = pair();
        send(&init, b"{\"ready\"", &[]);
        drop(init);
        let err = host.recv_with_fds().await.expect_err("no whole line");
        assert!(
            err.to_string()
                .contains("ended in the middle of a message (8 bytes read)"),
            "{err}"
        );
    }
}
