//! The seccomp filter of the tool's process (seccompiler, pure Rust): everything is allowed
//! except the kernel interfaces a tool has no business with, which fail with `EPERM` —
//! ptrace and cross-process memory access, io_uring, raw, packet and netlink sockets, mounting
//! (old and new API), keyrings, bpf, perf events, namespace changes, kexec, module loading and
//! the like. `clone3` answers `ENOSYS`, so that the C library falls back to `clone`, whose
//! namespace flags the filter can see.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// System calls refused outright.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
];

/// Namespace flags `clone` may not carry.
const CLONE_NS_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

fn arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp: unsupported architecture: {e}"))
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, String> {
    let c = SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
        .map_err(|e| format!("seccomp condition: {e}"))?;
    SeccompRule::new(vec![c]).map_err(|e| format!("seccomp rule: {e}"))
}

/// The filters, compiled once per sandbox (in PID 1, before the tool is known).
pub(super) fn compile() -> Result<Vec<BpfProgram>, String> {
    let arch = arch()?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &nr in DENIED {
        rules.insert(nr, Vec::new());
    }
    let sock_type_mask = 0xf;
    rules.insert(
        libc::SYS_socket,
        vec![
            cond(0, SeccompCmpOp::Eq, libc::AF_PACKET as u64)?,
            cond(0, SeccompCmpOp::Eq, libc::AF_NETLINK as u64)?,
            cond(
                1,
                SeccompCmpOp::MaskedEq(sock_type_mask),
                libc::SOCK_RAW as u64,
            )?,
            // SOCK_PACKET (10), the obsolete packet socket type.
            cond(1, SeccompCmpOp::MaskedEq(sock_type_mask), 10)?,
        ],
    );
    rules.insert(
        libc::SYS_clone,
        CLONE_NS_FLAGS
            .iter()
            .map(|&f| cond(0, SeccompCmpOp::MaskedEq(f as u64), f as u64))
            .collect::<Result<_, _>>()?,
    );
    let deny = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    [deny, clone3]
        .into_iter()
        .map(|f| BpfProgram::try_from(f).map_err(|e| format!("seccomp compile: {e}")))
        .collect()
}

/// Installs the filters on the calling thread (after `no_new_privs`).
pub(super) fn apply(filters: &[BpfProgram]) -> Result<(), String> {
    for f in filters {
        seccompiler::apply_filter(f).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}
