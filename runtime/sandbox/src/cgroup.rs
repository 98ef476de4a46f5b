//! The memory bound of each sandbox: a memory cgroup of its own, created below the runtime's
//! own memory cgroup (never at the root of the hierarchy), which every process of the sandbox
//! joins before PID 1 exists.
//!
//! The cgroup counts what `RLIMIT_DATA` does not: shared anonymous mappings, memfds, tmpfs
//! files (the workspace included) and the page cache the sandbox's processes bring in. When the
//! sandbox's processes together reach the bound, the kernel's OOM killer kills one of them in
//! the cgroup, and its `oom_kill` counter tells the host that this is what happened.
//!
//! - cgroup v1 (the memory controller's own hierarchy): `memory.limit_in_bytes`, and
//!   `memory.memsw.limit_in_bytes` (memory plus swap) to the same value when swap accounting
//!   is on, so that swap cannot extend the bound; the OOM kills are in `memory.oom_control`.
//! - cgroup v2: `memory.max`, `memory.swap.max` = 0; the OOM kills are in `memory.events`.
//!   Under v2 a cgroup that delegates a controller to its children may hold no process: when the
//!   runtime's cgroup refuses to enable `memory` for its children for that reason, the runtime
//!   moves itself into a leaf child, `escepine-runtime`, first.
//!
//! Each sandbox's cgroup is named as its run directory, `escepine-sbx-<runtime pid>-<n>-<random>`.
//! At destroy, once its last process has left, it is kept for the next sandbox rather than
//! removed (creating a memory cgroup and the kernel's offlining of a removed one are most of
//! what a cgroup costs): emptied of its page cache when more than [`SPARE_RESIDUE_KEPT`] is left
//! charged to it (v1 `memory.force_empty`, v2 `memory.reclaim`), renamed
//! `escepine-spare-<runtime pid>-<n>-<random>` and put in the parent's spares, at most
//! [`SPARES_KEPT`]; the next sandbox renames one back and sets its bound. Its OOM-kill count is
//! taken as the new baseline. The cgroups a killed runtime left behind (its pid gone),
//! sandboxes' and spares alike, are removed by the next backend that finds the same parent.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The prefix of every sandbox cgroup's name.
pub(super) const PREFIX: &str = "escepine-sbx-";
/// The prefix of an emptied cgroup kept for reuse.
pub(super) const SPARE_PREFIX: &str = "escepine-spare-";
/// How many emptied cgroups a runtime keeps for reuse.
pub(super) const SPARES_KEPT: usize = 128;
/// The leaf a cgroup v2 runtime moves itself into, so that its own cgroup may delegate.
const RUNTIME_LEAF: &str = "escepine-runtime";

/// Why a sandbox's memory cgroup could not be set up or read.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// The runtime's memory cgroup could not be found.
    #[error("cannot find this process's memory cgroup: {0}")]
    NotFound(String),
    /// A cgroup file operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> CgroupError + 'a {
    move |source| CgroupError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Which cgroup interface holds the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Version {
    /// The memory controller's own v1 hierarchy.
    V1,
    /// The unified hierarchy.
    V2,
}

impl Version {
    /// The file of a cgroup that counts its OOM kills (`oom_kill`).
    fn oom_file(self) -> &'static str {
        match self {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        }
    }
}

/// The runtime's own memory cgroup, under which sandboxes get theirs.
#[derive(Debug, Clone)]
pub(super) struct Parent {
    version: Version,
    dir: PathBuf,
    /// Where the hierarchy is mounted (`dir` is beneath it).
    mount: PathBuf,
    /// Emptied cgroups kept for the next sandboxes (shared by the parent's clones).
    spares: std::sync::Arc<std::sync::Mutex<Vec<Cgroup>>>,
}

/// The memory controller's entry of `/proc/self/cgroup`: the v1 `memory` hierarchy's path if
/// there is one, else the unified (`0::`) path.
pub(super) fn own_path(proc_self_cgroup: &str) -> Option<(Version, String)> {
    let mut unified = None;
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.split(',').any(|c| c == "memory") {
            return Some((Version::V1, path.to_string()));
        }
        if id == "0" && controllers.is_empty() {
            unified = Some((Version::V2, path.to_string()));
        }
    }
    unified
}

/// The mount of the hierarchy of `version` in `/proc/self/mountinfo`: its root within the
/// hierarchy and its mount point.
pub(super) fn mount_of(mountinfo: &str, version: Version) -> Option<(String, PathBuf)> {
    for line in mountinfo.lines() {
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = before.split(' ').collect();
        let tail: Vec<&str> = after.split(' ').collect();
        let (Some(root), Some(point), Some(fstype)) = (fields.get(3), fields.get(4), tail.first())
        else {
            continue;
        };
        let found = match version {
            Version::V1 => {
                *fstype == "cgroup"
                    && tail
                        .get(2)
                        .is_some_and(|o| o.split(',').any(|o| o == "memory"))
            }
            Version::V2 => *fstype == "cgroup2",
        };
        if found {
            return Some((unescape(root), PathBuf::from(unescape(point))));
        }
    }
    None
}

/// A mountinfo field with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            let digits = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `oom_kill` count of a `memory.oom_control` (v1) or `memory.events` (v2) text.
pub(super) fn oom_kills(text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

impl Parent {
    /// This process's memory cgroup (from `/proc/self/cgroup` and `/proc/self/mountinfo`).
    ///
    /// # Errors
    /// [`CgroupError::NotFound`] when no hierarchy holds the memory controller for it.
    pub(super) fn discover() -> Result<Self, CgroupError> {
        let read = |p: &str| {
            std::fs::read_to_string(p).map_err(|e| CgroupError::NotFound(format!("{p}: {e}")))
        };
        let (version, path) = own_path(&read("/proc/self/cgroup")?)
            .ok_or_else(|| CgroupError::NotFound("no memory controller".into()))?;
        let (root, point) = mount_of(&read("/proc/self/mountinfo")?, version).ok_or_else(|| {
            CgroupError::NotFound(format!("the {version:?} hierarchy is not mounted"))
        })?;
        // The mount may show a subtree of the hierarchy (a container's cgroup namespace).
        let relative = path
            .strip_prefix(root.trim_end_matches('/'))
            .unwrap_or(&path)
            .trim_start_matches('/');
        let mut dir = point.join(relative);
        if version == Version::V2 {
            if dir.file_name().is_some_and(|n| n == RUNTIME_LEAF) {
                if let Some(up) = dir.parent() {
                    dir = up.to_path_buf();
                }
            }
            let controllers = std::fs::read_to_string(dir.join("cgroup.controllers"))
                .map_err(io_err("reading", &dir.join("cgroup.controllers")))?;
            if !controllers.split_whitespace().any(|c| c == "memory") {
                return Err(CgroupError::NotFound(format!(
                    "the memory controller is not available in {}",
                    dir.display()
                )));
            }
        }
        if !dir.is_dir() {
            return Err(CgroupError::NotFound(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
        let parent = Self {
            version,
            dir,
            mount: point,
            spares: std::sync::Arc::default(),
        };
        parent.sweep();
        Ok(parent)
    }

    /// Removes the sandbox cgroups of runtimes that are gone (best effort: a cgroup still in
    /// use cannot be removed).
    fn sweep(&self) {
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(owner) = name
                .to_str()
                .and_then(|n| {
                    n.strip_prefix(PREFIX)
                        .or_else(|| n.strip_prefix(SPARE_PREFIX))
                })
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            if !Path::new(&format!("/proc/{owner}")).exists() {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }

    /// Lets children of the runtime's cgroup use the memory controller (v2 only).
    fn delegate(&self) -> Result<(), CgroupError> {
        let control = self.dir.join("cgroup.subtree_control");
        let enabled = std::fs::read_to_string(&control).unwrap_or_default();
        if enabled.split_whitespace().any(|c| c == "memory") {
            return Ok(());
        }
        match std::fs::write(&control, "+memory") {
            Ok(()) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                // Processes in this cgroup: move this one into a leaf of its own, then delegate.
                let leaf = self.dir.join(RUNTIME_LEAF);
                match std::fs::create_dir(&leaf) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(io_err("creating", &leaf)(e)),
                }
                let procs = leaf.join("cgroup.procs");
                std::fs::write(&procs, std::process::id().to_string())
                    .map_err(io_err("moving the runtime into", &procs))?;
                std::fs::write(&control, "+memory").map_err(io_err("writing", &control))
            }
            Err(e) => Err(io_err("writing", &control)(e)),
        }
    }

    /// A new cgroup for one sandbox, bounded to `bytes` of memory.
    ///
    /// # Errors
    /// [`CgroupError::Io`] naming the file that could not be created or written (the cgroup is
    /// removed again then).
    pub(super) fn create(&self, name: &str, bytes: u64) -> Result<Cgroup, CgroupError> {
        while let Some(spare) = self.spares.lock().ok().and_then(|mut s| s.pop()) {
            if let Some(cgroup) = self.reuse(spare, name, bytes) {
                return Ok(cgroup);
            }
        }
        if self.version == Version::V2 {
            self.delegate()?;
        }
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir).map_err(io_err("creating", &dir))?;
        let oom_file = dir.join(self.version.oom_file());
        let oom_events = match std::fs::File::open(&oom_file) {
            Ok(file) => file,
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(io_err("opening", &oom_file)(e));
            }
        };
        let cgroup = Cgroup {
            version: self.version,
            bound: bytes,
            oom_base: 0,
            oom_events,
            path: self.path_of(&dir),
            dir,
        };
        let bound = bytes.to_string();
        let settings: &[(&str, &str, bool)] = match self.version {
            // memsw exists only with swap accounting; it must not be below the memory limit,
            // so it is written second.
            Version::V1 => &[
                ("memory.limit_in_bytes", &bound, true),
                ("memory.memsw.limit_in_bytes", &bound, false),
            ],
            Version::V2 => &[
                ("memory.max", &bound, true),
                ("memory.swap.max", "0", false),
            ],
        };
        for (file, value, required) in settings {
            let path = cgroup.dir.join(file);
            if !required && !path.exists() {
                continue;
            }
            if let Err(e) = std::fs::write(&path, value) {
                let _ = std::fs::remove_dir(&cgroup.dir);
                return Err(io_err("writing", &path)(e));
            }
        }
        Ok(cgroup)
    }
}

impl Parent {
    /// `spare` renamed `name` and bounded to `bytes`, or `None` (then it is removed) when that
    /// fails.
    fn reuse(&self, mut spare: Cgroup, name: &str, bytes: u64) -> Option<Cgroup> {
        let dir = self.dir.join(name);
        if std::fs::rename(&spare.dir, &dir).is_err() {
            let _ = spare.remove(Duration::ZERO);
            return None;
        }
        spare.dir = dir;
        spare.path = self.path_of(&spare.dir);
        if spare.bound != bytes {
            let (limit, swap) = match self.version {
                Version::V1 => ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
                Version::V2 => ("memory.max", ""),
            };
            let bound = bytes.to_string();
            // memsw may not be below the limit: raise it first when the bound grows, lower it
            // second when it shrinks.
            let swap = spare.dir.join(swap);
            let swap = (self.version == Version::V1 && swap.exists()).then_some(swap);
            let mut order = vec![spare.dir.join(limit)];
            if let Some(swap) = swap {
                if bytes > spare.bound {
                    order.insert(0, swap);
                } else {
                    order.push(swap);
                }
            }
            if order.iter().any(|f| std::fs::write(f, &bound).is_err()) {
                let _ = spare.remove(Duration::ZERO);
                return None;
            }
            spare.bound = bytes;
        }
        Some(spare)
    }

    /// Keeps `cgroup`, whose processes have all left it, for a next sandbox (emptied of its
    /// page cache when more than [`SPARE_RESIDUE_KEPT`] is charged to it, renamed a spare);
    /// removes it when the spares are full or it cannot be kept.
    ///
    /// # Errors
    /// The removal's error, when it is removed and still busy.
    pub(super) fn recycle(&self, mut cgroup: Cgroup) -> io::Result<()> {
        let full = self.spares.lock().map_or(true, |s| s.len() >= SPARES_KEPT);
        if full || !cgroup.is_empty() {
            return cgroup.remove(CGROUP_PATIENCE);
        }
        let residue = cgroup.usage();
        if residue > SPARE_RESIDUE_KEPT {
            // Uncharges what the last sandbox left cached, so the next starts (nearly) from
            // nothing.
            let _ = match self.version {
                Version::V1 => std::fs::write(cgroup.dir.join("memory.force_empty"), "0"),
                Version::V2 => {
                    std::fs::write(cgroup.dir.join("memory.reclaim"), residue.to_string())
                }
            };
        }
        let Some(leaf) = cgroup.dir.file_name().and_then(|n| n.to_str()) else {
            return cgroup.remove(CGROUP_PATIENCE);
        };
        let spare = self.dir.join(leaf.replacen(PREFIX, SPARE_PREFIX, 1));
        if std::fs::rename(&cgroup.dir, &spare).is_err() {
            return cgroup.remove(CGROUP_PATIENCE);
        }
        cgroup.dir = spare;
        cgroup.oom_base = cgroup.oom_total();
        match self.spares.lock() {
            Ok(mut spares) => {
                spares.push(cgroup);
                Ok(())
            }
            Err(_) => cgroup.remove(CGROUP_PATIENCE),
        }
    }

    /// Removes every spare (the backend is going away).
    pub(super) fn release_spares(&self) {
        let spares = self
            .spares
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        for spare in spares {
            let _ = spare.remove(Duration::ZERO);
        }
    }

    /// `dir`'s path in the hierarchy.
    fn path_of(&self, dir: &Path) -> PathBuf {
        dir.strip_prefix(&self.mount)
            .map(|p| Path::new("/").join(p))
            .unwrap_or_else(|_| dir.to_path_buf())
    }
}

/// The most a spare may stay charged with, of its last sandbox's page cache and kernel
/// objects, without being emptied. Emptying (v1 `memory.force_empty`, v2 `memory.reclaim`)
/// runs the kernel's reclaim and drains every CPU's charge cache: 1.6 ms (median) and about a
/// quarter of a millisecond of CPU, measured for the 100–200 KiB a short tool leaves behind,
/// of which it leaves 4–40 KiB all the same. What a spare keeps counts against the next
/// sandbox's bound; it is page cache and kernel objects the kernel reclaims first when that
/// sandbox nears its bound.
pub const SPARE_RESIDUE_KEPT: u64 = 1 << 20;

/// How long removing an emptied cgroup waits for its last process to leave.
const CGROUP_PATIENCE: Duration = Duration::from_secs(5);

/// One sandbox's memory cgroup.
#[derive(Debug)]
pub(super) struct Cgroup {
    version: Version,
    dir: PathBuf,
    /// Its memory bound, in bytes.
    bound: u64,
    /// Its OOM-kill count when it was last handed out (a reused cgroup's earlier kills).
    oom_base: u64,
    /// Its file of OOM kills ([`Version::oom_file`]), open as long as the cgroup (a rename
    /// keeps it): read again at each job's end without a walk of its path or an `open`.
    oom_events: std::fs::File,
    /// Its path in the hierarchy (`/…/escepine-sbx-…`), as an OCI `cgroupsPath` names it.
    path: PathBuf,
}

impl Cgroup {
    /// Its directory (the sandbox's PID 1 moves itself into it, through a file of it the
    /// zygote opened: `tasks` on v1, `cgroup.procs` on v2).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether no process is in it any more.
    pub(super) fn is_empty(&self) -> bool {
        std::fs::read_to_string(self.dir.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty())
    }

    /// Its path in the hierarchy, from the hierarchy's root.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The memory charged to it now, in bytes (0 if it cannot be read).
    pub(super) fn usage(&self) -> u64 {
        let file = match self.version {
            Version::V1 => "memory.usage_in_bytes",
            Version::V2 => "memory.current",
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    /// How many processes of the sandbox the OOM killer has killed.
    pub(super) fn oom_kills(&self) -> u64 {
        self.oom_total().saturating_sub(self.oom_base)
    }

    /// The cgroup's OOM-kill counter, since it was created.
    fn oom_total(&self) -> u64 {
        // Either file is a few lines; a read from offset 0 has the kernel write it anew.
        let mut text = [0u8; 1024];
        rustix::io::pread(&self.oom_events, &mut text, 0)
            .ok()
            .and_then(|n| std::str::from_utf8(&text[..n]).ok())
            .map_or(0, oom_kills)
    }

    /// Sends `SIGKILL` to every process in the cgroup, until none is left or `patience` has
    /// passed (a process forking meanwhile is caught on the next round); whether it is empty.
    pub(super) fn kill_all(&self, patience: Duration) -> bool {
        let deadline = std::time::Instant::now() + patience;
        let procs = self.dir.join("cgroup.procs");
        loop {
            let pids: Vec<i32> = std::fs::read_to_string(&procs)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect();
            if pids.is_empty() {
                return true;
            }
            for pid in pids.into_iter().filter_map(rustix::process::Pid::from_raw) {
                // ESRCH: it ended meanwhile.
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Removes the cgroup once its last process has gone (a few retries: an exiting process
    /// leaves the cgroup just after its parent sees it exit).
    ///
    /// # Errors
    /// The last `rmdir` error, when the cgroup is still busy after the retries.
    pub(super) fn remove(&self, patience: Duration) -> io::Result<()> {
        let deadline = std::time::Instant::now() + patience;
        loop {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    if std::time::Instant::now() >= deadline {
                        return Err(e);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_hierarchy_is_found_in_proc_self_cgroup() {
        let v1 = "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(
            own_path(v1),
            Some((Version::V1, "/process_api/abc".to_string()))
        );
        let v1_joined = "5:cpu,memory:/a/b\n";
        assert_eq!(own_path(v1_joined), Some((Version::V1, "/a/b".to_string())));
        let v2 = "0::/user.slice/session-1.scope\n";
        assert_eq!(
            own_path(v2),
            Some((Version::V2, "/user.slice/session-1.scope".to_string()))
        );
        assert_eq!(own_path("3:cpu:/x\n"), None);
    }

    #[test]
    fn the_hierarchy_mount_is_found_in_mountinfo() {
        let info = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
33 30 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
36 30 0:32 /docker/x /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        assert_eq!(
            mount_of(info, Version::V1),
            Some((
                "/docker/x".to_string(),
                PathBuf::from("/sys/fs/cgroup/memory")
            ))
        );
        assert_eq!(
            mount_of(info, Version::V2),
            Some(("/".to_string(), PathBuf::from("/sys/fs/cgroup/unified")))
        );
        assert_eq!(
            mount_of("1 0 0:1 / /a\\040b rw - cgroup2 cgroup2 rw\n", Version::V2),
            Some(("/".to_string(), PathBuf::from("/a b")))
        );
    }

    #[test]
    fn oom_kills_are_counted_in_either_format() {
        assert_eq!(
            oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"),
            3
        );
        assert_eq!(
            oom_kills("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\noom_group_kill 0\n"),
            2
        );
        assert_eq!(oom_kills("oom_kill_disable 0\nunder_oom 0\n"), 0);
    }
}
