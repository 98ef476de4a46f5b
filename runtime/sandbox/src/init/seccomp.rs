//! The seccomp filter of the tool's process (seccompiler, pure Rust).
//!
//! - The kernel interfaces a tool has no business with fail with `EPERM`: ptrace and
//!   cross-process memory access, io_uring, raw and obsolete packet socket types, mounting (old
//!   and new API), keyrings, bpf, perf events, namespace changes, kexec, module loading and the
//!   like.
//! - Sockets are an allow-list of address families: `AF_UNIX`, and `AF_INET`/`AF_INET6` (the
//!   relay to the egress proxy listens on loopback; Landlock narrows TCP to its port). Every
//!   other family — vsock (not namespaced: a channel to the hypervisor), packet, netlink, alg,
//!   bluetooth, can, xdp, and families the kernel adds later — fails with `EAFNOSUPPORT`, as on
//!   a kernel without it, so that runtimes probing for a family fall back. `socketpair` exists
//!   for `AF_UNIX` only. Netlink is refused too: glibc's `getaddrinfo` and `if_nameindex` fall
//!   back without it, and the sandbox's network is configured by PID 1, never by the tool.
//! - `clone3` answers `ENOSYS`, so that the C library falls back to `clone`, whose namespace flags
//!   the filter can see.
//! - On x86_64, every system call of the x32 ABI (numbers with `__X32_SYSCALL_BIT`) fails with
//!   `EPERM`: they share the x86_64 audit architecture, so rules keyed on x86_64 numbers would
//!   not see them.
//!
//! [`rules`] builds the rules as data; [`compile`] turns them into the programs PID 1 hands to
//! the tool's process.

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

/// The address families of `socket`: everything else is `EAFNOSUPPORT`.
pub(super) const SOCKET_FAMILIES: &[libc::c_int] = &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6];
/// The address families of `socketpair` (only Unix sockets come in pairs).
pub(super) const SOCKETPAIR_FAMILIES: &[libc::c_int] = &[libc::AF_UNIX];

/// The x32 ABI's bit in x86_64 system call numbers.
pub(super) const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The rules, as data: each map is one filter (system call → rules; a call matching any of its
/// rules, or listed with no rules, gets the filter's action).
pub(super) struct Rules {
    /// Refused with `EPERM`.
    pub(super) denied: BTreeMap<i64, Vec<SeccompRule>>,
    /// Refused with `EAFNOSUPPORT`: sockets of a family not allowed.
    pub(super) families: BTreeMap<i64, Vec<SeccompRule>>,
    /// Refused with `ENOSYS`.
    pub(super) absent: BTreeMap<i64, Vec<SeccompRule>>,
}

fn arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp: unsupported architecture: {e}"))
}

fn condition(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
        .map_err(|e| format!("seccomp condition: {e}"))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| format!("seccomp rule: {e}"))
}

/// One rule matching a first argument that is none of `allowed`.
fn none_of(allowed: &[libc::c_int]) -> Result<SeccompRule, String> {
    rule(
        allowed
            .iter()
            .map(|&f| condition(0, SeccompCmpOp::Ne, f as u64))
            .collect::<Result<_, _>>()?,
    )
}

/// The rules of the tool's filters.
pub(super) fn rules() -> Result<Rules, String> {
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &nr in DENIED {
        denied.insert(nr, Vec::new());
    }
    let sock_type_mask = 0xf;
    denied.insert(
        libc::SYS_socket,
        vec![
            rule(vec![condition(
                1,
                SeccompCmpOp::MaskedEq(sock_type_mask),
                libc::SOCK_RAW as u64,
            )?])?,
            // SOCK_PACKET (10), the obsolete packet socket type.
            rule(vec![condition(
                1,
                SeccompCmpOp::MaskedEq(sock_type_mask),
                10,
            )?])?,
        ],
    );
    denied.insert(
        libc::SYS_clone,
        CLONE_NS_FLAGS
            .iter()
            .map(|&f| {
                rule(vec![condition(
                    0,
                    SeccompCmpOp::MaskedEq(f as u64),
                    f as u64,
                )?])
            })
            .collect::<Result<_, _>>()?,
    );
    let families = BTreeMap::from([
        (libc::SYS_socket, vec![none_of(SOCKET_FAMILIES)?]),
        (libc::SYS_socketpair, vec![none_of(SOCKETPAIR_FAMILIES)?]),
    ]);
    let absent = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    Ok(Rules {
        denied,
        families,
        absent,
    })
}

fn filter(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
    arch: TargetArch,
) -> Result<BpfProgram, String> {
    let f = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    BpfProgram::try_from(f).map_err(|e| format!("seccomp compile: {e}"))
}

/// The filters, compiled once per sandbox (in PID 1, before the tool is known), in the order
/// they are installed. The kernel runs every filter and takes the strictest action; among
/// errno answers, the one of the filter installed last — so the family filter comes after the
/// `EPERM` one, and a packet socket of `SOCK_RAW` type is `EAFNOSUPPORT`, as on a kernel
/// without `AF_PACKET`.
pub(super) fn compile() -> Result<Vec<BpfProgram>, String> {
    let arch = arch()?;
    let Rules {
        denied,
        families,
        absent,
    } = rules()?;
    let mut programs = vec![
        filter(denied, libc::EPERM, arch)?,
        filter(absent, libc::ENOSYS, arch)?,
        filter(families, libc::EAFNOSUPPORT, arch)?,
    ];
    if cfg!(target_arch = "x86_64") {
        programs.push(x32_guard());
    }
    Ok(programs)
}

/// A program refusing (`EPERM`) every system call whose number carries the x32 bit; others
/// pass (an architecture other than x86_64 is killed, as by the other filters).
pub(super) fn x32_guard() -> BpfProgram {
    use seccompiler::sock_filter;
    // BPF_LD | BPF_W | BPF_ABS, BPF_JMP | BPF_JEQ | BPF_K, BPF_JMP | BPF_JGE | BPF_K, BPF_RET | BPF_K.
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    // `struct seccomp_data`: `int nr` at 0, `__u32 arch` at 4.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        op(LD_W_ABS, 0, 0, ARCH),
        op(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        op(RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        op(LD_W_ABS, 0, 0, NR),
        op(JGE_K, 0, 1, X32_SYSCALL_BIT),
        op(
            RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA),
        ),
        op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// Installs the filters on the calling thread (after `no_new_privs`).
pub(super) fn apply(filters: &[BpfProgram]) -> Result<(), String> {
    for f in filters {
        seccompiler::apply_filter(f).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel answers, as the filters decide it.
    #[derive(Debug, PartialEq, Eq)]
    enum Verdict {
        Allow,
        Errno(i32),
        Kill,
    }

    /// Runs one classic BPF program on a `seccomp_data` (the instructions seccompiler and
    /// [`x32_guard`] emit).
    fn run(program: &BpfProgram, arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let i = &program[pc];
            pc += 1;
            match i.code {
                0x20 => {
                    let at = i.k as usize;
                    acc = u32::from_ne_bytes(data[at..at + 4].try_into().expect("four bytes"));
                }
                0x54 => acc &= i.k,
                0x05 => pc += i.k as usize,
                0x15 | 0x25 | 0x35 => {
                    let taken = match i.code {
                        0x15 => acc == i.k,
                        0x25 => acc > i.k,
                        _ => acc >= i.k,
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                0x06 => return i.k,
                other => panic!("unexpected BPF instruction {other:#x}"),
            }
        }
    }

    /// The verdict of all the filters, as the kernel combines them.
    fn verdict(nr: i64, args: [u64; 6]) -> Verdict {
        let arch = 62 | 0x8000_0000 | 0x4000_0000;
        let mut best: Option<u32> = None;
        // Newest first; a strictly stricter action replaces the one found.
        for p in compile().expect("the filters compile").iter().rev() {
            let r = run(p, arch, nr as u32, args);
            let action = r & libc::SECCOMP_RET_ACTION_FULL;
            let stricter =
                best.is_none_or(|b| (action as i32) < ((b & libc::SECCOMP_RET_ACTION_FULL) as i32));
            if stricter {
                best = Some(r);
            }
        }
        let r = best.expect("at least one filter");
        match r & libc::SECCOMP_RET_ACTION_FULL {
            libc::SECCOMP_RET_ALLOW => Verdict::Allow,
            libc::SECCOMP_RET_ERRNO => Verdict::Errno((r & libc::SECCOMP_RET_DATA) as i32),
            _ => Verdict::Kill,
        }
    }

    fn socket(family: i32, ty: i32) -> Verdict {
        verdict(libc::SYS_socket, [family as u64, ty as u64, 0, 0, 0, 0])
    }

    #[test]
    fn only_unix_and_internet_families_open_sockets() {
        for f in [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6] {
            assert_eq!(socket(f, libc::SOCK_STREAM), Verdict::Allow, "{f}");
            assert_eq!(
                socket(f, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC),
                Verdict::Allow,
                "{f}"
            );
        }
        for f in (0..=255).chain([0x1_0001, -1]) {
            if SOCKET_FAMILIES.contains(&f) {
                continue;
            }
            assert_eq!(
                socket(f, libc::SOCK_STREAM),
                Verdict::Errno(libc::EAFNOSUPPORT),
                "family {f}"
            );
            // The family answer wins over the socket type's.
            assert_eq!(
                socket(f, libc::SOCK_RAW),
                Verdict::Errno(libc::EAFNOSUPPORT),
                "family {f}"
            );
        }
        assert_eq!(
            socket(libc::AF_INET, libc::SOCK_RAW),
            Verdict::Errno(libc::EPERM)
        );
        assert_eq!(socket(libc::AF_INET6, 10), Verdict::Errno(libc::EPERM));
    }

    #[test]
    fn socket_pairs_are_unix_only() {
        let pair = |f: i32| verdict(libc::SYS_socketpair, [f as u64, 1, 0, 0, 0, 0]);
        assert_eq!(pair(libc::AF_UNIX), Verdict::Allow);
        for f in [libc::AF_INET, libc::AF_INET6, libc::AF_VSOCK, libc::AF_TIPC] {
            assert_eq!(pair(f), Verdict::Errno(libc::EAFNOSUPPORT), "{f}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_x32_system_call_is_refused() {
        for nr in [0, libc::SYS_socket, libc::SYS_getpid, 511, 0x3fff_ffff] {
            let x32 = (nr as u32 | X32_SYSCALL_BIT) as i64;
            assert_eq!(verdict(x32, [0; 6]), Verdict::Errno(libc::EPERM), "{nr}");
        }
        assert_eq!(verdict(libc::SYS_getpid, [0; 6]), Verdict::Allow);
        assert_eq!(verdict(0xffff_ffff, [0; 6]), Verdict::Errno(libc::EPERM));
    }

    #[test]
    fn the_denied_calls_and_namespace_flags_are_refused() {
        for &nr in DENIED {
            assert_eq!(verdict(nr, [0; 6]), Verdict::Errno(libc::EPERM), "{nr}");
        }
        let clone = |flags: i32| verdict(libc::SYS_clone, [flags as u64, 0, 0, 0, 0, 0]);
        assert_eq!(clone(libc::SIGCHLD), Verdict::Allow);
        for &f in CLONE_NS_FLAGS {
            assert_eq!(
                clone(f | libc::SIGCHLD),
                Verdict::Errno(libc::EPERM),
                "{f:#x}"
            );
        }
        assert_eq!(
            verdict(libc::SYS_clone3, [0; 6]),
            Verdict::Errno(libc::ENOSYS)
        );
        assert_eq!(verdict(libc::SYS_read, [0; 6]), Verdict::Allow);
    }
}
