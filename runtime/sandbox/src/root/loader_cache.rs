//! The dynamic loader's cache of an image of host binaries.
//!
//! Without `/etc/ld.so.cache` glibc's loader finds each library the tool needs by trying every
//! default directory and each of its `glibc-hwcaps` subdirectories in turn: for a program
//! linked against `libgcc_s.so.1` and `libc.so.6`, some 35 failed `openat` and `newfstatat`
//! calls on every start, each a path walk that a tmpfs does not even remember as a negative
//! entry. The host's cache would spare them but lists every library of the host. So the image
//! gets a cache of its own, made by the host's `ldconfig` with the image as its root: it lists
//! only the libraries copied into the image's library directories, which the tool can read
//! anyway.
//!
//! Only for images of host files (never an OCI image's tree, whose files the host's `ldconfig`
//! must not parse as root; such an image brings its own cache or none), and best effort: with
//! no `ldconfig` (a host without glibc) or when it fails, the image has no cache and the loader
//! searches as before.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::in_root;
use crate::SandboxError;

/// The loader's cache a binary's image gets where the host has [`ldconfig`].
pub const LOADER_CACHE: &str = "/etc/ld.so.cache";

/// Where glibc's `ldconfig` is looked for.
const LDCONFIG: &[&str] = &["/sbin/ldconfig", "/usr/sbin/ldconfig"];

/// The host's `ldconfig`, if it has glibc's.
pub fn ldconfig() -> Option<&'static Path> {
    LDCONFIG.iter().map(Path::new).find(|p| p.is_file())
}

/// Whether the image `root` holds [`LOADER_CACHE`] already (whatever it is: never followed).
///
/// # Errors
/// When its `/etc` cannot be opened or looked in.
pub(super) fn present(root: &OwnedFd) -> Result<bool, SandboxError> {
    let path = Path::new(LOADER_CACHE.trim_start_matches('/'));
    let (etc, name) =
        in_root::parent(root, path).map_err(|e| SandboxError::io("image: open /etc", e))?;
    in_root::kind(&etc, name)
        .map(|found| found.is_some())
        .map_err(|e| SandboxError::io(format!("image: stat {LOADER_CACHE}"), e))
}

/// Writes [`LOADER_CACHE`] into the image `root` (a detached mount of this process) with the
/// host's `ldconfig`, links left as they are (`-X`). Blocking (it runs a process).
///
/// # Errors
/// Why no cache was written: no `ldconfig`, or how it failed.
pub(super) fn write(root: &OwnedFd) -> Result<(), String> {
    let ldconfig = ldconfig().ok_or_else(|| format!("no ldconfig at {}", LDCONFIG.join(" or ")))?;
    // The detached mount has no path of its own but its descriptor, which `ldconfig` inherits
    // and reaches through its own `/proc/self` (never another process's fd table).
    let fd = root.as_raw_fd();
    let mut cmd = Command::new(ldconfig);
    cmd.args(["-X", "-r", &format!("/proc/self/fd/{fd}")])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure makes one async-signal-safe system call
    // (fcntl) on a descriptor the child inherited open (this process holds `root` until the
    // child has been reaped).
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ldconfig.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} {}: {}",
            ldconfig.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
