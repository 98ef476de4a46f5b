//! Layers applied in order onto an empty root directory, refusing whatever could reach outside
//! it or smuggle privilege in.
//!
//! Refused (the whole image is then refused): `..` components; symbolic links whose relative
//! target climbs above the root from the link's own directory (absolute targets are resolved
//! inside the root, as the sandbox resolves them, and are allowed); hard links whose target is
//! outside the root, contains `..`, or is not unpacked yet; character and block devices, FIFOs
//! and sparse files. Never written: set-uid, set-gid and sticky bits (counted), write bits for
//! group and other, ownership (everything belongs to the unpacking user). OCI whiteouts apply:
//! `.wh.<name>` removes `<name>` of lower layers, `.wh..wh..opq` empties its directory of
//! what lower layers put there. See [`fsops`] for how no write follows a link.

mod decode;
pub mod fsops;

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};

pub use decode::{compression_of, Compression};

use crate::error::OciError;

/// What an unpacked image may hold at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Total bytes of regular file content, over all layers.
    pub max_bytes: u64,
    /// Total entries, over all layers.
    pub max_entries: u64,
}

impl Default for Limits {
    /// 4 GiB and two million entries.
    fn default() -> Self {
        Self {
            max_bytes: 4 << 30,
            max_entries: 2_000_000,
        }
    }
}

/// What unpacking did beyond writing the files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnpackStats {
    /// Bytes of regular file content written.
    pub bytes: u64,
    /// Entries applied.
    pub entries: u64,
    /// Entries whose set-uid or set-gid bit was stripped.
    pub setid_stripped: u64,
}

/// One layer to apply.
pub struct LayerSpec<'a> {
    /// The layer blob's digest (named in errors).
    pub digest: &'a str,
    /// Its compression.
    pub compression: Compression,
    /// The verified blob.
    pub blob: &'a Path,
    /// The config's diff_id: the digest of the uncompressed tar.
    pub diff_id: &'a str,
}

/// Why one entry failed.
enum EntryError {
    Unsafe(String),
    Io(io::Error),
    TooLarge,
}

impl From<io::Error> for EntryError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<rustix::io::Errno> for EntryError {
    fn from(e: rustix::io::Errno) -> Self {
        Self::Io(e.into())
    }
}

fn unsafe_entry(reason: impl Into<String>) -> EntryError {
    EntryError::Unsafe(reason.into())
}

/// Applies layers onto a root directory.
pub struct Unpacker {
    image: String,
    root: OwnedFd,
    limits: Limits,
    stats: UnpackStats,
    /// Final modes of directories, applied once every layer is in (deepest first).
    dir_modes: BTreeMap<PathBuf, u32>,
    /// Paths the current layer wrote (whiteouts and opaque markers spare them).
    this_layer: HashSet<PathBuf>,
}

/// The permission bits written: no set-id, no sticky bit, no write for group or other.
fn safe_mode(mode: u32) -> u32 {
    mode & 0o755
}

/// The path of an entry relative to the root; `..` is refused.
fn clean(path: &Path) -> Result<PathBuf, EntryError> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => return Err(unsafe_entry("a path with a `..` component")),
            Component::Normal(n) => out.push(n),
            Component::Prefix(_) => return Err(unsafe_entry("a path prefix")),
        }
    }
    Ok(out)
}

/// Whether a relative symbolic link target, read from the link's directory `dir`, stays at or
/// below the root.
fn link_stays_inside(dir: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return true;
    }
    let mut depth = dir.components().count();
    for c in target.components() {
        match c {
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::Normal(_) => depth += 1,
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    true
}

/// Where the link target `target`, in the directory `dir`, points inside the root: absolute
/// targets from the root, `..` stopping at the root (as `RESOLVE_IN_ROOT` resolves them).
fn in_root_lexically(dir: &Path, target: &Path) -> PathBuf {
    let mut out = if target.is_absolute() {
        PathBuf::new()
    } else {
        dir.to_path_buf()
    };
    for c in target.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn split(rel: &Path) -> (&Path, &OsStr) {
    (
        rel.parent().unwrap_or(Path::new("")),
        rel.file_name().unwrap_or(OsStr::new("")),
    )
}

impl Unpacker {
    /// An unpacker writing into the existing, empty directory `rootfs`.
    ///
    /// # Errors
    /// [`OciError::Io`] if `rootfs` cannot be opened.
    pub fn new(image: &str, rootfs: &Path, limits: Limits) -> Result<Self, OciError> {
        let root = rustix::fs::open(
            rootfs,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(|e| OciError::Io {
            image: image.to_string(),
            action: "opening",
            path: rootfs.to_path_buf(),
            source: e.into(),
        })?;
        let mut dir_modes = BTreeMap::new();
        dir_modes.insert(PathBuf::new(), 0o755);
        Ok(Self {
            image: image.to_string(),
            root,
            limits,
            stats: UnpackStats::default(),
            dir_modes,
            this_layer: HashSet::new(),
        })
    }

    /// Apply one layer.
    ///
    /// # Errors
    /// [`OciError::UnsafeEntry`], [`OciError::TooLarge`], [`OciError::LayerIo`] or
    /// [`OciError::DiffIdMismatch`], each naming the layer (and the entry).
    pub fn apply(&mut self, layer: &LayerSpec<'_>) -> Result<(), OciError> {
        self.this_layer.clear();
        let image = self.image.clone();
        let layer_io = |entry: String, source: io::Error| OciError::LayerIo {
            image: image.clone(),
            layer: layer.digest.to_string(),
            entry,
            source,
        };
        let blob = std::fs::File::open(layer.blob).map_err(|e| layer_io(String::new(), e))?;
        let mut stream = decode::Hashing::new(decode::decompress(blob, layer.compression));
        {
            let mut archive = tar::Archive::new(&mut stream);
            let entries = archive.entries().map_err(|e| layer_io(String::new(), e))?;
            for entry in entries {
                let mut entry = entry.map_err(|e| layer_io(String::new(), e))?;
                let shown = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
                self.stats.entries += 1;
                let result = if self.stats.entries > self.limits.max_entries {
                    Err(unsafe_entry(format!(
                        "the image holds more than {} entries",
                        self.limits.max_entries
                    )))
                } else {
                    self.entry(&mut entry)
                };
                result.map_err(|e| match e {
                    EntryError::Unsafe(reason) => OciError::UnsafeEntry {
                        image: self.image.clone(),
                        layer: layer.digest.to_string(),
                        entry: shown.clone(),
                        reason,
                    },
                    EntryError::Io(source) => OciError::LayerIo {
                        image: self.image.clone(),
                        layer: layer.digest.to_string(),
                        entry: shown.clone(),
                        source,
                    },
                    EntryError::TooLarge => OciError::TooLarge {
                        image: self.image.clone(),
                        layer: layer.digest.to_string(),
                        entry: shown.clone(),
                        limit: self.limits.max_bytes,
                    },
                })?;
            }
        }
        // The padding after the end-of-archive blocks belongs to the diff_id too.
        let budget = self.limits.max_bytes.saturating_sub(self.stats.bytes);
        let rest = io::copy(&mut (&mut stream).take(budget + 1), &mut io::sink())
            .map_err(|e| layer_io(String::new(), e))?;
        if rest > budget {
            return Err(OciError::TooLarge {
                image: self.image.clone(),
                layer: layer.digest.to_string(),
                entry: "(after the end of the archive)".into(),
                limit: self.limits.max_bytes,
            });
        }
        let found = stream.digest();
        if found != layer.diff_id {
            return Err(OciError::DiffIdMismatch {
                image: self.image.clone(),
                layer: layer.digest.to_string(),
                expected: layer.diff_id.to_string(),
                found,
            });
        }
        Ok(())
    }

    /// Give directories their final modes; what unpacking counted.
    ///
    /// # Errors
    /// [`OciError::Io`] if a mode cannot be set.
    pub fn finish(self) -> Result<UnpackStats, OciError> {
        // Deepest first, so that a directory made unsearchable never hides one below it.
        let mut dirs: Vec<_> = self.dir_modes.iter().collect();
        dirs.sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
        for (rel, mode) in dirs {
            // A directory a later layer removed or replaced by a file is skipped.
            let Ok(fd) = fsops::open_dir_readable(&self.root, rel) else {
                continue;
            };
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(*mode)).map_err(|e| OciError::Io {
                image: self.image.clone(),
                action: "setting the mode of the unpacked directory",
                path: rel.clone(),
                source: e.into(),
            })?;
        }
        Ok(self.stats)
    }

    /// The directory `rel`, created (with its parents) when absent.
    fn dir(&mut self, rel: &Path) -> Result<OwnedFd, EntryError> {
        self.dir_via(rel, 0)
    }

    /// [`Self::dir`], `hops` symbolic links deep: a link on the way that points to nothing yet
    /// gets its target created inside the root (as `mkdir -p` through it would, confined).
    fn dir_via(&mut self, rel: &Path, hops: u32) -> Result<OwnedFd, EntryError> {
        const MAX_HOPS: u32 = 40;
        match fsops::open_dir(&self.root, rel) {
            Ok(fd) => Ok(fd),
            Err(e) if e.kind() == io::ErrorKind::NotFound && !rel.as_os_str().is_empty() => {
                let (parent, name) = split(rel);
                let pfd = self.dir_via(parent, hops)?;
                match rustix::fs::mkdirat(&pfd, name, Mode::from_raw_mode(0o700)) {
                    Ok(()) => {
                        self.dir_modes.entry(rel.to_path_buf()).or_insert(0o755);
                        self.this_layer.insert(rel.to_path_buf());
                    }
                    Err(rustix::io::Errno::EXIST) => {
                        if fsops::kind(&pfd, name)? == Some(FileType::Symlink) {
                            if hops >= MAX_HOPS {
                                return Err(unsafe_entry(format!(
                                    "more than {MAX_HOPS} symbolic links on the way to `{}`",
                                    rel.display()
                                )));
                            }
                            let target = rustix::fs::readlinkat(&pfd, name, Vec::new())?;
                            let target = Path::new(OsStr::from_bytes(target.to_bytes()));
                            let resolved = in_root_lexically(parent, target);
                            self.dir_via(&resolved, hops + 1)?;
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
                fsops::open_dir(&self.root, rel).map_err(|e| {
                    unsafe_entry(format!(
                        "its directory `{}` cannot be opened ({e})",
                        rel.display()
                    ))
                })
            }
            Err(e) if e.raw_os_error() == Some(libc_enotdir()) => Err(unsafe_entry(format!(
                "`{}` is not a directory",
                rel.display()
            ))),
            Err(e) => Err(e.into()),
        }
    }

    fn entry<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<(), EntryError> {
        let rel = clean(&entry.path()?)?;
        let header = entry.header();
        let kind = header.entry_type();
        let mode = header.mode().unwrap_or(0o644);
        let (parent, name) = split(&rel);

        // Whiteouts.
        if let Some(hidden) = name.as_bytes().strip_prefix(b".wh.") {
            if hidden == b".wh..opq" {
                let dir = self.dir(parent)?;
                let parent = parent.to_path_buf();
                return self.prune(&dir, &parent);
            }
            if hidden.starts_with(b".wh.") {
                // Other aufs metadata: nothing to apply.
                return Ok(());
            }
            if hidden.is_empty() || hidden == b"." || hidden == b".." {
                return Err(unsafe_entry("a whiteout of no name, `.` or `..`"));
            }
            let target = parent.join(OsStr::from_bytes(hidden));
            if self.this_layer.contains(&target) {
                return Ok(());
            }
            return match fsops::open_dir(&self.root, parent) {
                Ok(dir) => Ok(fsops::remove(&dir, OsStr::from_bytes(hidden))?),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e.into()),
            };
        }

        if mode & 0o6000 != 0 && (kind.is_file() || kind.is_contiguous() || kind.is_dir()) {
            self.stats.setid_stripped += 1;
        }

        if rel.as_os_str().is_empty() {
            if kind.is_dir() {
                self.dir_modes.insert(PathBuf::new(), safe_mode(mode));
                return Ok(());
            }
            return Err(unsafe_entry("the image root must be a directory"));
        }

        match kind {
            tar::EntryType::Directory => {
                let pfd = self.dir(parent)?;
                if fsops::kind(&pfd, name)? != Some(FileType::Directory) {
                    fsops::remove(&pfd, name)?;
                    rustix::fs::mkdirat(&pfd, name, Mode::from_raw_mode(0o700))?;
                }
                self.dir_modes.insert(rel.clone(), safe_mode(mode));
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = header.size()?;
                if self.stats.bytes.saturating_add(size) > self.limits.max_bytes {
                    return Err(EntryError::TooLarge);
                }
                let pfd = self.dir(parent)?;
                fsops::remove(&pfd, name)?;
                let fd = rustix::fs::openat(
                    &pfd,
                    name,
                    OFlags::WRONLY
                        | OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o600),
                )?;
                let mut file = std::fs::File::from(fd);
                let written = io::copy(&mut entry.take(size), &mut file)?;
                if written != size {
                    return Err(EntryError::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the layer ends inside the entry ({written} of {size} bytes)"),
                    )));
                }
                self.stats.bytes += size;
                rustix::fs::fchmod(&file, Mode::from_raw_mode(safe_mode(mode)))?;
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()?
                    .ok_or_else(|| unsafe_entry("a symbolic link without a target"))?;
                if target.as_os_str().is_empty() {
                    return Err(unsafe_entry("a symbolic link without a target"));
                }
                if !link_stays_inside(parent, &target) {
                    return Err(unsafe_entry(format!(
                        "a symbolic link to `{}`, which climbs above the image root",
                        target.display()
                    )));
                }
                let pfd = self.dir(parent)?;
                fsops::remove(&pfd, name)?;
                rustix::fs::symlinkat(target.as_ref(), &pfd, name)?;
            }
            tar::EntryType::Link => {
                let raw = entry
                    .link_name()?
                    .ok_or_else(|| unsafe_entry("a hard link without a target"))?;
                let target = clean(&raw).map_err(|_| {
                    unsafe_entry(format!(
                        "a hard link to `{}`, outside the image root",
                        raw.display()
                    ))
                })?;
                let (tparent, tname) = split(&target);
                let not_yet = || {
                    unsafe_entry(format!(
                        "a hard link to `{}`, which is not unpacked (yet)",
                        raw.display()
                    ))
                };
                if target.as_os_str().is_empty() {
                    return Err(not_yet());
                }
                let tdir = fsops::open_dir(&self.root, tparent).map_err(|_| not_yet())?;
                match fsops::kind(&tdir, tname)? {
                    None => return Err(not_yet()),
                    Some(FileType::Directory) => {
                        return Err(unsafe_entry(format!(
                            "a hard link to the directory `{}`",
                            raw.display()
                        )))
                    }
                    Some(_) => {}
                }
                if target == rel {
                    return Ok(());
                }
                let pfd = self.dir(parent)?;
                fsops::remove(&pfd, name)?;
                rustix::fs::linkat(&tdir, tname, &pfd, name, rustix::fs::AtFlags::empty())?;
            }
            tar::EntryType::Char => return Err(unsafe_entry("a character device node")),
            tar::EntryType::Block => return Err(unsafe_entry("a block device node")),
            tar::EntryType::Fifo => return Err(unsafe_entry("a FIFO")),
            tar::EntryType::GNUSparse => return Err(unsafe_entry("a sparse file (not supported)")),
            tar::EntryType::XGlobalHeader => return Ok(()),
            other => {
                return Err(unsafe_entry(format!(
                    "an entry of tar type {:?}",
                    other.as_byte() as char
                )))
            }
        }
        self.this_layer.insert(rel);
        Ok(())
    }

    /// Remove from the directory `dir` (at `rel`) everything lower layers put there, keeping
    /// what the current layer wrote.
    fn prune(&mut self, dir: &OwnedFd, rel: &Path) -> Result<(), EntryError> {
        for child in fsops::children(dir)? {
            let crel = rel.join(&child);
            if !self.this_layer.contains(&crel) {
                fsops::remove(dir, &child)?;
            } else if fsops::kind(dir, &child)? == Some(FileType::Directory) {
                let sub = rustix::fs::openat(
                    dir,
                    &child,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                self.prune(&sub, &crel)?;
            }
        }
        Ok(())
    }
}

fn libc_enotdir() -> i32 {
    rustix::io::Errno::NOTDIR.raw_os_error()
}
