//! The root file system image of a sandbox spec: a tmpfs made by the runtime with the new mount
//! API and never attached to the host's tree, holding **copies** of exactly the files the tool
//! needs (its binary, interpreter, libraries, CA certificates, and any extra read-only path) at
//! their own paths, the device nodes, a minimal `/etc` and the mount points of `/proc` and
//! `/workspace`. Every sandbox of the spec mounts a clone of it, read-only, as its root.
//!
//! Copies rather than bind mounts, so that the sandbox's mount table shows only file systems of
//! its own — never a host directory, file, device or mount option (a bind mount's root is its
//! path in the host's file system) — and so that a pinned binary runs from the copy whose bytes
//! were hashed: the digest is computed while the binary is copied, and a mismatch refuses the
//! image. The image is made once per spec and shared by its sandboxes; nobody can write to it
//! (its files belong to the host's root, and each sandbox mounts it read-only). Its files are
//! kept in large folios ([`LARGE_FOLIOS`]), as the host's page cache keeps the originals.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::Mode;
use rustix::mount::{FsMountFlags, FsOpenFlags, MountAttrFlags};

use crate::backend::SandboxSpec;
use crate::io::copy_hashing;
use crate::SandboxError;

mod in_root;
mod loader_cache;

pub use loader_cache::{ldconfig, LOADER_CACHE};

/// Device nodes made in every image, as on the host.
pub const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];
/// The name every sandbox file system shows as its source.
pub(crate) const SOURCE: &str = "escepine";

/// One image: the detached mount's descriptor.
#[derive(Debug)]
pub(crate) struct Image {
    mount: OwnedFd,
}

impl Image {
    /// The detached mount (each sandbox clones it).
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.mount
    }
}

fn io(what: String) -> impl FnOnce(io::Error) -> SandboxError {
    move |e| SandboxError::io(what, e)
}

fn errno(what: String) -> impl FnOnce(rustix::io::Errno) -> SandboxError {
    move |e| SandboxError::io(what, e.into())
}

/// The tmpfs option that keeps an image's files in large folios.
///
/// Without it every page of a tmpfs file is a folio of its own, so each start of the tool maps
/// its program and libraries a page at a time at every fault and unmaps them so at exit, where
/// the host's page cache would hand out large folios. Since Linux 6.14, `huge=within_size`
/// lets a tmpfs file's folios grow as large as its writes and its size allow (never past the
/// end of the file, so it takes no more memory); before, it gives whole huge pages to files of
/// 2 MiB and more only. A kernel without transparent huge pages refuses the option, and the
/// image is made without it.
const LARGE_FOLIOS: (&str, &str) = ("huge", "within_size");

/// A new, empty tmpfs, detached, made with the credentials of this process (so that no owner
/// of a user namespace appears in its options), mounted with `attrs`.
pub(crate) fn detached_tmpfs(
    options: &[(&str, &str)],
    attrs: MountAttrFlags,
) -> rustix::io::Result<OwnedFd> {
    let fs = rustix::mount::fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)?;
    rustix::mount::fsconfig_set_string(&fs, "source", SOURCE)?;
    for (key, value) in options {
        rustix::mount::fsconfig_set_string(&fs, *key, *value)?;
    }
    rustix::mount::fsconfig_create(&fs)?;
    rustix::mount::fsmount(&fs, FsMountFlags::FSMOUNT_CLOEXEC, attrs)
}

/// `path` relative to the image's root (`.` and `..` resolved lexically).
fn relative(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Makes every directory of `rel` (relative to the image's root), inside the image.
fn mkdirs(root: &OwnedFd, rel: &Path) -> Result<(), SandboxError> {
    in_root::mkdirs(root, rel).map_err(io(format!("image: mkdir {}", rel.display())))
}

/// Creates `rel` in the image with `mode` and returns it for writing.
fn create(root: &OwnedFd, rel: &Path, mode: u32) -> Result<File, SandboxError> {
    in_root::create(root, rel, mode).map_err(io(format!("image: create {}", rel.display())))
}

/// The permission bits a copy keeps: read and execute, never set-id or write.
fn copy_mode(mode: u32) -> u32 {
    mode & 0o555
}

/// Copies the host file `src` (symbolic links followed) to the same path in the image; returns
/// the digest of what was copied.
fn copy_file(root: &OwnedFd, src: &Path) -> Result<String, SandboxError> {
    let rel = relative(src);
    let mut from = File::open(src).map_err(io(format!("image: open {}", src.display())))?;
    let meta = from
        .metadata()
        .map_err(io(format!("image: stat {}", src.display())))?;
    let mut to = create(root, &rel, copy_mode(meta.mode()))?;
    copy_hashing(&mut from, &mut to).map_err(io(format!("image: copy {}", src.display())))
}

/// Copies the regular file `src` to `rel` in the image (no digest: nothing pins it).
fn copy_plain(root: &OwnedFd, src: &Path, rel: &Path) -> Result<(), SandboxError> {
    let mut from = File::open(src).map_err(io(format!("image: open {}", src.display())))?;
    let meta = from
        .metadata()
        .map_err(io(format!("image: stat {}", src.display())))?;
    let mut to = create(root, rel, copy_mode(meta.mode()))?;
    io::copy(&mut from, &mut to)
        .map(|_| ())
        .map_err(io(format!("image: copy {}", src.display())))
}

/// Copies the host directory `src` and everything beneath it (symbolic links as links, other
/// special files left out) to `rel` in the image.
fn copy_tree(root: &OwnedFd, src: &Path, rel: &Path) -> Result<(), SandboxError> {
    mkdirs(root, rel)?;
    let entries = std::fs::read_dir(src).map_err(io(format!("image: list {}", src.display())))?;
    for entry in entries {
        let entry = entry.map_err(io(format!("image: list {}", src.display())))?;
        let path = entry.path();
        let to = rel.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(io(format!("image: stat {}", path.display())))?;
        if kind.is_dir() {
            copy_tree(root, &path, &to)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&path)
                .map_err(io(format!("image: readlink {}", path.display())))?;
            let (dir, name) = in_root::parent(root, &to)
                .map_err(io(format!("image: symlink {}", path.display())))?;
            rustix::fs::symlinkat(&target, &dir, name)
                .map_err(errno(format!("image: symlink {}", path.display())))?;
        } else if kind.is_file() {
            copy_plain(root, &path, &to)?;
        }
    }
    Ok(())
}

/// The mount point of the read-only bind of host path `path`: a directory, or an empty file
/// for a file (PID 1 binds the host's path over it).
fn mount_point(root: &OwnedFd, image: &str, path: &Path) -> Result<(), SandboxError> {
    let rel = relative(path);
    let meta = std::fs::metadata(path).map_err(io(format!("image: stat {}", path.display())))?;
    let made = if meta.is_dir() {
        in_root::mkdirs(root, &rel)
    } else {
        match in_root::create(root, &rel, 0o444) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            other => other.map(|_| ()),
        }
    };
    match made {
        Ok(()) => Ok(()),
        // A link of the image on the way that resolves to nothing inside it.
        Err(e) if e.kind() == io::ErrorKind::NotFound => match in_root::first_link(root, &rel) {
            Some((link, target)) => Err(SandboxError::ImageEntry {
                image: image.to_string(),
                entry: format!("/{}", link.display()),
                why: format!(
                    "is a symbolic link to `{target}`, which leads nowhere in the image: the \
                     mount point of the read-only path {} cannot be made in it",
                    path.display()
                ),
            }),
            None => Err(SandboxError::io(
                format!("image: the mount point {}", path.display()),
                e,
            )),
        },
        Err(e) => Err(SandboxError::io(
            format!("image: the mount point {}", path.display()),
            e,
        )),
    }
}

fn write(root: &OwnedFd, rel: &str, text: &str) -> Result<(), SandboxError> {
    use std::io::Write;
    match create(root, Path::new(rel), 0o444) {
        Ok(mut f) => f
            .write_all(text.as_bytes())
            .map_err(io(format!("image: write {rel}"))),
        // A host file of the same path (an extra read-only path) was copied already.
        Err(SandboxError::Io { source, .. }) if source.kind() == io::ErrorKind::AlreadyExists => {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Makes the image of `spec`: the program first (its digest checked against the spec's pin),
/// then every other read-only path, the devices, `/etc`, the mount points, and an empty
/// directory for each of `extra_dirs` (the backend's own mounts). Blocking: call it
/// off the runtime's workers.
///
/// # Errors
/// [`SandboxError::DigestMismatch`] when the program's copy does not have the pinned digest;
/// [`SandboxError::Io`] for anything that cannot be read or made (the image needs the
/// privilege to make a tmpfs: root).
pub(crate) fn build(spec: &SandboxSpec, extra_dirs: &[&str]) -> Result<Image, SandboxError> {
    // Sized to its content (a tmpfs of the kernel's default size and inode count would show a
    // share of the host's memory to `statfs`).
    let (bytes, inodes) = match &spec.root_tree {
        Some(tree) => content(tree),
        None => spec
            .read_only
            .iter()
            .filter(|p| p.is_absolute())
            .map(|p| content(p))
            .fold((0u64, 0u64), |(b, i), (pb, pi)| (b + pb, i + pi)),
    };
    let (size, nr_inodes) = sized(bytes, inodes + 2 * spec.binds.len() as u64);
    let options = [("mode", "0755"), ("size", &size), ("nr_inodes", &nr_inodes)];
    let mount = match detached_tmpfs(
        &[&options[..], &[LARGE_FOLIOS]].concat(),
        MountAttrFlags::empty(),
    ) {
        // A kernel without transparent huge pages does not know the option.
        Err(rustix::io::Errno::INVAL) => detached_tmpfs(&options, MountAttrFlags::empty()),
        made => made,
    }
    .map_err(errno(
        "image: a tmpfs of the runtime's own (needs root)".into(),
    ))?;
    if let Some(tree) = &spec.root_tree {
        // An OCI image's unpacked tree (verified and unpacked by the image store): the root.
        copy_tree(&mount, tree, Path::new(""))?;
    } else {
        // Hashed only when a pin asks for it: the copy is what runs, so the digest of an
        // unpinned program would be read and thrown away on every attempt.
        if let Some(expected) = &spec.program_sha256 {
            let digest = copy_file(&mount, &spec.program)?;
            if !digest.eq_ignore_ascii_case(expected.trim()) {
                return Err(SandboxError::DigestMismatch {
                    path: spec.program.clone(),
                    actual: digest,
                    expected: expected.trim().to_string(),
                });
            }
        } else {
            copy_plain(&mount, &spec.program, &relative(&spec.program))?;
        }
    }
    let program = relative(&spec.program);
    // With an image root, `read_only` names the image's own top-level entries (for the
    // Landlock fence), never host paths to copy.
    let host_paths = if spec.root_tree.is_some() {
        &[][..]
    } else {
        &spec.read_only[..]
    };
    for path in host_paths {
        if !path.is_absolute() || relative(path) == program {
            continue;
        }
        let meta =
            std::fs::metadata(path).map_err(io(format!("image: stat {}", path.display())))?;
        if meta.is_dir() {
            copy_tree(&mount, path, &relative(path))?;
        } else {
            match copy_file(&mount, path) {
                // Beneath a directory copied already.
                Err(SandboxError::Io { source, .. })
                    if source.kind() == io::ErrorKind::AlreadyExists => {}
                other => {
                    other?;
                }
            }
        }
    }
    // The entries the sandbox's own mounts and files go in: plain directories, whatever the
    // image put there (an image's `dev -> /etc` is never followed).
    let image = &spec.program_identity;
    for entry in SYSTEM_DIRS {
        system_dir(&mount, image, entry)?;
    }
    for entry in extra_dirs {
        system_dir(&mount, image, &(entry, NotADirectory::Replace))?;
    }
    for path in &spec.binds {
        mount_point(&mount, image, path)?;
    }
    devices(&mount)?;
    write(&mount, "etc/hosts", "127.0.0.1 localhost\n::1 localhost\n")?;
    write(
        &mount,
        "etc/passwd",
        "root:x:0:0:sandbox:/workspace:/nonexistent\n",
    )?;
    write(&mount, "etc/group", "root:x:0:\n")?;
    // A binary's image gets a loader cache of its own libraries; an image's tree never does
    // (see `loader_cache`), and a cache copied in with a read-only path is kept.
    if spec.root_tree.is_none() && !loader_cache::present(&mount)? {
        if let Err(why) = loader_cache::write(&mount) {
            tracing::debug!(image = %spec.program_identity, %why, "no loader cache in the image");
        }
    }
    Ok(Image { mount })
}

/// The top-level entries of every root the sandbox relies on, and what becomes of an image's
/// entry of that name that is not a plain directory.
const SYSTEM_DIRS: &[(&str, NotADirectory)] = &[
    ("dev", NotADirectory::Replace),
    ("etc", NotADirectory::Refuse),
    ("proc", NotADirectory::Replace),
    ("tmp", NotADirectory::Replace),
    ("workspace", NotADirectory::Replace),
];

/// What becomes of a system entry of an image that is not a plain directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotADirectory {
    /// Removed (never followed) and made a new, empty directory: the sandbox mounts or makes
    /// everything it needs there.
    Replace,
    /// The image is refused: its configuration would be lost silently.
    Refuse,
}

/// Makes the top-level `entry` of the image a plain directory, by `rule`.
fn system_dir(
    root: &OwnedFd,
    image: &str,
    (entry, rule): &(&str, NotADirectory),
) -> Result<(), SandboxError> {
    let top = in_root::dir(root, Path::new("")).map_err(io("image: open its root".into()))?;
    let name = std::ffi::OsStr::new(entry);
    let found = in_root::kind(&top, name).map_err(io(format!("image: stat /{entry}")))?;
    match found {
        Some(rustix::fs::FileType::Directory) => return Ok(()),
        None => {}
        Some(kind) => {
            if *rule == NotADirectory::Refuse {
                return Err(SandboxError::ImageEntry {
                    image: image.to_string(),
                    entry: format!("/{entry}"),
                    why: format!(
                        "is {}, not a directory: an image's `/{entry}` must be a plain directory",
                        in_root::describe(&top, name, kind)
                    ),
                });
            }
            in_root::remove(&top, name).map_err(io(format!("image: remove /{entry}")))?;
        }
    }
    rustix::fs::mkdirat(&top, name, Mode::from_raw_mode(0o755))
        .map_err(errno(format!("image: mkdir /{entry}")))
}

/// The device nodes and the `fd`/`std*` links of `/dev` (a plain directory by now): whatever
/// the image had under those names gives way, never followed.
fn devices(root: &OwnedFd) -> Result<(), SandboxError> {
    let dev = in_root::dir(root, Path::new("dev")).map_err(io("image: open /dev".into()))?;
    for name in DEVICES {
        let host = Path::new("/dev").join(name);
        let meta =
            std::fs::metadata(&host).map_err(io(format!("image: stat {}", host.display())))?;
        in_root::remove(&dev, std::ffi::OsStr::new(name))
            .map_err(io(format!("image: remove /dev/{name}")))?;
        rustix::fs::mknodat(
            &dev,
            *name,
            rustix::fs::FileType::CharacterDevice,
            Mode::from_raw_mode(0o666),
            meta.rdev(),
        )
        .map_err(errno(format!("image: mknod /dev/{name}")))?;
        // The umask applied to mknod; `dev` holds no link of that name now.
        rustix::fs::chmodat(
            &dev,
            *name,
            Mode::from_raw_mode(0o666),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .or_else(|e| match e {
            // Some kernels refuse AT_SYMLINK_NOFOLLOW on fchmodat; the node is no link.
            rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::INVAL => rustix::fs::chmodat(
                &dev,
                *name,
                Mode::from_raw_mode(0o666),
                rustix::fs::AtFlags::empty(),
            ),
            e => Err(e),
        })
        .map_err(errno(format!("image: chmod /dev/{name}")))?;
    }
    for (name, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        in_root::remove(&dev, std::ffi::OsStr::new(name))
            .map_err(io(format!("image: remove /dev/{name}")))?;
        rustix::fs::symlinkat(to, &dev, name)
            .map_err(errno(format!("image: symlink /dev/{name}")))?;
    }
    Ok(())
}

/// Bytes and inodes `path` takes (a file, or a directory and everything beneath it), each file
/// rounded up to whole pages, and one inode for each directory on the way to it.
fn content(path: &Path) -> (u64, u64) {
    let page = |len: u64| len.div_ceil(4096) * 4096;
    let on_the_way = path.components().count() as u64;
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            let mut total = (0, on_the_way);
            for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
                let (b, i) = content(&entry.path());
                total = (total.0 + b, total.1 + i);
            }
            total
        }
        Ok(m) => (page(m.len()), on_the_way + 1),
        Err(_) => (0, 0),
    }
}

/// The `size` and `nr_inodes` of an image holding `bytes` in `inodes`, with room for the
/// devices, `/etc` and the mount points.
fn sized(bytes: u64, inodes: u64) -> (String, String) {
    ((bytes + (1 << 20)).to_string(), (inodes + 64).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_image() {
        assert_eq!(
            relative(Path::new("/usr/lib/x.so")),
            PathBuf::from("usr/lib/x.so")
        );
        assert_eq!(relative(Path::new("/a/../b/./c")), PathBuf::from("b/c"));
        assert_eq!(relative(Path::new("/../../etc")), PathBuf::from("etc"));
    }

    #[test]
    fn an_image_is_sized_to_its_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, vec![1u8; 5000]).expect("write");
        let (bytes, inodes) = content(&file);
        assert_eq!(bytes, 8192);
        assert_eq!(inodes, file.components().count() as u64 + 1);
        let (all, _) = content(dir.path());
        assert_eq!(all, 8192);
        assert_eq!(sized(8192, 3), ("1056768".to_string(), "67".to_string()));
    }

    #[test]
    fn the_workspace_is_a_system_directory() {
        let workspace = crate::protocol::WORKSPACE.trim_start_matches('/');
        assert!(SYSTEM_DIRS
            .iter()
            .any(|(name, rule)| *name == workspace && *rule == NotADirectory::Replace));
    }

    /// The copy of a program of several megabytes (this test program), mapped and read as the
    /// loader would, sits mostly in large folios: each page's frame (`/proc/self/pagemap`) is
    /// part of a compound page (`/proc/kpageflags`). Needs root, as an image does.
    #[test]
    fn an_images_files_are_kept_in_large_folios() {
        use std::os::unix::fs::FileExt;
        /// `KPF_COMPOUND_HEAD` and `KPF_COMPOUND_TAIL`.
        const COMPOUND: u64 = 1 << 15 | 1 << 16;
        let program = std::env::current_exe().expect("this test program");
        let spec = SandboxSpec {
            program: program.clone(),
            program_identity: program.display().to_string(),
            program_sha256: None,
            read_only: vec![program.clone()],
            binds: Vec::new(),
            root_tree: None,
            egress: Default::default(),
            limits: Default::default(),
        };
        let image = build(&spec, &[]).expect("an image (as root)");
        let copy: File = rustix::fs::openat(
            &image.mount,
            relative(&program),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("the program's copy")
        .into();
        let len = copy.metadata().expect("its size").len() as usize;
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("a size");
        assert!(len > 1 << 22, "this test program is several MiB: {len}");
        // SAFETY: a new private read-only mapping of a file this test holds open; it is read
        // within its length and unmapped below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&copy),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED, "mmap of the copy");
        let pagemap = File::open("/proc/self/pagemap").expect("pagemap");
        let kpageflags = File::open("/proc/kpageflags").expect("kpageflags (root)");
        let word = |file: &File, at: u64| {
            let mut bytes = [0u8; 8];
            file.read_exact_at(&mut bytes, at * 8).expect("eight bytes");
            u64::from_ne_bytes(bytes)
        };
        let (mut pages, mut compound) = (0usize, 0usize);
        for offset in (0..len).step_by(page) {
            // SAFETY: within the mapping.
            let at = unsafe { map.cast::<u8>().add(offset) };
            // Read (which faults the page in) until present: the kernel may be migrating the
            // page just then (compaction), which leaves its entry not present for a moment.
            let entry = (0..1000)
                .map(|_| {
                    // SAFETY: a read of a mapped byte.
                    unsafe { std::ptr::read_volatile(at) };
                    word(&pagemap, (at as usize / page) as u64)
                })
                .find(|entry| entry >> 63 == 1)
                .unwrap_or_else(|| panic!("the page at {offset} is never present"));
            let frame = entry & ((1 << 55) - 1);
            assert_ne!(frame, 0, "frames are shown to root");
            pages += 1;
            if word(&kpageflags, frame) & COMPOUND != 0 {
                compound += 1;
            }
        }
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(map, len) };
        assert!(
            compound * 4 >= pages * 3,
            "{compound} of the copy's {pages} pages are in large folios"
        );
    }

    #[test]
    fn copies_keep_read_and_execute_only() {
        assert_eq!(copy_mode(0o104755), 0o555);
        assert_eq!(copy_mode(0o100644), 0o444);
        assert_eq!(copy_mode(0o100700), 0o500);
    }
}
