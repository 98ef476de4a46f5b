//! The OCI runtime spec (`config.json`) of one gVisor sandbox, written with `oci-spec`.
//!
//! The root is the spec's root image (the same copies as the namespace tier's), read-only.
//! Mounted over it: `/proc`, the workspace (a tmpfs of the tool's size), the record's
//! `read_only` host paths (bound read-only at their own paths), and `/.escepine` — a small
//! tmpfs holding the guest (the init binary and its libraries, bound read-only) and the host's
//! socket directory — which the guest detaches before the tool starts. The container's first
//! process is the guest, with only the capabilities it needs to place the workspace inputs,
//! detach `/.escepine` and bring loopback up; it drops them all for the tool.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use oci_spec::runtime::{
    Capability, LinuxBuilder, LinuxCapabilitiesBuilder, LinuxNamespaceBuilder, LinuxNamespaceType,
    Mount, MountBuilder, ProcessBuilder, RootBuilder, Spec, SpecBuilder, UserBuilder,
};

use super::guest::Guest;
use crate::protocol::{GUEST_DIR, HOSTNAME, WORKSPACE};
use crate::{Limits, SandboxError, SAFE_PATH};

/// Everything one bundle's spec is made of.
pub(super) struct Bundle<'a> {
    /// The guest's binary and libraries on the host.
    pub guest: &'a Guest,
    /// The host directory of the sandbox's sockets (control, proxy).
    pub sockets: &'a Path,
    /// The record's read-only host paths.
    pub binds: &'a [PathBuf],
    /// The tool's limits (the workspace's size).
    pub limits: Limits,
}

fn bad(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Protocol(format!("the gVisor bundle's {what}: {e}"))
}

fn mount(
    destination: impl Into<PathBuf>,
    kind: &str,
    source: impl Into<PathBuf>,
    options: &[&str],
) -> Result<Mount, SandboxError> {
    MountBuilder::default()
        .destination(destination.into())
        .typ(kind)
        .source(source.into())
        .options(options.iter().map(|o| (*o).to_string()).collect::<Vec<_>>())
        .build()
        .map_err(|e| bad("mount", e))
}

impl Bundle<'_> {
    /// The spec, its root at `rootfs` (relative to the bundle).
    pub(super) fn spec(&self, rootfs: &str) -> Result<Spec, SandboxError> {
        let mut mounts = vec![
            mount("/proc", "proc", "proc", &[])?,
            mount(
                WORKSPACE,
                "tmpfs",
                "tmpfs",
                &[
                    "nosuid",
                    "nodev",
                    "mode=0755",
                    &format!("size={}", self.limits.workspace_bytes),
                ],
            )?,
            mount(GUEST_DIR, "tmpfs", "tmpfs", &["size=65536", "mode=0755"])?,
            mount(
                self.guest.binary_in_sandbox(),
                "bind",
                &self.guest.binary,
                &["rbind", "ro"],
            )?,
        ];
        for (name, host) in &self.guest.libraries {
            mount(
                self.guest.library_in_sandbox(name),
                "bind",
                host,
                &["rbind", "ro"],
            )
            .map(|m| mounts.push(m))?;
        }
        mounts.push(mount(
            format!("{GUEST_DIR}/run"),
            "bind",
            self.sockets,
            &["rbind", "rw"],
        )?);
        for path in self.binds {
            mounts.push(mount(path, "bind", path, &["rbind", "ro"])?);
        }
        let caps: HashSet<Capability> = [
            Capability::SysAdmin,
            Capability::NetAdmin,
            Capability::Setpcap,
        ]
        .into();
        let capabilities = LinuxCapabilitiesBuilder::default()
            .bounding(caps.clone())
            .effective(caps.clone())
            .permitted(caps)
            .inheritable(HashSet::new())
            .ambient(HashSet::new())
            .build()
            .map_err(|e| bad("capabilities", e))?;
        let process = ProcessBuilder::default()
            .terminal(false)
            .user(
                UserBuilder::default()
                    .uid(0u32)
                    .gid(0u32)
                    .build()
                    .map_err(|e| bad("user", e))?,
            )
            .args(self.guest.argv())
            .env(vec![format!("PATH={SAFE_PATH}")])
            .cwd("/")
            .capabilities(capabilities)
            .no_new_privileges(true)
            .build()
            .map_err(|e| bad("process", e))?;
        let namespaces = [
            LinuxNamespaceType::Pid,
            LinuxNamespaceType::Network,
            LinuxNamespaceType::Ipc,
            LinuxNamespaceType::Uts,
            LinuxNamespaceType::Mount,
        ]
        .into_iter()
        .map(|typ| LinuxNamespaceBuilder::default().typ(typ).build())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad("namespaces", e))?;
        let linux = LinuxBuilder::default()
            .namespaces(namespaces)
            .build()
            .map_err(|e| bad("linux section", e))?;
        SpecBuilder::default()
            .version("1.0.2")
            .root(
                RootBuilder::default()
                    .path(rootfs)
                    .readonly(true)
                    .build()
                    .map_err(|e| bad("root", e))?,
            )
            .hostname(HOSTNAME)
            .mounts(mounts)
            .process(process)
            .linux(linux)
            .build()
            .map_err(|e| bad("spec", e))
    }
}
