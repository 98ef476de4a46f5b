//! The sandbox's root file system: a fresh tmpfs holding read-only binds of exactly the host
//! paths the tool needs, device nodes, a `/proc` of the sandbox's PID namespace, a minimal `/etc`
//! and the workspace tmpfs; then `pivot_root` into it and the host's tree detached.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, StatVfsMountFlags};
use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};

use super::fd_path;
use crate::sandbox::protocol::{Provision, PROXY_DIR, WORKSPACE};

/// Where the new root is assembled (covered only inside the sandbox's mount namespace).
const STAGING: &str = "/tmp";
/// Device nodes bound from the host.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// One host path to bind, opened before anything is covered.
pub(super) struct Source {
    target: PathBuf,
    fd: OwnedFd,
    is_dir: bool,
    read_only: bool,
}

/// Every bind source, opened `O_PATH` (a bind from `/proc/self/fd/N` needs no path lookup later).
pub(super) struct Sources {
    read_only: Vec<Source>,
    devices: Vec<Source>,
    proxy: Option<Source>,
}

fn open_source(path: &Path, target: PathBuf, read_only: bool) -> Result<Source, String> {
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("stat {}: {e}", path.display()))?;
    Ok(Source {
        target,
        fd,
        is_dir: FileType::from_raw_mode(st.st_mode) == FileType::Directory,
        read_only,
    })
}

/// Opens every source named by the provision.
pub(super) fn open_sources(p: &Provision) -> Result<Sources, String> {
    let mut paths: Vec<PathBuf> = p
        .read_only
        .iter()
        .filter(|p| p.is_absolute())
        .map(|p| normalise(p))
        .collect();
    paths.sort();
    paths.dedup();
    let mut read_only: Vec<Source> = Vec::new();
    for path in paths {
        // A path beneath a directory bound already is visible through it.
        if read_only
            .iter()
            .any(|s| s.is_dir && path.starts_with(&s.target))
        {
            continue;
        }
        read_only.push(open_source(&path, path.clone(), true)?);
    }
    let devices = DEVICES
        .iter()
        .map(|d| {
            open_source(
                &Path::new("/dev").join(d),
                PathBuf::from(format!("/dev/{d}")),
                false,
            )
        })
        .collect::<Result<_, _>>()?;
    let proxy = match &p.proxy_dir {
        Some(dir) => Some(open_source(dir, PathBuf::from(PROXY_DIR), true)?),
        None => None,
    };
    Ok(Sources {
        read_only,
        devices,
        proxy,
    })
}

/// `path` without `.`/`..` components (lexically; the host side passes canonical paths).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
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

/// `target` beneath the staging root.
fn staged(target: &Path) -> PathBuf {
    Path::new(STAGING).join(target.strip_prefix("/").unwrap_or(target))
}

fn mkdirs(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))
}

/// Creates the mount point and binds the source there (read-only if asked).
fn bind(src: &Source) -> Result<(), String> {
    let at = staged(&src.target);
    if let Some(parent) = at.parent() {
        mkdirs(parent)?;
    }
    if src.is_dir {
        mkdirs(&at)?;
    } else if !at.exists() {
        fs::File::create(&at).map_err(|e| format!("create {}: {e}", at.display()))?;
    }
    rustix::mount::mount_bind(fd_path(&src.fd).as_str(), &at)
        .map_err(|e| format!("bind {}: {e}", src.target.display()))?;
    if src.read_only {
        // A bind remount must keep the flags the kernel locked on the source (atime, noexec).
        let vfs = rustix::fs::fstatvfs(&src.fd)
            .map_err(|e| format!("statvfs {}: {e}", src.target.display()))?;
        let mut flags =
            MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV;
        for (have, set) in [
            (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
            (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
            (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
            (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
        ] {
            if vfs.f_flag.contains(have) {
                flags |= set;
            }
        }
        rustix::mount::mount_remount(&at, flags, "")
            .map_err(|e| format!("read-only remount of {}: {e}", src.target.display()))?;
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if path.exists() {
        return Ok(());
    }
    fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))
}

/// Builds the root and pivots into it.
pub(super) fn build(p: &Provision, sources: Sources) -> Result<(), String> {
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| format!("making / private: {e}"))?;
    rustix::mount::mount(
        "tmpfs",
        STAGING,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        c"mode=0755,size=4m",
    )
    .map_err(|e| format!("mounting the root tmpfs: {e}"))?;
    for src in &sources.read_only {
        bind(src)?;
    }
    let dev = staged(Path::new("/dev"));
    mkdirs(&dev)?;
    for src in &sources.devices {
        bind(src)?;
    }
    for (name, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        rustix::fs::symlink(to, dev.join(name)).map_err(|e| format!("symlink /dev/{name}: {e}"))?;
    }
    // procfs of the new PID namespace: mountable only while a full /proc is still visible.
    let proc_dir = staged(Path::new("/proc"));
    mkdirs(&proc_dir)?;
    rustix::mount::mount(
        "proc",
        &proc_dir,
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|e| format!("mounting /proc: {e}"))?;
    let workspace = staged(Path::new(WORKSPACE));
    mkdirs(&workspace)?;
    let options = std::ffi::CString::new(format!(
        "mode=0700,size={}",
        p.limits.workspace_bytes.max(4096)
    ))
    .map_err(|_| "bad workspace options".to_string())?;
    rustix::mount::mount(
        "tmpfs",
        &workspace,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        options.as_c_str(),
    )
    .map_err(|e| format!("mounting the workspace: {e}"))?;
    if let Some(proxy) = &sources.proxy {
        bind(proxy)?;
    }
    let etc = staged(Path::new("/etc"));
    mkdirs(&etc)?;
    write_file(&etc.join("hosts"), "127.0.0.1 localhost\n::1 localhost\n")?;
    write_file(
        &etc.join("passwd"),
        "root:x:0:0:sandbox:/workspace:/nonexistent\n",
    )?;
    write_file(&etc.join("group"), "root:x:0:\n")?;

    // Into the new root; the host's tree is detached and unreachable.
    rustix::process::chdir(STAGING).map_err(|e| format!("chdir {STAGING}: {e}"))?;
    rustix::process::pivot_root(".", ".").map_err(|e| format!("pivot_root: {e}"))?;
    rustix::mount::unmount(".", UnmountFlags::DETACH)
        .map_err(|e| format!("detaching the host's root: {e}"))?;
    rustix::process::chdir("/").map_err(|e| format!("chdir /: {e}"))?;
    rustix::mount::mount_remount(
        "/",
        MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
        "",
    )
    .map_err(|e| format!("read-only remount of the root: {e}"))?;
    Ok(())
}
