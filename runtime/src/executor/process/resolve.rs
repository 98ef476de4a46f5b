//! Finding a tool's binary at run time, and the verified copy of a pinned one.

use std::collections::HashMap;
use std::fs::File;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::record::ResolvedCommand;
use escepine_registry::record::ToolRecord;
use escepine_sandbox::io::copy_hashing;

use crate::executor::seam::ExecError;

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
/// `Path` and `OnPath` are used as registered (they must still be files). A `Linked` host is this
/// program's own binary. A `WorkspaceBin` is the
/// first existing file among: the configured directories, the directory of the current executable
/// and its parent (so `target/debug/escepine` and test binaries in `target/debug/deps` both find
/// `target/debug/<bin>`), then [`WorkspaceBins::built_candidates`] of the workspace root (the
/// configured one, else the one above the record's file, else the one above the working
/// directory).
pub(super) fn locate(tool: &ToolRecord, dirs: &SearchDirs) -> Result<PathBuf, ExecError> {
    match &tool.endpoint().resolved {
        ResolvedCommand::Path(p) | ResolvedCommand::OnPath(p) => {
            if p.is_file() {
                Ok(p.clone())
            } else {
                Err(ExecError::Spawn(format!(
                    "the endpoint binary {} of `{}` does not exist (any more)",
                    p.display(),
                    tool.tool_id()
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
                tool.tool_id(),
                looked.join(", ")
            )))
        }
        // The program itself serves the host's tools (started with the flag and the host's
        // name before the endpoint's arguments: see `ProcessExecutor::command`).
        ResolvedCommand::Linked(name) => std::env::current_exe().map_err(|e| {
            ExecError::Spawn(format!(
                "`{}` is served by the tool host `{name}` linked into this program, which cannot \
                 locate its own binary: {e}",
                tool.tool_id()
            ))
        }),
        ResolvedCommand::InImage(_) => Err(ExecError::Spawn(format!(
            "`{}` runs inside its image `{}`: its command is not a host binary",
            tool.tool_id(),
            tool.endpoint()
                .image
                .as_ref()
                .map_or_else(String::new, ToString::to_string)
        ))),
        ResolvedCommand::Remote => Err(ExecError::Spawn(format!(
            "`{}` is a remote endpoint (`mcp-http`): it has no binary",
            tool.tool_id()
        ))),
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
            tool.source()
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

/// What identifies one version of a file on disk: a copy verified for one stamp is reused
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
    fn of(m: &std::fs::Metadata) -> Self {
        Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// A private, sealed copy (a memfd) of a pinned binary, made while its digest was computed:
/// what runs is exactly what was hashed, whatever happens to the file afterwards.
#[derive(Debug, Clone)]
pub struct PinnedCopy {
    fd: Arc<OwnedFd>,
}

impl PinnedCopy {
    /// The copy's descriptor (close-on-exec; the process executor executes it through
    /// `/proc/self/fd/N`, keeping it open across the exec for a script's interpreter).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A new memfd holding a copy of `file`, sealed against any change; with its digest.
fn sealed_copy(file: &mut File, name: &Path) -> std::io::Result<(String, PinnedCopy)> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let label = format!(
        "escepine-pinned:{}",
        name.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
    // MFD_EXEC (Linux 6.3) says the copy is meant to be executed; older kernels refuse the flag
    // and allow it anyway.
    let fd = match rustix::fs::memfd_create(&label, flags | MemfdFlags::EXEC) {
        Err(rustix::io::Errno::INVAL) => rustix::fs::memfd_create(&label, flags)?,
        other => other?,
    };
    let mut copy = File::from(fd);
    let digest = copy_hashing(file, &mut copy)?;
    rustix::fs::fcntl_add_seals(
        &copy,
        SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
    )?;
    Ok((
        digest,
        PinnedCopy {
            fd: Arc::new(OwnedFd::from(copy)),
        },
    ))
}

/// Verified copies of pinned binaries (and the digests of mismatching ones), by path and stamp.
#[derive(Debug, Default)]
pub(super) struct PinCache {
    known: Mutex<HashMap<PathBuf, (Stamp, String, PinnedCopy)>>,
}

impl PinCache {
    /// The digest of the file at `path` and a sealed copy of exactly the bytes hashed
    /// (blocking: call off the runtime). The file is opened once; its stamp is taken from the
    /// open file, so a cached copy is only reused for the version it was made from.
    fn copy(&self, path: &Path) -> std::io::Result<(String, PinnedCopy)> {
        let now = Stamp::of(&std::fs::metadata(path)?);
        if let Ok(known) = self.known.lock() {
            if let Some((stamp, digest, copy)) = known.get(path) {
                if *stamp == now {
                    return Ok((digest.clone(), copy.clone()));
                }
            }
        }
        let mut file = File::open(path)?;
        let opened = Stamp::of(&file.metadata()?);
        let (digest, copy) = sealed_copy(&mut file, path)?;
        // Remembered only if the file did not change while it was read.
        if Stamp::of(&file.metadata()?) == opened {
            if let Ok(mut known) = self.known.lock() {
                known.insert(path.to_path_buf(), (opened, digest.clone(), copy.clone()));
            }
        }
        Ok((digest, copy))
    }
}

/// The sealed copy of the binary at `path`, refused unless its digest is `expected` (hex, any
/// case).
pub(super) fn verify_digest(
    cache: &PinCache,
    tool_id: &str,
    path: &Path,
    expected: &str,
) -> Result<PinnedCopy, ExecError> {
    let (actual, copy) = cache.copy(path).map_err(|e| {
        ExecError::Spawn(format!(
            "cannot hash the endpoint binary {} of `{tool_id}`: {e}",
            path.display()
        ))
    })?;
    check_digest(tool_id, path, &actual, expected)?;
    Ok(copy)
}

/// Refuses `path` unless `actual` is `expected` (hex, any case).
fn check_digest(tool_id: &str, path: &Path, actual: &str, expected: &str) -> Result<(), ExecError> {
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
    use std::io::{Read, Write};

    use super::*;

    fn read_all(copy: &PinnedCopy) -> Vec<u8> {
        let mut f = File::from(copy.fd().try_clone_to_owned().expect("dup"));
        let mut out = Vec::new();
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0)).expect("seek");
        f.read_to_end(&mut out).expect("read");
        out
    }

    #[test]
    fn the_copy_is_what_was_hashed_and_is_reused_until_the_file_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("bin");
        std::fs::write(&p, b"abc").expect("write");
        let cache = PinCache::default();
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let first = verify_digest(&cache, "t", &p, abc).expect("the pinned content");
        assert_eq!(read_all(&first), b"abc");
        let again = verify_digest(&cache, "t", &p, &abc.to_uppercase()).expect("cached");
        assert!(Arc::ptr_eq(&first.fd, &again.fd));
        std::fs::write(&p, b"abd").expect("write");
        assert!(verify_digest(&cache, "t", &p, abc).is_err());
        // The copy made before is sealed: the file's change did not reach it, nor can a write.
        assert_eq!(read_all(&first), b"abc");
        let mut f = File::from(first.fd().try_clone_to_owned().expect("dup"));
        assert!(f.write_all(b"x").is_err());
        std::fs::write(&p, b"abc").expect("write");
        let third = verify_digest(&cache, "t", &p, abc).expect("the pinned content again");
        assert_eq!(read_all(&third), b"abc");
    }
}
