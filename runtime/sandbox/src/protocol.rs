//! The messages between the host side of the Linux backend and `escepine-sandbox-init`.
//!
//! Each sandbox has a Unix stream socket between the host and its init (the zygote, then the
//! sandbox's PID 1); every message is one line of JSON. The host sends [`Provision`] first, with the read end of the tool's stdin
//! pipe, the spec's root image (a detached mount) and, when [`Provision::netns`] says so, a
//! network namespace attached (`SCM_RIGHTS`), then hands the socket to the zygote, which answers
//! [`FromInit::Spawned`] once the sandbox's PID 1 exists and its identity maps are written (with
//! a pidfd of PID 1 attached, made by the `clone` itself), and
//! PID 1 answers [`FromInit::Ready`] (or [`FromInit::Failed`]) once the sandbox is built. Then
//! the sandbox waits — a warm pool keeps it waiting — until the host sends [`Exec`], after which
//! PID 1 reports [`FromInit::Exited`] or [`FromInit::Signaled`] for the tool and exits, which
//! ends the sandbox's PID namespace.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Limits;

/// The proxy socket's file name in its host directory.
pub const PROXY_SOCKET: &str = "proxy.sock";
/// The loopback port of the relay inside the sandbox.
pub const RELAY_PORT: u16 = 3128;
/// The tool's working directory, `$HOME` and `$TMPDIR`: the only writable place.
pub const WORKSPACE: &str = "/workspace";
/// The sandbox's host name.
pub const HOSTNAME: &str = "escepine-sandbox";
/// The longest message line either side accepts.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// How to build one sandbox (host → init, first line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Provision {
    /// The outside user id the sandbox's uid 0 maps to.
    pub outside_uid: u32,
    /// The outside group id the sandbox's gid 0 maps to.
    pub outside_gid: u32,
    /// Host files and directories present read-only (copied into the root image), each at its
    /// own path inside.
    pub read_only: Vec<PathBuf>,
    /// Host paths bound read-only (never copied) at the same path inside: the record's
    /// `sandbox_profile.read_only` (an interpreter's installation, a virtualenv, a server's code).
    #[serde(default)]
    pub binds: Vec<PathBuf>,
    /// The host directory holding the proxy socket, which PID 1 opens (never mounted); `None`
    /// means no network at all (loopback stays down, no relay).
    pub proxy_dir: Option<PathBuf>,
    /// Resource limits of the tool.
    pub limits: Limits,
    /// The sandbox's memory cgroup (a directory of the host's cgroup file system), which PID 1
    /// joins before it creates any process (through a file the zygote opened).
    #[serde(default)]
    pub cgroup: Option<PathBuf>,
    /// Whether a never-used network namespace of the host's making (its loopback up when the
    /// sandbox has egress) comes as the third descriptor: the zygote enters it to clone PID 1,
    /// which then makes none. Otherwise PID 1 gets a network namespace of its
    /// own in its `clone`.
    #[serde(default)]
    pub netns: bool,
}

/// How the guest of a gVisor sandbox sets up (host → guest, first line, once the guest has
/// connected to the control socket).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuestSetup {
    /// Resource limits of the tool.
    pub limits: Limits,
    /// Whether the sandbox has egress: the guest runs the loopback relay to the proxy socket.
    pub proxy: bool,
}

/// Where a gVisor sandbox's guest finds the host's sockets: a host directory bound here, which
/// the guest detaches (with its own binary and libraries) before the tool starts.
pub const GUEST_DIR: &str = "/.escepine";
/// The guest's control socket's file name in the host's socket directory.
pub const CONTROL_SOCKET: &str = "control.sock";

/// Run the tool (host → init, second line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exec {
    /// The program (a path bound into the sandbox) and its arguments.
    pub argv: Vec<String>,
    /// The tool's entire environment.
    pub env: Vec<(String, String)>,
    /// The tool's working directory (an image's `WorkingDir`); the workspace when absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Files PID 1 writes into the workspace and binds read-only over themselves before the
    /// tool starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ExecFile>,
}

/// One workspace input of [`Exec`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecFile {
    /// Its name in the workspace (checked again by PID 1: a file name, never a path).
    pub name: String,
    /// Its bytes, hex-encoded (a line of JSON carries no raw bytes; 16 MiB of inputs is 32 MiB
    /// of hex, below [`MAX_LINE`]).
    pub hex: String,
}

impl ExecFile {
    /// The message form of a job's files.
    pub fn all(files: &escepine_contract::WorkspaceFiles) -> Vec<Self> {
        files
            .iter()
            .map(|(name, file)| Self {
                name: name.to_owned(),
                hex: hex::encode(file.bytes()),
            })
            .collect()
    }
}

/// What init reports (init → host).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromInit {
    /// The sandbox's PID 1 exists (its pid in the host's PID namespace) and its maps are
    /// written. A pidfd of it comes with the message (`SCM_RIGHTS`): the host kills and waits
    /// for PID 1 through it, never through the pid, which the kernel may give to another
    /// process once PID 1 has ended.
    Spawned {
        /// Host pid of the sandbox's PID 1 (the zygote's child).
        pid1: i32,
    },
    /// The sandbox is built and waits for [`Exec`].
    Ready,
    /// Building the sandbox or starting the tool failed.
    Failed {
        /// What failed, for the evidence.
        message: String,
    },
    /// The tool exited with this status.
    Exited {
        /// The exit status.
        code: i32,
    },
    /// The tool was killed by this signal.
    Signaled {
        /// The signal number.
        signal: i32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_files_a_call_may_have_fit_in_one_line() {
        let cap = escepine_contract::files::MAX_WORKSPACE_INPUT_BYTES as usize;
        let files = escepine_contract::WorkspaceFiles::new()
            .with("a", vec![0xffu8; cap / 2])
            .with("b", vec![0u8; cap / 2]);
        let exec = Exec {
            argv: vec!["/bin/tool".into()],
            env: Vec::new(),
            cwd: None,
            files: ExecFile::all(&files),
        };
        let line = serde_json::to_string(&exec).expect("encode");
        assert!(line.len() < MAX_LINE, "{} bytes", line.len());
        let back: Exec = serde_json::from_str(&line).expect("decode");
        assert_eq!(back.files.len(), 2);
        assert_eq!(
            hex::decode(&back.files[0].hex).map(|b| b.len()),
            Ok(cap / 2)
        );
    }
}
