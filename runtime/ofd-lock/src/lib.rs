//! Open-file-description byte locks (`F_OFD_SETLK`): machine-wide, crash-safe claims.
//!
//! A lock on one byte of a file belongs to the open file description that set it: another
//! `open` of the same file — in another process or in this one — cannot take that byte until
//! the holder clears it or its file is closed (which the kernel does when a process dies, so a
//! crash frees every claim with no cleanup). Locks may lie beyond the end of the file, so one
//! empty file holds any number of claims, each at its own offset.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Opens (creating it, mode 0600, and its directory, mode 0700, if missing) the lock file at
/// `path`, close-on-exec.
///
/// # Errors
/// The directory cannot be created or the file opened.
pub fn open(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Takes byte `offset` of `file` without waiting: `Ok(false)` when another open file
/// description holds it.
///
/// # Errors
/// Any other `fcntl` failure.
pub fn try_lock(file: &File, offset: u64) -> io::Result<bool> {
    match set(file, offset, libc::F_WRLCK) {
        Ok(()) => Ok(true),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Releases byte `offset` of `file`.
///
/// # Errors
/// The `fcntl` failure.
pub fn unlock(file: &File, offset: u64) -> io::Result<()> {
    set(file, offset, libc::F_UNLCK)
}

fn set(file: &File, offset: u64, kind: libc::c_int) -> io::Result<()> {
    let start = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "lock offset too large"))?;
    // SAFETY: `flock` is a plain C struct for which all-zero bytes are a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = 1;
    // SAFETY: F_OFD_SETLK reads the `flock` it is given, which lives for the call; the fd is
    // open for as long as `file` is borrowed. (`l_pid` must be 0 for OFD locks: zeroed above.)
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &fl) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_held_by_one_open_is_refused_to_another_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/locks");
        let a = open(&path).unwrap();
        let b = open(&path).unwrap();
        assert!(try_lock(&a, 7).unwrap());
        assert!(!try_lock(&b, 7).unwrap());
        assert!(try_lock(&b, 8).unwrap());
        // Far beyond the end of the (empty) file.
        assert!(try_lock(&a, 1 << 60).unwrap());
        assert!(!try_lock(&b, 1 << 60).unwrap());
        unlock(&a, 7).unwrap();
        assert!(try_lock(&b, 7).unwrap());
        // Closing a file releases all it held.
        drop(a);
        assert!(try_lock(&b, 1 << 60).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}
