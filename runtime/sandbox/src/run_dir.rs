//! The run directory's leftovers. Each sandbox with egress on the namespace tier has a
//! directory there, `escepine-sbx-<runtime pid>-<n>-<random>`, holding its proxy's socket; each
//! gVisor sandbox has `escepine-gv-<runtime pid>-<n>-<random>`, holding its bundle, `runsc`'s
//! state and its sockets. The random end (16 hex digits) keeps anyone else who may write in a
//! shared run directory from taking a sandbox's name first. Destroying or dropping a sandbox
//! removes its directory; a runtime killed with sandboxes alive (SIGKILL, a crash) leaves them
//! behind. The next backend with the same run directory removes them, once, in the background,
//! when it first needs a directory of its own; it looks in the temporary directory too, the
//! default run directory of earlier versions.
//!
//! Unless a backend is told otherwise, its run directory is [`default_dir`]: a place in memory
//! where one is at hand, since each sandbox with egress makes, binds in and removes a directory
//! there on its way, which a disk file system journals (and discards) for every sandbox.
//!
//! The run directory is shared (the system's temporary directory, `/run`, `/dev/shm`), so a
//! name alone proves nothing. A directory is removed only when all of these hold:
//! - its name is exactly one of the two above (decimal numbers, the random end in lowercase hex,
//!   or no random end: a name given before names had one), and it is a directory itself, not a
//!   symbolic link to one;
//! - no process `<pid>` is visible in `/proc`;
//! - no listening socket is bound inside it (a runtime in another PID namespace, whose pid this
//!   one cannot see, still has its proxy or control socket there);
//! - it has not changed for [`STALE_AFTER`] (a directory of such a runtime made a moment ago,
//!   before its sockets were bound);
//! - a namespace sandbox's directory holds no directory (only its socket, or other files, is
//!   unlinked); no mount point is at or below a gVisor sandbox's (its root image's clone is
//!   attached there while it runs): nothing is removed through a symbolic link or across a
//!   mount.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::cgroup::PREFIX;

/// How long a leftover directory must have stood unchanged before it is removed.
pub(super) const STALE_AFTER: Duration = Duration::from_secs(10);

/// Where a backend keeps its sandboxes' directories unless told otherwise: the first of
/// `$XDG_RUNTIME_DIR`, `/run` (when running as root), the temporary directory and `/dev/shm`
/// that is a directory on a memory file system (`tmpfs`, `ramfs`) this process may write in and
/// that is not mounted `noexec` (a gVisor sandbox's guest executes from its directory); else
/// the temporary directory. Private places come before shared ones.
pub fn default_dir() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        candidates.push(PathBuf::from(dir));
    }
    if rustix::process::geteuid().is_root() {
        candidates.push(PathBuf::from("/run"));
    }
    candidates.push(std::env::temp_dir());
    candidates.push(PathBuf::from("/dev/shm"));
    first_in_memory(candidates).unwrap_or_else(std::env::temp_dir)
}

/// The first of `candidates` that is a writable directory on a memory file system mounted
/// without `noexec`.
pub(super) fn first_in_memory(candidates: impl IntoIterator<Item = PathBuf>) -> Option<PathBuf> {
    candidates.into_iter().find(|dir| in_memory(dir))
}

/// Whether `dir` is a directory on a memory file system, writable and searchable by this
/// process, mounted without `noexec`.
fn in_memory(dir: &Path) -> bool {
    use rustix::fs::Access;
    /// `ramfs`'s magic number (`linux/magic.h`), which the libc crate does not name.
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    // One `statfs` gives both the file system's type and its mount's flags.
    let memory_exec = |s: rustix::fs::StatFs| {
        (s.f_type == libc::TMPFS_MAGIC || s.f_type == RAMFS_MAGIC)
            && (s.f_flags as u64) & libc::ST_NOEXEC == 0
    };
    std::fs::metadata(dir).is_ok_and(|m| m.is_dir())
        && rustix::fs::statfs(dir).is_ok_and(memory_exec)
        && rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK).is_ok()
}

/// The prefix of a gVisor sandbox's directory.
pub(super) const GVISOR_PREFIX: &str = "escepine-gv-";

/// The name of a runtime's `n`th sandbox on the namespace tier: its directory's here and its
/// memory cgroup's (see [`named`]).
///
/// # Errors
/// When the system's random number generator cannot be read.
pub(super) fn sandbox_name(pid: u32, n: u64) -> std::io::Result<String> {
    named(PREFIX, pid, n)
}

/// The name of a runtime's `n`th gVisor sandbox: its directory's and its container's (see
/// [`named`]).
///
/// # Errors
/// When the system's random number generator cannot be read.
pub(super) fn gvisor_name(pid: u32, n: u64) -> std::io::Result<String> {
    named(GVISOR_PREFIX, pid, n)
}

/// How many random bytes end a sandbox's name.
const NONCE_BYTES: usize = 8;

/// `<prefix><pid>-<n>-<16 hex digits drawn at random>`: the runtime's pid for the sweep, and a
/// random end so that nobody else with a right to write in a shared run directory can make a
/// directory under a sandbox's name before it (the sandbox could not be made then).
fn named(prefix: &str, pid: u32, n: u64) -> std::io::Result<String> {
    let mut nonce = [0u8; NONCE_BYTES];
    let mut filled = 0;
    while filled < nonce.len() {
        match rustix::rand::getrandom(&mut nonce[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(got) => filled += got,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(format!("{prefix}{pid}-{n}-{}", hex::encode(nonce)))
}

/// Which tier's directories a sweep removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tier {
    /// `escepine-sbx-…`: a flat directory (the proxy's socket).
    Namespaces,
    /// `escepine-gv-…`: a tree (bundle, state, sockets), never across a mount.
    Gvisor,
}

impl Tier {
    fn prefix(self) -> &'static str {
        match self {
            Tier::Namespaces => PREFIX,
            Tier::Gvisor => GVISOR_PREFIX,
        }
    }
}

/// The runtime pid in `name`, if it is exactly the name of a `tier` sandbox's directory.
fn owner(tier: Tier, name: &str) -> Option<u32> {
    let (pid, rest) = name.strip_prefix(tier.prefix())?.split_once('-')?;
    // No random end: a name given before names had one.
    let (n, nonce) = match rest.split_once('-') {
        Some((n, nonce)) => (n, Some(nonce)),
        None => (rest, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let random = |s: &str| {
        s.len() == 2 * NONCE_BYTES && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    if !digits(pid) || !digits(n) || !nonce.is_none_or(random) {
        return None;
    }
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// The paths of the Unix sockets bound in this network namespace (`/proc/net/unix`'s last
/// column), or `None` when the table cannot be read (then nothing is removed).
fn bound_sockets() -> Option<HashSet<PathBuf>> {
    let table = std::fs::read_to_string("/proc/net/unix").ok()?;
    Some(
        table
            .lines()
            .skip(1)
            // Num RefCount Protocol Flags Type St Inode Path: the path is what follows the
            // seventh field (it may hold spaces; the inode is padded with spaces).
            .filter_map(|line| {
                let mut rest = line;
                for _ in 0..7 {
                    rest = rest.trim_start().split_once(' ')?.1;
                }
                let path = rest.trim_start();
                path.starts_with('/').then(|| PathBuf::from(path))
            })
            .collect(),
    )
}

/// The mount points of this process's mount namespace (`/proc/self/mountinfo`'s fifth field,
/// its octal escapes undone), or `None` when the table cannot be read (then no tree is removed).
fn mount_points() -> Option<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStringExt;
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    Some(
        table
            .lines()
            .filter_map(|line| line.split(' ').nth(4))
            .map(|escaped| {
                let mut bytes = Vec::with_capacity(escaped.len());
                let raw = escaped.as_bytes();
                let mut i = 0;
                while i < raw.len() {
                    let octal = raw
                        .get(i + 1..i + 4)
                        .and_then(|d| std::str::from_utf8(d).ok())
                        .and_then(|d| u8::from_str_radix(d, 8).ok());
                    match (raw[i], octal) {
                        (b'\\', Some(byte)) => {
                            bytes.push(byte);
                            i += 4;
                        }
                        (b, _) => {
                            bytes.push(b);
                            i += 1;
                        }
                    }
                }
                PathBuf::from(std::ffi::OsString::from_vec(bytes))
            })
            .collect(),
    )
}

/// Removes the `tier` sandbox directories of killed runtimes from `run_dir` (see the module's
/// documentation for the rules); returns the directories removed.
///
/// Best effort: a directory that cannot be read or removed is left, and so is every entry that
/// does not meet all the rules.
pub(super) fn sweep(run_dir: &Path, tier: Tier) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Vec::new();
    };
    let Some(bound) = bound_sockets() else {
        return Vec::new();
    };
    // A gVisor sandbox's directory goes only with no mount at or below it.
    let mounts = match tier {
        Tier::Namespaces => Vec::new(),
        Tier::Gvisor => match mount_points() {
            Some(mounts) => mounts,
            None => return Vec::new(),
        },
    };
    let now = SystemTime::now();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| owner(tier, n)) else {
            continue;
        };
        let dir = entry.path();
        // `DirEntry::metadata` does not follow a symbolic link.
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_dir() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if bound.iter().any(|socket| socket.starts_with(&dir)) {
            continue;
        }
        let unchanged = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok());
        if unchanged.is_none_or(|d| d < STALE_AFTER) {
            continue;
        }
        let gone = match tier {
            Tier::Namespaces => remove_flat(&dir),
            Tier::Gvisor => remove_tree(&dir, &mounts),
        };
        if gone {
            removed.push(dir);
        }
    }
    removed
}

/// Unlinks every entry of `dir` and then `dir` itself, unless an entry is a directory (then
/// nothing is removed); whether `dir` is gone.
///
/// Through a descriptor of `dir` opened without following a link: in a shared run directory
/// someone may swap `dir` for a link to another directory after it was checked, and nothing
/// is then listed or unlinked through that link.
fn remove_flat(dir: &Path) -> bool {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    let Ok(fd) = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let Ok(listing) = rustix::fs::Dir::read_from(&fd) else {
        return false;
    };
    let mut names = Vec::new();
    for entry in listing.flatten() {
        let name = entry.file_name().to_owned();
        if name.as_bytes() == b"." || name.as_bytes() == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => {
                rustix::fs::statat(&fd, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .map(|st| FileType::from_raw_mode(st.st_mode))
                    .unwrap_or(FileType::Directory)
            }
            kind => kind,
        };
        if kind == FileType::Directory {
            tracing::debug!(dir = %dir.display(), "a leftover sandbox directory holds a directory: kept");
            return false;
        }
        names.push(name);
    }
    for name in &names {
        // A symbolic link is unlinked itself, never followed.
        let _ = rustix::fs::unlinkat(&fd, name.as_c_str(), AtFlags::empty());
    }
    // A link put in its place meanwhile is no directory to remove.
    std::fs::remove_dir(dir).is_ok()
}

/// [`sweep`] of each of [`swept_places`] on a thread of its own, each directory removed logged.
pub(super) fn sweep_in_background(run_dir: PathBuf, tier: Tier) {
    let _ = std::thread::Builder::new()
        .name("escepine-run-sweep".into())
        .spawn(move || {
            for place in swept_places(&run_dir) {
                for dir in sweep(&place, tier) {
                    tracing::info!(dir = %dir.display(), "removed a killed runtime's sandbox directory");
                }
            }
        });
}

/// Where a backend's first sweep looks: its run directory and, when that is another place, the
/// temporary directory — every backend's run directory before the default moved into memory, so
/// a runtime killed then may have left its sandboxes' directories there.
fn swept_places(run_dir: &Path) -> Vec<PathBuf> {
    let temp = std::env::temp_dir();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(run_dir, &temp) {
        vec![run_dir.to_path_buf()]
    } else {
        vec![run_dir.to_path_buf(), temp]
    }
}

/// Removes `dir` and everything below it, unless one of `mounts` is at or below it (then
/// nothing is removed); whether `dir` is gone.
fn remove_tree(dir: &Path, mounts: &[PathBuf]) -> bool {
    if mounts.iter().any(|m| m.starts_with(dir)) {
        tracing::debug!(dir = %dir.display(), "a leftover gVisor sandbox directory holds a mount: kept");
        return false;
    }
    // `remove_dir_all` never follows a symbolic link.
    std::fs::remove_dir_all(dir).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_run_directory_is_the_first_writable_one_in_memory() {
        // `/dev/shm` is a tmpfs on Linux; `/proc` and `/sys` are directories in no memory file
        // system of this kind.
        let shm = tempfile::tempdir_in("/dev/shm").expect("a directory in /dev/shm");
        let file = shm.path().join("a file");
        std::fs::write(&file, b"").expect("write");
        let none = shm.path().join("nothing here");
        let chosen = first_in_memory([
            PathBuf::from("/proc"),
            PathBuf::from("/sys"),
            none.clone(),
            file.clone(),
            shm.path().to_path_buf(),
            PathBuf::from("/dev/shm"),
        ]);
        assert_eq!(chosen.as_deref(), Some(shm.path()));
        assert_eq!(first_in_memory([PathBuf::from("/proc"), none, file]), None);
        // A tmpfs mounted `noexec` is skipped (mounting needs root, which CI has).
        if rustix::process::geteuid().is_root() {
            struct Unmount<'a>(&'a Path);
            impl Drop for Unmount<'_> {
                fn drop(&mut self) {
                    let _ = rustix::mount::unmount(self.0, rustix::mount::UnmountFlags::DETACH);
                }
            }
            let noexec = shm.path().join("noexec");
            std::fs::create_dir(&noexec).expect("mkdir");
            rustix::mount::mount(
                "tmpfs",
                &noexec,
                "tmpfs",
                rustix::mount::MountFlags::NOEXEC,
                None,
            )
            .expect("mount a noexec tmpfs");
            let _unmount = Unmount(&noexec);
            assert_eq!(first_in_memory([noexec.clone()]), None);
        }
        let default = default_dir();
        assert!(default.is_dir(), "{}", default.display());
        assert!(
            rustix::fs::access(&default, rustix::fs::Access::WRITE_OK).is_ok(),
            "{}",
            default.display()
        );
    }

    #[test]
    fn the_temporary_directory_is_swept_beside_another_run_directory() {
        let temp = std::env::temp_dir();
        assert_eq!(swept_places(&temp), vec![temp.clone()]);
        let elsewhere = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            swept_places(elsewhere.path()),
            vec![elsewhere.path().to_path_buf(), temp]
        );
    }

    #[test]
    fn only_exact_names_have_an_owner() {
        assert_eq!(owner(Tier::Namespaces, "escepine-sbx-123-4"), Some(123));
        assert_eq!(owner(Tier::Gvisor, "escepine-gv-123-4"), Some(123));
        assert_eq!(owner(Tier::Gvisor, "escepine-sbx-123-4"), None);
        assert_eq!(owner(Tier::Namespaces, "escepine-gv-123-4"), None);
        assert_eq!(
            owner(Tier::Namespaces, "escepine-sbx-123-4-0123456789abcdef"),
            Some(123)
        );
        for name in [
            "escepine-sbx-123",
            "escepine-sbx-123-",
            "escepine-sbx--4",
            "escepine-sbx-12a-4",
            "escepine-sbx-123-4-",
            "escepine-sbx-123-4-0123456789abcde",
            "escepine-sbx-123-4-0123456789abcdef0",
            "escepine-sbx-123-4-0123456789ABCDEF",
            "escepine-sbx-123-4-0123456789abcdeg",
            "escepine-sbx-123-4-0123456789abcdef-5",
            "escepine-sbx-123-4-5",
            "escepine-sbx-+123-4",
            "escepine-sbx-123-+4",
            "escepine-spare-123-4",
            "xescepine-sbx-123-4",
            "escepine-sbx-99999999999-1",
        ] {
            assert_eq!(owner(Tier::Namespaces, name), None, "{name}");
        }
        let drawn = sandbox_name(7, 8).expect("a name");
        assert_eq!(owner(Tier::Namespaces, &drawn), Some(7));
        assert_eq!(
            owner(Tier::Gvisor, &gvisor_name(7, 8).expect("a name")),
            Some(7)
        );
        // The random end differs from one drawing to the next.
        assert_ne!(drawn, sandbox_name(7, 8).expect("a name"));
    }

    #[test]
    fn a_listening_socket_is_in_the_table_with_its_whole_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("with a space.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let bound = bound_sockets().expect("/proc/net/unix");
        assert!(bound.contains(&path), "{path:?} not in the table");
        drop(listener);
        let bound = bound_sockets().expect("/proc/net/unix");
        assert!(!bound.contains(&path), "{path:?} still in the table");
    }
}

#[cfg(test)]
mod mount_tests {
    use super::*;

    #[test]
    fn the_mount_table_names_root_and_undoes_escapes() {
        let mounts = mount_points().expect("/proc/self/mountinfo");
        assert!(mounts.iter().any(|m| m == Path::new("/")), "{mounts:?}");
        assert!(mounts
            .iter()
            .all(|m| !m.to_string_lossy().contains("\\040")));
    }
}
