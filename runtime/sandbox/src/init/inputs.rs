//! The call's workspace inputs: each file written into the workspace by PID 1 and bound
//! read-only over itself, before the tool executes.
//!
//! The workspace is the tool's own tmpfs (`nosuid`, `nodev`, `noexec`), owned by the sandbox's
//! uid 0 — which the tool also is — so a mode of `0444` alone would not stop it: the file is a
//! mount point of a read-only bind, so writing, truncating or `chmod` fails with `EROFS`, and
//! unlinking or renaming it with `EBUSY`, while the tool (which has no capability left and no
//! mount system call under seccomp) cannot take the bind away.

use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::mount::MountFlags;

use crate::protocol::{ExecFile, WORKSPACE};

/// Writes every file and makes it read-only; a name that is not a plain file name, a file that
/// exists already or bytes that are not hex fail the call before the tool starts.
pub(super) fn place(files: Vec<ExecFile>) -> Result<(), String> {
    if files.is_empty() {
        return Ok(());
    }
    let dir = rustix::fs::open(
        WORKSPACE,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .map_err(|e| format!("opening {WORKSPACE} for the workspace inputs: {e}"))?;
    for ExecFile { name, hex } in files {
        if let Some(problem) = escepine_contract::files::input_name_problem(&name) {
            return Err(problem);
        }
        let bytes = hex::decode(&hex)
            .map_err(|e| format!("the workspace input `{name}` is not hex-encoded: {e}"))?;
        drop(hex);
        let fd = rustix::fs::openat(
            dir.as_fd(),
            name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o444),
        )
        .map_err(|e| format!("creating the workspace input {WORKSPACE}/{name}: {e}"))?;
        std::fs::File::from(fd)
            .write_all(&bytes)
            .map_err(|e| format!("writing the workspace input {WORKSPACE}/{name}: {e}"))?;
        let path = format!("{WORKSPACE}/{name}");
        let path = Path::new(&path);
        rustix::mount::mount_bind(path, path)
            .map_err(|e| format!("binding the workspace input {}: {e}", path.display()))?;
        rustix::mount::mount_remount(
            path,
            MountFlags::BIND
                | MountFlags::RDONLY
                | MountFlags::NOSUID
                | MountFlags::NODEV
                | MountFlags::NOEXEC,
            "",
        )
        .map_err(|e| {
            format!(
                "making the workspace input {} read-only: {e}",
                path.display()
            )
        })?;
    }
    Ok(())
}
