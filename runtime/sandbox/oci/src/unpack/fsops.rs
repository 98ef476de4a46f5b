//! Directory-relative file operations that never follow a symbolic link out of the image root.
//!
//! Directories are opened with `openat2(RESOLVE_IN_ROOT)`: a symbolic link met on the way is
//! resolved as if the image root were `/` (as the sandbox resolves it), so an earlier layer's
//! `etc -> /host` makes a later `etc/passwd` land in `<root>/host/passwd`. The last component
//! of a path is never followed: files are created with `O_CREAT | O_EXCL | O_NOFOLLOW` after
//! whatever was there is removed, and removal itself never follows a link.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

/// The resolution of every directory lookup below the root.
fn in_root() -> ResolveFlags {
    ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_XDEV
}

/// Open the directory `rel` (relative to the image root `root`) as an `O_PATH` descriptor,
/// resolving symbolic links inside the root.
pub fn open_dir(root: &OwnedFd, rel: &Path) -> io::Result<OwnedFd> {
    open_dir_with(root, rel, OFlags::PATH)
}

/// Open the directory `rel` for reading (to set its mode), resolving links inside the root.
pub fn open_dir_readable(root: &OwnedFd, rel: &Path) -> io::Result<OwnedFd> {
    open_dir_with(root, rel, OFlags::RDONLY)
}

/// The directory `rel` beneath `root` opened with `access`, links resolved inside the root.
fn open_dir_with(root: &OwnedFd, rel: &Path, access: OFlags) -> io::Result<OwnedFd> {
    let rel: &Path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    Ok(rustix::fs::openat2(
        root,
        rel,
        access | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        in_root(),
    )?)
}

/// The type of `name` in `dir`, not following a link; `None` if absent.
pub fn kind(dir: impl AsFd, name: &OsStr) -> io::Result<Option<FileType>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Remove `name` from `dir` whatever it is (a directory with all it holds), never following
/// a link. Absent is fine.
pub fn remove(dir: impl AsFd, name: &OsStr) -> io::Result<()> {
    let dir = dir.as_fd();
    match kind(dir, name)? {
        None => Ok(()),
        Some(FileType::Directory) => {
            let sub = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            // A directory the image made read-only is emptied all the same.
            let _ = rustix::fs::fchmod(&sub, Mode::from_raw_mode(0o700));
            for child in children(&sub)? {
                remove(&sub, &child)?;
            }
            Ok(rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?)
        }
        Some(_) => Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?),
    }
}

/// The names in the directory `dir` (without `.` and `..`).
pub fn children(dir: impl AsFd) -> io::Result<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    // `dir` may be an `O_PATH` descriptor, which cannot be read: reopen it for reading.
    let readable = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for entry in rustix::fs::Dir::new(readable)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(out)
}

/// Remove the directory tree at `path` (a path of the cache), never following a link.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    let dir = rustix::fs::open(
        parent,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    remove(&dir, name)
}
