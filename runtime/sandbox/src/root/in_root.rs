//! File operations inside a root image that never leave it.
//!
//! The image is a tmpfs of the runtime's own, but an OCI image's tree is copied into it as it
//! is, symbolic links included: an image's `dev -> /etc` or `etc -> /root` is a link whose
//! target, followed by an ordinary path lookup, is a **host** directory. So every lookup here
//! starts at the image's root and resolves with `openat2(RESOLVE_IN_ROOT)`: a link met on the
//! way is resolved as the sandbox will resolve it, with the image's root as `/` (`..` stops
//! there), never through a magic link and never onto another mount. The last component of a
//! path is never followed: files are made with `O_CREAT | O_EXCL | O_NOFOLLOW`, links and
//! device nodes in a directory opened that way, and removal never follows a link.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

/// How a directory of the image is looked up: links resolved inside the image.
fn resolution() -> ResolveFlags {
    ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_XDEV
}

/// The directory `rel` of the image `root` (`O_PATH`), links on the way resolved inside it.
pub(super) fn dir(root: &OwnedFd, rel: &Path) -> io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    Ok(rustix::fs::openat2(
        root,
        rel,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        resolution(),
    )?)
}

/// The parent directory of `rel` (opened inside the image) and `rel`'s last name.
pub(super) fn parent<'a>(root: &OwnedFd, rel: &'a Path) -> io::Result<(OwnedFd, &'a OsStr)> {
    let name = match rel.components().next_back() {
        Some(Component::Normal(name)) => name,
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{}` names no entry", rel.display()),
            ))
        }
    };
    let up = rel.parent().unwrap_or(Path::new(""));
    Ok((dir(root, up)?, name))
}

/// Makes every directory of `rel` that is missing (mode 0755); an existing one, or a link
/// resolving inside the image to one, is kept.
pub(super) fn mkdirs(root: &OwnedFd, rel: &Path) -> io::Result<()> {
    let mut at = std::path::PathBuf::new();
    for c in rel.components() {
        let Component::Normal(name) = c else { continue };
        let here = dir(root, &at)?;
        match rustix::fs::mkdirat(&here, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        at.push(name);
    }
    Ok(())
}

/// Creates the file `rel` (its directories first) with `mode`, for writing; fails with
/// `AlreadyExists` when anything — a link included — is there.
pub(super) fn create(root: &OwnedFd, rel: &Path, mode: u32) -> io::Result<File> {
    if let Some(up) = rel.parent() {
        mkdirs(root, up)?;
    }
    let (dir, name) = parent(root, rel)?;
    let fd = rustix::fs::openat(
        &dir,
        name,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    Ok(File::from(fd))
}

/// The type of `name` in `dir`, not following a link; `None` if absent.
pub(super) fn kind(dir: impl AsFd, name: &OsStr) -> io::Result<Option<FileType>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Removes `name` from `dir` whatever it is (a directory with all it holds), never following
/// a link; absent is fine.
pub(super) fn remove(dir: impl AsFd, name: &OsStr) -> io::Result<()> {
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
            let _ = rustix::fs::fchmod(&sub, Mode::from_raw_mode(0o755));
            for child in children(&sub)? {
                remove(&sub, &child)?;
            }
            Ok(rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?)
        }
        Some(_) => Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?),
    }
}

/// The names in the directory `dir` (without `.` and `..`).
fn children(dir: &OwnedFd) -> io::Result<Vec<OsString>> {
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(out)
}

/// The first component of `rel` that is a symbolic link in the image (each looked up inside
/// it), with the link's target.
pub(super) fn first_link(root: &OwnedFd, rel: &Path) -> Option<(std::path::PathBuf, String)> {
    let mut at = std::path::PathBuf::new();
    for c in rel.components() {
        let Component::Normal(name) = c else { continue };
        let here = dir(root, &at).ok()?;
        at.push(name);
        if kind(&here, name).ok()?? == FileType::Symlink {
            let target = rustix::fs::readlinkat(&here, name, Vec::new()).ok()?;
            return Some((at, String::from_utf8_lossy(target.as_bytes()).into_owned()));
        }
    }
    None
}

/// What a top-level entry of the image that is not a plain directory is, in words.
pub(super) fn describe(dir: impl AsFd, name: &OsStr, kind: FileType) -> String {
    match kind {
        FileType::Symlink => match rustix::fs::readlinkat(dir, name, Vec::new()) {
            Ok(target) => format!(
                "a symbolic link to `{}`",
                String::from_utf8_lossy(target.as_bytes())
            ),
            Err(_) => "a symbolic link".to_string(),
        },
        FileType::RegularFile => "a regular file".to_string(),
        FileType::CharacterDevice | FileType::BlockDevice => "a device node".to_string(),
        FileType::Fifo => "a FIFO".to_string(),
        FileType::Socket => "a socket".to_string(),
        _ => "not a directory".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_of(dir: &Path) -> OwnedFd {
        rustix::fs::open(
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open the root")
    }

    #[test]
    fn an_absolute_link_on_the_way_resolves_inside_the_root() {
        let host = tempfile::tempdir().expect("tempdir");
        let image = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(host.path(), image.path().join("etc")).expect("symlink");
        let inside_dir = image
            .path()
            .join(host.path().strip_prefix("/").expect("absolute"));
        std::fs::create_dir_all(&inside_dir).expect("mkdir");
        let root = root_of(image.path());
        // `etc` resolves to `<image>/<host path>`, made inside the image.
        let mut f = create(&root, Path::new("etc/hosts"), 0o444).expect("created inside");
        std::io::Write::write_all(&mut f, b"x").expect("write");
        assert!(
            std::fs::read_dir(host.path())
                .expect("list")
                .next()
                .is_none(),
            "nothing written on the host"
        );
        assert_eq!(
            std::fs::read(inside_dir.join("hosts")).expect("inside the image"),
            b"x"
        );
    }

    #[test]
    fn a_link_at_the_end_is_never_followed() {
        let host = tempfile::tempdir().expect("tempdir");
        let image = tempfile::tempdir().expect("tempdir");
        let target = host.path().join("passwd");
        std::fs::write(&target, "host").expect("write");
        std::fs::create_dir(image.path().join("etc")).expect("mkdir");
        std::os::unix::fs::symlink(&target, image.path().join("etc/passwd")).expect("symlink");
        let root = root_of(image.path());
        let err = create(&root, Path::new("etc/passwd"), 0o444).expect_err("a link is there");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        let (dir, name) = parent(&root, Path::new("etc/passwd")).expect("parent");
        remove(&dir, name).expect("removed");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "host");
        assert!(kind(&dir, name).expect("stat").is_none());
    }

    #[test]
    fn removal_empties_a_directory_without_following_its_links() {
        let host = tempfile::tempdir().expect("tempdir");
        std::fs::write(host.path().join("keep"), "k").expect("write");
        let image = tempfile::tempdir().expect("tempdir");
        let dev = image.path().join("dev");
        std::fs::create_dir_all(dev.join("sub")).expect("mkdir");
        std::os::unix::fs::symlink(host.path(), dev.join("sub/out")).expect("symlink");
        let root = root_of(image.path());
        let top = dir(&root, Path::new("")).expect("root");
        remove(&top, OsStr::new("dev")).expect("removed");
        assert!(!dev.exists());
        assert_eq!(
            std::fs::read_to_string(host.path().join("keep")).expect("kept"),
            "k"
        );
    }
}
