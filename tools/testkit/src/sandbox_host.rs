//! The host's view of sandboxes: the processes whose real uid is one of a Linux backend's
//! sandbox ids (the default base, and the 60,000 ids from there it may map).

use escepine_sandbox::DEFAULT_UID_BASE;

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
