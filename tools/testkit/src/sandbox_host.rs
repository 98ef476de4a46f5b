//! The host's view of sandboxes: the processes whose real uid is one of a Linux backend's
//! sandbox ids (the default base, and the 60,000 ids from there it may map), and the memory
//! cgroups a runtime's backends make.

use escepine_sandbox::DEFAULT_UID_BASE;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The outside uids of sandboxes on the default base.
pub const UID_RANGE: std::ops::Range<u32> = DEFAULT_UID_BASE..DEFAULT_UID_BASE + 60_000;

/// The pids of the processes this one sees (the numeric entries of `/proc`).
pub fn host_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
}

/// Host pids and names of the processes whose real uid is in [`UID_RANGE`].
pub fn sandbox_processes() -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for pid in host_pids() {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let name = status
            .lines()
            .find_map(|l| l.strip_prefix("Name:"))
            .unwrap_or("")
            .trim()
            .to_string();
        if real_uid(&status).is_some_and(|u| UID_RANGE.contains(&u)) {
            out.push((pid, name));
        }
    }
    out
}

/// The real uid of process `pid`, if it still exists.
pub fn uid_of(pid: u32) -> Option<u32> {
    real_uid(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// The real uid in the text of a `/proc/<pid>/status` file.
fn real_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The prefix of a sandbox's memory cgroup and of its run directory:
/// `escepine-sbx-<runtime pid>-…`.
pub const SANDBOX_CGROUP: &str = "escepine-sbx-";
/// The prefix of an emptied memory cgroup a backend keeps for reuse:
/// `escepine-spare-<runtime pid>-…`.
pub const SPARE_CGROUP: &str = "escepine-spare-";

/// This process's memory cgroup directory (v1 `memory` hierarchy, else the unified one; the
/// parent of a cgroup v2 runtime's leaf `escepine-runtime`): where a Linux backend of this
/// process, or of a child that stayed in its cgroup, makes its sandboxes' cgroups.
pub fn own_memory_cgroup() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let (v1, path) = cgroups
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == "memory")
                .then(|| (true, path.to_string()))
        })
        .or_else(|| {
            cgroups
                .lines()
                .find_map(|l| l.strip_prefix("0::").map(|p| (false, p.to_string())))
        })?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let tail: Vec<&str> = after.split(' ').collect();
        let found = if v1 {
            tail[0] == "cgroup" && tail.get(2)?.split(',').any(|o| o == "memory")
        } else {
            tail[0] == "cgroup2"
        };
        if !found {
            return None;
        }
        let relative = path
            .strip_prefix(fields[3].trim_end_matches('/'))
            .unwrap_or(&path)
            .trim_start_matches('/');
        let mut dir = PathBuf::from(fields[4]).join(relative);
        if dir.ends_with("escepine-runtime") {
            dir.pop();
        }
        Some(dir)
    })
}

/// The memory cgroups named `<prefix><pid>-…` ([`SANDBOX_CGROUP`], [`SPARE_CGROUP`]) that
/// exist now beside this process's own memory cgroup.
pub fn cgroups_of(pid: u32, prefix: &str) -> Vec<PathBuf> {
    own_memory_cgroup().map_or_else(Vec::new, |dir| named_in(&dir, &format!("{prefix}{pid}-")))
}

/// The entries of `dir` whose name starts with `prefix` (none if it cannot be read): a run
/// directory's sandboxes are named as their cgroups, `<SANDBOX_CGROUP><pid>-…`.
pub fn named_in(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect()
}

/// The names of the sandbox memory cgroups of the process `pid` that exist now.
pub fn sandbox_cgroups_of(pid: u32) -> Vec<String> {
    cgroups_of(pid, SANDBOX_CGROUP)
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect()
}

/// Live (not zombie) children of `parent`.
pub fn children_of(parent: u32) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for pid in host_pids() {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 1 && fields[0] != "Z" && fields[1].parse::<u32>().ok() == Some(parent) {
            out.insert(pid);
        }
    }
    out
}

/// Whether `pid` is a backend's zygote (`escepine-init --server`): it lives as long
/// as its backend.
pub fn is_zygote(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
        c.split(|b| *b == 0)
            .any(|arg| arg == escepine_sandbox::init::SERVER_FLAG.as_bytes())
    })
}

/// This process's live zygotes.
pub fn zygotes() -> BTreeSet<u32> {
    children_of(std::process::id())
        .into_iter()
        .filter(|p| is_zygote(*p))
        .collect()
}
