//! Resource limits and capabilities of the tool's process.
//!
//! The limits hold although CI runs as root: the sandbox's uid 0 is an unprivileged outside uid
//! (one per live sandbox), which `RLIMIT_NPROC` counts and which has no `CAP_SYS_RESOURCE` or
//! `CAP_SYS_ADMIN` where it matters (the initial user namespace).

use rustix::process::{Resource, Rlimit};
use rustix::thread::{CapabilitiesSecureBits, CapabilitySet};

use crate::Limits;

fn set(resource: Resource, name: &str, value: u64) -> Result<(), String> {
    let limit = Rlimit {
        current: Some(value),
        maximum: Some(value),
    };
    rustix::process::setrlimit(resource, limit).map_err(|e| format!("setrlimit({name}): {e}"))
}

/// Applies `limits` to the calling process (inherited by the tool and its children).
pub(super) fn apply(limits: &Limits) -> Result<(), String> {
    set(Resource::Nproc, "RLIMIT_NPROC", limits.processes)?;
    set(Resource::Data, "RLIMIT_DATA", limits.memory_bytes)?;
    set(Resource::Nofile, "RLIMIT_NOFILE", limits.open_files)?;
    set(Resource::Fsize, "RLIMIT_FSIZE", limits.file_size_bytes)?;
    set(Resource::Core, "RLIMIT_CORE", 0)?;
    Ok(())
}

/// Drops every capability for good: empty bounding set, no ambient capabilities, and
/// `SECBIT_NOROOT` (locked) so that executing a program as uid 0 grants none either.
///
/// None of this takes a capability from the calling process's effective set; it keeps any
/// process started from it from ever holding one again once it executes. So PID 1 of a
/// namespace sandbox calls it while it builds the sandbox, before the tool is known, and the
/// tool inherits the result (about forty system calls off each call's critical path); the
/// guest of a gVisor sandbox calls it in the tool's process, before it changes user.
pub(super) fn drop_capabilities() -> Result<(), String> {
    for cap in CapabilitySet::all().iter() {
        match rustix::thread::remove_capability_from_bounding_set(cap) {
            // A capability this kernel does not know is not in any set.
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(format!("PR_CAPBSET_DROP: {e}")),
        }
    }
    match rustix::thread::clear_ambient_capability_set() {
        // A kernel without ambient capabilities (gVisor's) has none to clear.
        Ok(()) | Err(rustix::io::Errno::INVAL) => {}
        Err(e) => return Err(format!("PR_CAP_AMBIENT_CLEAR_ALL: {e}")),
    }
    let root = CapabilitiesSecureBits::NO_ROOT
        | CapabilitiesSecureBits::NO_ROOT_LOCKED
        | CapabilitiesSecureBits::NO_SETUID_FIXUP
        | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
        | CapabilitiesSecureBits::KEEP_CAPS_LOCKED;
    let ambient = CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
        | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED;
    match rustix::thread::set_capabilities_secure_bits(root | ambient) {
        Ok(()) => {}
        // A kernel without ambient capabilities knows no bits for them; gVisor's knows no
        // secure bits at all. The empty bounding set alone keeps an execution as uid 0 from
        // granting any capability (permitted and effective sets are bounded by it).
        Err(rustix::io::Errno::INVAL) => match rustix::thread::set_capabilities_secure_bits(root) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(format!("PR_SET_SECUREBITS: {e}")),
        },
        Err(e) => return Err(format!("PR_SET_SECUREBITS: {e}")),
    }
    Ok(())
}
