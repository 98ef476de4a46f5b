//! Landlock, the second fence behind the mount namespace: read and execute beneath the tool's
//! paths (copied into the root), read-write (no execute) in the workspace, read-write on the device nodes, TCP
//! connect only to the relay's port, and no signals or abstract sockets beyond the tool's own
//! processes. Best effort: a kernel without some Landlock feature enforces the rest.

use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};

use crate::protocol::{Provision, RELAY_PORT, WORKSPACE};

/// The Landlock ABI whose rights this ruleset was written and tested against.
const ABI_TESTED: ABI = ABI::V6;

fn rule(
    ruleset: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, String> {
    let fd = PathFd::new(path).map_err(|e| format!("landlock: open {}: {e}", path.display()))?;
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(ABI_TESTED)
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("landlock rule for {}: {e}", path.display()))
}

/// The ruleset for a sandbox built from `p` (created in PID 1, enforced by the tool's process).
pub(super) fn ruleset(p: &Provision) -> Result<RulesetCreated, String> {
    let err = |e: landlock::RulesetError| format!("landlock: {e}");
    let all = AccessFs::from_all(ABI_TESTED);
    let read = AccessFs::from_read(ABI_TESTED);
    let mut base = Ruleset::default().handle_access(all).map_err(err)?;
    if p.proxy_dir.is_some() {
        base = base.handle_access(AccessNet::ConnectTcp).map_err(err)?;
    } else {
        base = base
            .handle_access(AccessNet::ConnectTcp | AccessNet::BindTcp)
            .map_err(err)?;
    }
    let mut ruleset = base
        .scope(Scope::from_all(ABI_TESTED))
        .map_err(err)?
        .create()
        .map_err(err)?;
    ruleset = rule(ruleset, Path::new("/"), AccessFs::ReadDir.into())?;
    let mut read_only: Vec<PathBuf> = p.read_only.clone();
    read_only.extend(p.binds.iter().cloned());
    read_only.sort();
    read_only.dedup();
    for path in &read_only {
        ruleset = rule(ruleset, path, read)?;
    }
    for path in ["/etc", "/proc"] {
        ruleset = rule(
            ruleset,
            Path::new(path),
            AccessFs::ReadFile | AccessFs::ReadDir,
        )?;
    }
    for dev in ["null", "zero", "full", "random", "urandom"] {
        ruleset = rule(
            ruleset,
            &Path::new("/dev").join(dev),
            AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
        )?;
    }
    let workspace =
        all & !(AccessFs::Execute | AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev);
    ruleset = rule(ruleset, Path::new(WORKSPACE), workspace)?;
    if p.proxy_dir.is_some() {
        ruleset = ruleset
            .add_rule(NetPort::new(RELAY_PORT, AccessNet::ConnectTcp))
            .map_err(err)?;
    }
    Ok(ruleset)
}

/// Enforce the ruleset on the calling process (and everything it starts).
pub(super) fn restrict(ruleset: RulesetCreated) -> Result<(), String> {
    ruleset
        .restrict_self()
        .map(|_| ())
        .map_err(|e| format!("landlock: {e}"))
}
