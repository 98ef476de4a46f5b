//! The run directory's leftovers: each sandbox with egress has a directory there,
//! `escepine-sbx-<runtime pid>-<n>`, holding its proxy's socket, removed when the sandbox is
//! destroyed or dropped. A runtime killed with sandboxes alive (SIGKILL, a crash) leaves them
//! behind; the next backend with the same run directory removes them, once, in the background,
//! when it first needs a directory of its own.
//!
//! The run directory is shared (by default the system's temporary directory), so a name alone
//! proves nothing. A directory is removed only when all of these hold:
//! - its name is exactly `escepine-sbx-<pid>-<n>` (decimal numbers), and it is a directory
//!   itself, not a symbolic link to one;
//! - no process `<pid>` is visible in `/proc`;
//! - no listening socket is bound at its `proxy.sock` (a runtime in another PID namespace,
//!   whose pid this one cannot see, still has its proxy there);
//! - it has not changed for [`STALE_AFTER`] (a directory of such a runtime made a moment ago,
//!   before its proxy was bound);
//! - it holds no directory: only its socket (or other files) is unlinked, never anything
//!   below another directory or mount point.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::cgroup::PREFIX;
use crate::protocol::PROXY_SOCKET;

/// How long a leftover directory must have stood unchanged before it is removed.
pub(super) const STALE_AFTER: Duration = Duration::from_secs(10);

/// The name of a runtime's `n`th sandbox: its directory's here and its memory cgroup's.
pub(super) fn sandbox_name(pid: u32, n: u64) -> String {
    format!("{PREFIX}{pid}-{n}")
}

/// The runtime pid in `name`, if it is exactly a sandbox directory's name.
fn owner(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix(PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
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

/// Removes the sandbox directories of killed runtimes from `run_dir` (see the module's
/// documentation for the rules); returns the directories removed.
///
/// Best effort: a directory that cannot be read or removed is left, and so is every entry that
/// does not meet all the rules.
pub fn sweep(run_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Vec::new();
    };
    let Some(bound) = bound_sockets() else {
        return Vec::new();
    };
    let now = SystemTime::now();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner) else {
            continue;
        };
        let dir = entry.path();
        // `DirEntry::metadata` does not follow a symbolic link.
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_dir() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let socket = dir.join(PROXY_SOCKET);
        if bound.contains(&socket) {
            continue;
        }
        let unchanged = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok());
        if unchanged.is_none_or(|d| d < STALE_AFTER) {
            continue;
        }
        if remove_flat(&dir) {
            removed.push(dir);
        }
    }
    removed
}

/// Unlinks every entry of `dir` and then `dir` itself, unless an entry is a directory (then
/// nothing is removed); whether `dir` is gone.
fn remove_flat(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let entries: Vec<_> = entries.flatten().collect();
    if entries
        .iter()
        .any(|e| e.file_type().map_or(true, |t| t.is_dir()))
    {
        tracing::debug!(dir = %dir.display(), "a leftover sandbox directory holds a directory: kept");
        return false;
    }
    for e in &entries {
        // A symbolic link is unlinked itself, never followed.
        let _ = std::fs::remove_file(e.path());
    }
    std::fs::remove_dir(dir).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_names_have_an_owner() {
        assert_eq!(owner("escepine-sbx-123-4"), Some(123));
        for name in [
            "escepine-sbx-123",
            "escepine-sbx-123-",
            "escepine-sbx--4",
            "escepine-sbx-12a-4",
            "escepine-sbx-123-4-5",
            "escepine-sbx-+123-4",
            "escepine-sbx-123-+4",
            "escepine-spare-123-4",
            "xescepine-sbx-123-4",
            "escepine-sbx-99999999999-1",
        ] {
            assert_eq!(owner(name), None, "{name}");
        }
        assert_eq!(owner(&sandbox_name(7, 8)), Some(7));
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
