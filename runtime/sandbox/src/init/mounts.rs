//! The sandbox's root file system: a read-only clone of the spec's root image (see
//! `sandbox::image`: copies of the files the tool needs, device nodes, `/etc`), a `/proc` of the
//! sandbox's PID namespace holding its processes only, and the workspace tmpfs; then
//! `pivot_root` into it and the host's tree detached.
//!
//! Every file system mounted is the sandbox's own and mounted at its root, so the tool's mount
//! table names no host path, device or option: the image and the workspace are tmpfs mounts the
//! host's root made (the runtime and the zygote, with the new mount API), whose options
//! show no owner from a user namespace (`uid=`/`gid=` of the outside id), and `/proc` is a new
//! procfs. Nothing is bind-mounted from the host, except the host paths a record lists in
//! `sandbox_profile.read_only` ([`Provision::binds`]): each is a read-only, `nosuid`, `nodev`
//! clone of that host path at the same path (an interpreter's installation, a virtualenv, a
//! server's code), whose mount entries do name the host's device and path.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountAttrFlags, MountFlags, MountPropagationFlags, UnmountFlags};

use crate::protocol::{Provision, WORKSPACE};
use crate::root::detached_tmpfs;

/// Where the new root is assembled (covered only inside the sandbox's mount namespace).
const STAGING: &str = "/tmp";

/// What PID 1 builds the root from: descriptors opened while the host's tree was visible.
pub(super) struct Sources {
    /// The spec's root image (a detached mount, from the runtime).
    pub(super) image: OwnedFd,
    /// The workspace (a detached tmpfs, from the zygote).
    pub(super) workspace: OwnedFd,
    /// Read-only clones of the host paths of [`Provision::binds`], with where each goes.
    pub(super) binds: Vec<(String, OwnedFd)>,
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Clones of the host paths `p.binds` (detached, not yet mounted), made read-only, `nosuid`
/// and `nodev`. Called while the host's tree is visible and this process still has the host's
/// root credentials (so paths beneath root-only directories open).
pub(super) fn open_binds(p: &Provision) -> Result<Vec<(String, OwnedFd)>, String> {
    use rustix::mount::OpenTreeFlags;
    let mut out = Vec::new();
    for path in &p.binds {
        let clone = |flags: OpenTreeFlags| {
            rustix::mount::open_tree(
                rustix::fs::CWD,
                path,
                OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC | flags,
            )
        };
        // A path with mounts beneath it that this namespace may not reveal needs them all.
        let fd = match clone(OpenTreeFlags::empty()) {
            Err(rustix::io::Errno::INVAL) => clone(OpenTreeFlags::AT_RECURSIVE),
            other => other,
        }
        .map_err(|e| format!("binding {} read-only: {e}", path.display()))?;
        let attr = MountAttr {
            attr_set: libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: `fd` is a valid descriptor, the path is a NUL-terminated empty string and
        // `attr` a `struct mount_attr` of the size passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                fd.as_raw_fd(),
                c"".as_ptr(),
                libc::AT_EMPTY_PATH | libc::AT_RECURSIVE,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if rc != 0 {
            return Err(format!(
                "making the bind of {} read-only: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        out.push((path.display().to_string(), fd));
    }
    Ok(out)
}

/// The workspace: a new tmpfs of the provision's size, made by the zygote (the host's
/// root, so that its options name no user-namespace owner) and given to the outside id, mounted
/// `nosuid`, `nodev` and `noexec`. Detached until PID 1 mounts it.
pub(super) fn workspace(p: &Provision) -> Result<OwnedFd, String> {
    let bytes = p.limits.workspace_bytes.max(4096);
    let size = bytes.to_string();
    // One inode per page of the workspace: not the kernel's default, a share of the host's
    // memory that `statfs` would show.
    let inodes = (bytes / 4096).max(1024).to_string();
    let fd = detached_tmpfs(
        &[("mode", "0700"), ("size", &size), ("nr_inodes", &inodes)],
        MountAttrFlags::MOUNT_ATTR_NOSUID
            | MountAttrFlags::MOUNT_ATTR_NODEV
            | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )
    .map_err(|e| format!("making the workspace: {e}"))?;
    // The mount's descriptor is an `O_PATH` one: change its root through it.
    rustix::fs::chownat(
        &fd,
        "",
        Some(rustix::process::Uid::from_raw(p.outside_uid)),
        Some(rustix::process::Gid::from_raw(p.outside_gid)),
        rustix::fs::AtFlags::EMPTY_PATH,
    )
    .map_err(|e| format!("chown of the workspace: {e}"))?;
    Ok(fd)
}

/// Opens the proxy's socket directory (`O_PATH`) while the host's tree is visible.
pub(super) fn open_proxy(p: &Provision) -> Result<Option<OwnedFd>, String> {
    p.proxy_dir
        .as_ref()
        .map(|dir| {
            rustix::fs::open(
                dir,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| format!("cannot open {}: {e}", dir.display()))
        })
        .transpose()
}

/// `target` beneath the staging root.
fn staged(target: &str) -> String {
    format!("{STAGING}{target}")
}

/// Attaches the detached mount `fd` at `target`.
fn attach(fd: &OwnedFd, target: &str) -> Result<(), String> {
    rustix::mount::move_mount(
        fd.as_fd(),
        "",
        rustix::fs::CWD,
        target,
        rustix::mount::MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .map_err(|e| format!("mounting at {target}: {e}"))
}

/// Attaches the detached mount `fd` at `path` of the image whose root is `root`, the path
/// resolved inside the image (`RESOLVE_IN_ROOT`, no magic links).
fn attach_in(fd: &OwnedFd, root: &OwnedFd, path: &str) -> Result<(), String> {
    use rustix::fs::ResolveFlags;
    let rel = path.trim_start_matches('/');
    let target = rustix::fs::openat2(
        root,
        if rel.is_empty() { "." } else { rel },
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|e| format!("the mount point {path} in the image: {e}"))?;
    rustix::mount::move_mount(
        fd.as_fd(),
        "",
        target.as_fd(),
        "",
        rustix::mount::MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH
            | rustix::mount::MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
    )
    .map_err(|e| format!("mounting at {path}: {e}"))
}

/// Builds the root and pivots into it.
pub(super) fn build(sources: &Sources) -> Result<(), String> {
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| format!("making / private: {e}"))?;
    // This sandbox's own clone of the image (the image itself stays the runtime's).
    let root = rustix::mount::open_tree(
        sources.image.as_fd(),
        "",
        rustix::mount::OpenTreeFlags::OPEN_TREE_CLONE
            | rustix::mount::OpenTreeFlags::OPEN_TREE_CLOEXEC
            | rustix::mount::OpenTreeFlags::AT_EMPTY_PATH,
    )
    .map_err(|e| format!("cloning the root image: {e}"))?;
    attach(&root, STAGING)?;
    // procfs of the new PID namespace (mountable only while a full /proc is still visible),
    // with its processes only (`subset=pid`): none of the host-wide files — kernel command
    // line, memory, CPUs, sysctls, kcore, keys, timers, devices, and whatever a later kernel
    // adds — exists in it.
    rustix::mount::mount(
        "proc",
        staged("/proc").as_str(),
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        c"subset=pid",
    )
    .map_err(|e| format!("mounting /proc: {e}"))?;
    attach(&sources.workspace, &staged(WORKSPACE))?;
    // A bind's mount point is looked up inside the image (its links resolved with the image's
    // root as `/`, as the root builder made it), never through the host's tree.
    let image_root = rustix::fs::open(
        STAGING,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("opening the staged root: {e}"))?;
    for (path, fd) in &sources.binds {
        attach_in(fd, &image_root, path)?;
    }

    // Into the new root; the host's tree is detached and unreachable.
    rustix::process::chdir(STAGING).map_err(|e| format!("chdir {STAGING}: {e}"))?;
    rustix::process::pivot_root(".", ".").map_err(|e| format!("pivot_root: {e}"))?;
    rustix::mount::unmount(".", UnmountFlags::DETACH)
        .map_err(|e| format!("detaching the host's root: {e}"))?;
    rustix::process::chdir("/").map_err(|e| format!("chdir /: {e}"))?;
    // Read-only for this mount (the image's superblock is the host's root's). Not `nodev`: the
    // device nodes are in it.
    rustix::mount::mount_remount(
        Path::new("/"),
        MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID,
        "",
    )
    .map_err(|e| format!("read-only remount of the root: {e}"))?;
    Ok(())
}
