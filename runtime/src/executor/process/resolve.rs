//! Finding a tool's binary at run time and checking its digest.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use registry_build::endpoint::WorkspaceBins;
use registry_build::{ResolvedCommand, ToolRecord};
use sha2::{Digest, Sha256};

use crate::executor::ExecError;

/// Where [`locate`] looks for a workspace binary, besides the fixed places.
#[derive(Debug, Clone, Default)]
pub(super) struct SearchDirs {
    /// Directories configured on the executor, searched first, in order.
    pub bin_dirs: Vec<PathBuf>,
    /// The workspace root whose `target/` holds built binaries, when configured.
    pub workspace_root: Option<PathBuf>,
}

/// The path of the binary the tool's endpoint names.
///
/// `Path` and `OnPath` are used as registered (they must still be files). A `WorkspaceBin` is the
/// first existing file among: the configured directories, the directory of the current executable
/// and its parent (so `target/debug/escepine` and test binaries in `target/debug/deps` both find
/// `target/debug/<bin>`), then [`WorkspaceBins::built_candidates`] of the workspace root (the
/// configured one, else the one above the record's file, else the one above the working
/// directory).
pub(super) fn locate(tool: &ToolRecord, dirs: &SearchDirs) -> Result<PathBuf, ExecError> {
    match &tool.endpoint.resolved {
        ResolvedCommand::Path(p) | ResolvedCommand::OnPath(p) => {
            if p.is_file() {
                Ok(p.clone())
            } else {
                Err(ExecError::Spawn(format!(
                    "the endpoint binary {} of `{}` does not exist (any more)",
                    p.display(),
                    tool.tool_id
                )))
            }
        }
        ResolvedCommand::WorkspaceBin(name) => {
            let mut looked = near_candidates(name, dirs);
            if let Some(found) = looked.iter().find(|p| p.is_file()) {
                return Ok(found.clone());
            }
            let built = built_candidates(name, tool, dirs);
            if let Some(found) = built.iter().find(|p| p.is_file()) {
                return Ok(found.clone());
            }
            looked.extend(built);
            let looked: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
            Err(ExecError::Spawn(format!(
                "the workspace binary `{name}` of `{}` is not built (looked in: {}); \
                 build it with `cargo build --bin {name}`",
                tool.tool_id,
                looked.join(", ")
            )))
        }
    }
}

/// The configured directories, then beside and above the current executable.
fn near_candidates(name: &str, dirs: &SearchDirs) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = dirs.bin_dirs.iter().map(|d| d.join(name)).collect();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            out.push(dir.join(name));
            if let Some(up) = dir.parent() {
                out.push(up.join(name));
            }
        }
    }
    out
}

/// Where the workspace builds the binary (`<target>/{release,debug}/<name>`).
fn built_candidates(name: &str, tool: &ToolRecord, dirs: &SearchDirs) -> Vec<PathBuf> {
    let root = dirs
        .workspace_root
        .clone()
        .or_else(|| {
            tool.source
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .and_then(WorkspaceBins::find_root)
        })
        .or_else(cwd_root);
    let bins = WorkspaceBins {
        root,
        ..WorkspaceBins::default()
    };
    bins.built_candidates(name)
}

/// The workspace root above the working directory, looked up once.
fn cwd_root() -> Option<PathBuf> {
    static ROOT: OnceLock<Option<PathBuf>> = OnceLock::new();
    ROOT.get_or_init(|| {
        std::env::current_dir()
            .ok()
            .and_then(|d| WorkspaceBins::find_root(&d))
    })
    .clone()
}

/// What identifies one version of a file on disk: a digest computed for one stamp is reused
/// while the stamp is unchanged (`ctime` moves on every write and cannot be set back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> std::io::Result<Self> {
        let m = std::fs::metadata(path)?;
        Ok(Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// SHA-256 digests of binaries already hashed, by path and stamp.
#[derive(Debug, Default)]
pub(super) struct DigestCache {
    known: Mutex<HashMap<PathBuf, (Stamp, String)>>,
}

impl DigestCache {
    /// The lower-case hex SHA-256 digest of the file at `path` (blocking: call off the runtime).
    pub(super) fn digest(&self, path: &Path) -> std::io::Result<String> {
        let stamp = Stamp::of(path)?;
        if let Ok(known) = self.known.lock() {
            if let Some((s, d)) = known.get(path) {
                if *s == stamp {
                    return Ok(d.clone());
                }
            }
        }
        let digest = sha256_file(path)?;
        // Only remember the digest if the file did not change while it was read.
        if Stamp::of(path)? == stamp {
            if let Ok(mut known) = self.known.lock() {
                known.insert(path.to_path_buf(), (stamp, digest.clone()));
            }
        }
        Ok(digest)
    }
}

fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Refuses the binary at `path` unless its digest is `expected` (hex, any case).
pub(super) fn verify_digest(
    cache: &DigestCache,
    tool_id: &str,
    path: &Path,
    expected: &str,
) -> Result<(), ExecError> {
    let actual = cache.digest(path).map_err(|e| {
        ExecError::Spawn(format!(
            "cannot hash the endpoint binary {} of `{tool_id}`: {e}",
            path.display()
        ))
    })?;
    if actual.eq_ignore_ascii_case(expected.trim()) {
        Ok(())
    } else {
        Err(ExecError::Spawn(format!(
            "refusing to run {} for `{tool_id}`: its SHA-256 digest is {actual}, the record \
             expects {}",
            path.display(),
            expected.trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_cached_until_the_file_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("bin");
        std::fs::write(&p, b"abc").expect("write");
        let cache = DigestCache::default();
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(cache.digest(&p).expect("digest"), abc);
        assert_eq!(cache.digest(&p).expect("digest"), abc);
        std::fs::write(&p, b"abd").expect("write");
        assert_ne!(cache.digest(&p).expect("digest"), abc);
        assert!(verify_digest(&cache, "t", &p, abc).is_err());
        std::fs::write(&p, b"abc").expect("write");
        assert!(verify_digest(&cache, "t", &p, &abc.to_uppercase()).is_ok());
    }
}
