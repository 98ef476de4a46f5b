//! The OCI runtime spec (`config.json`) of one gVisor sandbox, written with `oci-spec`.
//!
//! The root is the spec's root image (the same copies as the namespace tier's), read-only.
//! Mounted over it: `/proc`, the workspace (a tmpfs of the tool's size), the record's
//! `read_only` host paths (bound read-only at their own paths), and `/.escepine` — a small
//! tmpfs holding the guest (the init binary and its libraries, bound read-only) and the host's
//! socket directory — which the guest detaches before the tool starts. The container's first
//! process is the guest, with only the capabilities it needs to place the workspace inputs,
//! detach `/.escepine`, bring loopback up and hand the workspace to the tool's own user; it
//! drops them all for the tool. The sandbox's memory cgroup is named as the `cgroupsPath`,
//! with the bound as its memory limit, so gVisor's own `MemTotal` is the bound.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use oci_spec::runtime::{
    Capability, LinuxBuilder, LinuxCapabilitiesBuilder, LinuxMemoryBuilder, LinuxNamespaceBuilder,
    LinuxNamespaceType, LinuxResourcesBuilder, Mount, MountBuilder, ProcessBuilder, RootBuilder,
    Spec, SpecBuilder, UserBuilder,
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
    /// The tool's limits (the workspace's size, the memory bound).
    pub limits: Limits,
    /// The sandbox's memory cgroup, by its path in the hierarchy: `runsc` moves the sandbox
    /// into it and sizes gVisor's memory (`MemTotal`) to its bound.
    pub cgroup: &'a Path,
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
            // gVisor would give `/tmp` a writable tmpfs of its own: the workspace is the only
            // writable place.
            mount("/tmp", "tmpfs", "tmpfs", &["ro", "size=4096", "mode=0755"])?,
            // And `/sys` its own sysfs (the CPUs, the memory nodes): an empty one instead.
            mount("/sys", "tmpfs", "tmpfs", &["ro", "size=4096", "mode=0755"])?,
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
            Capability::Setuid,
            Capability::Setgid,
            Capability::Chown,
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
        let memory = LinuxMemoryBuilder::default()
            .limit(i64::try_from(self.limits.memory_bytes).unwrap_or(i64::MAX))
            .build()
            .map_err(|e| bad("memory bound", e))?;
        let resources = LinuxResourcesBuilder::default()
            .memory(memory)
            .build()
            .map_err(|e| bad("resources", e))?;
        let linux = LinuxBuilder::default()
            .namespaces(namespaces)
            .cgroups_path(self.cgroup.to_path_buf())
            .resources(resources)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_bounds_memory_binds_read_only_and_runs_the_guest() {
        let guest = Guest {
            binary: "/opt/bin/escepine".into(),
            libraries: vec![
                ("libc.so.6".into(), "/lib/x86_64-linux-gnu/libc.so.6".into()),
                (
                    "ld-linux-x86-64.so.2".into(),
                    "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2".into(),
                ),
            ],
            interpreter: Some("ld-linux-x86-64.so.2".into()),
        };
        let limits = Limits {
            memory_bytes: 256 << 20,
            workspace_bytes: 8 << 20,
            ..Limits::default()
        };
        let spec = Bundle {
            guest: &guest,
            sockets: Path::new("/run/x/run"),
            binds: &[PathBuf::from("/usr/lib/python3")],
            limits,
            cgroup: Path::new("/runtime/escepine-sbx-1-gv1"),
        }
        .spec("rootfs")
        .expect("a spec");
        let v = serde_json::to_value(&spec).expect("json");
        assert_eq!(
            v["root"],
            serde_json::json!({"path": "rootfs", "readonly": true})
        );
        assert_eq!(v["linux"]["cgroupsPath"], "/runtime/escepine-sbx-1-gv1");
        assert_eq!(v["linux"]["resources"]["memory"]["limit"], 256 << 20);
        assert_eq!(
            v["process"]["args"],
            serde_json::json!([
                "/.escepine/lib/ld-linux-x86-64.so.2",
                "--library-path",
                "/.escepine/lib",
                "--argv0",
                "escepine-init",
                "/.escepine/escepine-init",
                "--guest"
            ])
        );
        let mounts = v["mounts"].as_array().expect("mounts");
        let at = |d: &str| {
            mounts
                .iter()
                .find(|m| m["destination"] == d)
                .unwrap_or_else(|| panic!("no mount at {d}: {mounts:?}"))
        };
        assert!(at("/workspace")["options"]
            .as_array()
            .is_some_and(|o| o.contains(&serde_json::json!("size=8388608"))));
        assert_eq!(at("/usr/lib/python3")["source"], "/usr/lib/python3");
        assert!(at("/usr/lib/python3")["options"]
            .as_array()
            .is_some_and(|o| o.contains(&serde_json::json!("ro"))));
        assert!(at("/tmp")["options"]
            .as_array()
            .is_some_and(|o| o.contains(&serde_json::json!("ro"))));
        assert_eq!(at("/.escepine/run")["source"], "/run/x/run");
        // No environment of the tool's in the bundle: its secrets travel over the control
        // socket.
        assert_eq!(
            v["process"]["env"],
            serde_json::json!(["PATH=/usr/local/bin:/usr/bin:/bin"])
        );
    }
}
