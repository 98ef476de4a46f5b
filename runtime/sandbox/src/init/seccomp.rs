//! The seccomp filter of the tool's process, and of PID 1 from ready on (seccompiler, pure
//! Rust, and a few hand-written programs).
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
//! [`rules`] builds the rules as data and [`programs`] turns them into one program per action:
//! the filter as specified. What is installed is [`Filters`], the same verdicts in two programs
//! ([`compile`], done once per process by [`compiled`]: the zygote, before its first fork, so
//! that no sandbox compiles them). A namespace sandbox's PID 1 installs [`Filters::sandbox`]
//! (every rule but the refusal of `mount`, chained into one program) on itself before it
//! reports ready, and the tool's process adds [`Filters::tool`] (`mount`, which PID 1 still
//! calls after ready, to bind the call's inputs read-only). Installing a program costs in
//! proportion to its length, so a warm sandbox's call pays for a few instructions only; and
//! the kernel runs a new filter for every system call number, to find those it always allows,
//! so [`Filters::sandbox`] starts with a binary search that allows the calls no rule names in
//! a few instructions ([`with_fast_path`]). A gVisor guest installs both in the tool's process.

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

/// The two programs installed (see the [module](self)).
#[derive(Debug)]
pub(super) struct Filters {
    /// Every rule but the refusal of `mount`, chained into one program behind a fast path:
    /// PID 1's, before ready.
    pub(super) sandbox: BpfProgram,
    /// The refusal of `mount`: the tool's process's.
    pub(super) tool: BpfProgram,
}

/// The [`Filters`] of [`compile`], compiled on the first call in this process.
///
/// # Errors
/// Why they could not be compiled (the same on every call).
pub(super) fn compiled() -> Result<&'static Filters, String> {
    static FILTERS: std::sync::OnceLock<Result<Filters, String>> = std::sync::OnceLock::new();
    FILTERS.get_or_init(compile).as_ref().map_err(Clone::clone)
}

/// The [`programs`] as the two [`Filters`], which installed together answer as they do.
pub(super) fn compile() -> Result<Filters, String> {
    let mut rules = rules()?;
    rules.denied.remove(&libc::SYS_mount);
    let ruled = rules.numbers();
    Ok(Filters {
        sandbox: with_fast_path(&ruled, chain(programs_of(rules)?)?)?,
        tool: refuse_one(libc::SYS_mount as u32, libc::EPERM),
    })
}

impl Rules {
    /// Every system call number some rule names, in order.
    fn numbers(&self) -> Vec<u32> {
        let mut numbers: Vec<u32> = [&self.denied, &self.families, &self.absent]
            .into_iter()
            .flat_map(|rules| rules.keys())
            .filter_map(|&nr| u32::try_from(nr).ok())
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        numbers
    }
}

/// `program` behind a fast path that allows, after a binary search of `ruled` (a few
/// comparisons), every native system call whose number is not in `ruled` and has no x32 bit;
/// the others go on to `program`. Sound only when `program` allows every such call whatever
/// its arguments, as the chained [`programs`] do for the numbers their rules name.
///
/// When a filter is installed the kernel runs it, for every system call number, to find the
/// calls it always allows (which then skip it): with the fast path that costs a few
/// instructions per number instead of a walk through every rule, and that run happens while
/// the kernel holds the process's signal lock.
///
/// # Errors
/// When a jump of the search would be longer than classic BPF's 255 instructions.
fn with_fast_path(ruled: &[u32], program: BpfProgram) -> Result<BpfProgram, String> {
    use bpf::{op, JGE_K, RET_K};
    let mut ops: Vec<Jump> = bpf::native_number().into_iter().map(Jump::op).collect();
    ops.push(Jump {
        code: JGE_K,
        jt: To::Full,
        jf: To::Next,
        k: X32_SYSCALL_BIT,
    });
    search(ruled, &mut ops);
    let allow = ops.len();
    let mut out = Vec::with_capacity(allow + 1 + program.len());
    for (at, jump) in ops.into_iter().enumerate() {
        let offset = |to: To| -> Result<u8, String> {
            let target = match to {
                To::Next => at + 1,
                To::Skip(n) => at + 1 + usize::from(n),
                To::Allow => allow,
                To::Full => allow + 1,
                To::At(target) => target,
            };
            u8::try_from(target - at - 1)
                .map_err(|_| format!("seccomp: a fast-path jump of {} instructions", target - at))
        };
        out.push(op(jump.code, offset(jump.jt)?, offset(jump.jf)?, jump.k));
    }
    out.push(op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    out.extend(program);
    Ok(out)
}

/// Where a jump of the fast path goes.
#[derive(Debug, Clone, Copy)]
enum To {
    /// The next instruction.
    Next,
    /// This many instructions after the next one.
    Skip(u8),
    /// The fast path's `RET ALLOW`.
    Allow,
    /// The full program.
    Full,
    /// The instruction at this index.
    At(usize),
}

/// An instruction of the fast path, its jumps not laid out yet.
#[derive(Debug, Clone, Copy)]
struct Jump {
    code: u16,
    jt: To,
    jf: To,
    k: u32,
}

impl Jump {
    /// An instruction whose jumps (if any) are offsets already.
    fn op(op: seccompiler::sock_filter) -> Self {
        Self {
            code: op.code,
            jt: To::Skip(op.jt),
            jf: To::Skip(op.jf),
            k: op.k,
        }
    }
}

/// A binary search of the sorted `numbers` for the number loaded: found → [`To::Full`], not
/// found → [`To::Allow`].
fn search(numbers: &[u32], ops: &mut Vec<Jump>) {
    use bpf::{JEQ_K, JGE_K};
    if numbers.len() <= 3 {
        if numbers.is_empty() {
            ops.push(Jump {
                code: JGE_K,
                jt: To::Allow,
                jf: To::Allow,
                k: 0,
            });
        }
        for (i, &nr) in numbers.iter().enumerate() {
            let last = i + 1 == numbers.len();
            ops.push(Jump {
                code: JEQ_K,
                jt: To::Full,
                jf: if last { To::Allow } else { To::Next },
                k: nr,
            });
        }
        return;
    }
    let mid = numbers.len() / 2;
    let split = ops.len();
    ops.push(Jump {
        code: JGE_K,
        jt: To::Next,
        jf: To::Next,
        k: numbers[mid],
    });
    search(&numbers[..mid], ops);
    ops[split].jt = To::At(ops.len());
    search(&numbers[mid..], ops);
}

/// The programs in `installed` order as one program answering as the kernel would for them
/// installed one after another: it runs them newest first, and the first answer other than
/// `SECCOMP_RET_ALLOW` is the verdict. (The kernel takes the strictest action of all, and among
/// equal actions the newest filter's; the only action stricter than an errno these programs
/// give is the kill for a foreign architecture, which each gives first.) Each program's
/// `RET ALLOW`, but the last one's, becomes a jump to the next program's first instruction.
///
/// # Errors
/// When the chained program is longer than the kernel takes (`BPF_MAXINSNS`).
pub(super) fn chain(installed: Vec<BpfProgram>) -> Result<BpfProgram, String> {
    use seccompiler::sock_filter;
    /// The longest program the kernel loads.
    const MAX_INSNS: usize = 4096;
    let count = installed.len();
    let mut out: Vec<sock_filter> = Vec::new();
    for (n, program) in installed.into_iter().rev().enumerate() {
        let last = n + 1 == count;
        let len = program.len();
        for (at, mut op) in program.into_iter().enumerate() {
            if !last && op.code == bpf::RET_K && op.k == libc::SECCOMP_RET_ALLOW {
                op = sock_filter {
                    code: bpf::JA,
                    jt: 0,
                    jf: 0,
                    // From the instruction after this one to the end of this program.
                    k: u32::try_from(len - at - 1).unwrap_or(u32::MAX),
                };
            }
            out.push(op);
        }
    }
    if out.len() > MAX_INSNS {
        return Err(format!(
            "seccomp: the chained filter has {} instructions, more than the kernel's {MAX_INSNS}",
            out.len()
        ));
    }
    Ok(out)
}

/// The filter as specified: one program per action, in the order they would be installed one
/// by one. The kernel runs every filter and takes the strictest action; among errno answers,
/// the one of the filter installed last — so the family filter comes after the `EPERM` one,
/// and a packet socket of `SOCK_RAW` type is `EAFNOSUPPORT`, as on a kernel without
/// `AF_PACKET`. The tests hold the installed [`Filters`] to it.
#[cfg(test)]
pub(super) fn programs() -> Result<Vec<BpfProgram>, String> {
    programs_of(rules()?)
}

/// The programs of `rules`, in the order of [`programs`].
fn programs_of(rules: Rules) -> Result<Vec<BpfProgram>, String> {
    let arch = arch()?;
    let Rules {
        denied,
        families,
        absent,
    } = rules;
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
    refuse_numbers(bpf::JGE_K, X32_SYSCALL_BIT, libc::EPERM)
}

/// A program refusing the system call `nr` with `errno`; others pass (an architecture other
/// than x86_64 is killed, as by the other filters).
fn refuse_one(nr: u32, errno: i32) -> BpfProgram {
    refuse_numbers(bpf::JEQ_K, nr, errno)
}

/// A program refusing with `errno` every system call whose number the jump `test` (`JEQ_K`,
/// `JGE_K`) takes against `k`; others pass, and an architecture other than x86_64 is killed.
fn refuse_numbers(test: u16, k: u32, errno: i32) -> BpfProgram {
    use bpf::{op, RET_K};
    let mut program = bpf::native_number();
    program.extend([
        op(test, 0, 1, k),
        op(RET_K, 0, 0, bpf::errno(errno)),
        op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]);
    program
}

/// The classic BPF the hand-written programs are made of.
mod bpf {
    use seccompiler::sock_filter;

    /// `BPF_LD | BPF_W | BPF_ABS`.
    pub(super) const LD_W_ABS: u16 = 0x20;
    /// `BPF_JMP | BPF_JEQ | BPF_K`.
    pub(super) const JEQ_K: u16 = 0x15;
    /// `BPF_JMP | BPF_JGE | BPF_K`.
    pub(super) const JGE_K: u16 = 0x35;
    /// `BPF_JMP | BPF_JA`.
    pub(super) const JA: u16 = 0x05;
    /// `BPF_RET | BPF_K`.
    pub(super) const RET_K: u16 = 0x06;
    /// Where `struct seccomp_data` has `int nr`.
    pub(super) const NR: u32 = 0;
    /// Where `struct seccomp_data` has `__u32 arch`.
    pub(super) const ARCH: u32 = 4;
    /// `AUDIT_ARCH_X86_64`.
    pub(super) const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;

    /// The start of every hand-written program: an architecture other than x86_64 is killed,
    /// then the system call number is loaded.
    pub(super) fn native_number() -> Vec<sock_filter> {
        vec![
            op(LD_W_ABS, 0, 0, ARCH),
            op(JEQ_K, 1, 0, AUDIT_ARCH),
            op(RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
            op(LD_W_ABS, 0, 0, NR),
        ]
    }

    /// One instruction.
    pub(super) fn op(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
        sock_filter { code, jt, jf, k }
    }

    /// The return value refusing a call with `errno`.
    pub(super) fn errno(errno: i32) -> u32 {
        libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)
    }
}

/// Installs `filter` on the calling thread (after setting `no_new_privs`).
pub(super) fn apply(filter: &BpfProgram) -> Result<(), String> {
    seccompiler::apply_filter(filter).map_err(|e| format!("seccomp: {e}"))
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
        run_counted(program, arch, nr, args).0
    }

    /// [`run`], and how many instructions it took.
    fn run_counted(program: &BpfProgram, arch: u32, nr: u32, args: [u64; 6]) -> (u32, usize) {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut acc, mut pc, mut steps) = (0u32, 0usize, 0usize);
        loop {
            let i = &program[pc];
            pc += 1;
            steps += 1;
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
                0x06 => return (i.k, steps),
                other => panic!("unexpected BPF instruction {other:#x}"),
            }
        }
    }

    use bpf::AUDIT_ARCH as AUDIT_ARCH_X86_64;

    fn decode(r: u32) -> Verdict {
        match r & libc::SECCOMP_RET_ACTION_FULL {
            libc::SECCOMP_RET_ALLOW => Verdict::Allow,
            libc::SECCOMP_RET_ERRNO => Verdict::Errno((r & libc::SECCOMP_RET_DATA) as i32),
            _ => Verdict::Kill,
        }
    }

    /// The verdict of the programs installed one by one, as the kernel combines them.
    fn combined(programs: &[BpfProgram], arch: u32, nr: i64, args: [u64; 6]) -> Verdict {
        let mut best: Option<u32> = None;
        // Newest first; a strictly stricter action replaces the one found.
        for p in programs.iter().rev() {
            let r = run(p, arch, nr as u32, args);
            let action = r & libc::SECCOMP_RET_ACTION_FULL;
            let stricter =
                best.is_none_or(|b| (action as i32) < ((b & libc::SECCOMP_RET_ACTION_FULL) as i32));
            if stricter {
                best = Some(r);
            }
        }
        decode(best.expect("at least one filter"))
    }

    /// The verdict of the two filters a sandbox's tool has.
    fn verdict(nr: i64, args: [u64; 6]) -> Verdict {
        let Filters { sandbox, tool } = compile().expect("the filters compile");
        combined(&[sandbox, tool], AUDIT_ARCH_X86_64, nr, args)
    }

    #[test]
    fn the_installed_filters_answer_as_the_programs_installed_one_by_one() {
        let programs = programs().expect("the programs compile");
        let Filters { sandbox, tool } = compile().expect("the filters compile");
        let installed = [sandbox, tool];
        assert!(
            installed[1].len() < 10,
            "the tool's own program is short: {}",
            installed[1].len()
        );
        let mut firsts: Vec<u64> = vec![0, 1, 2, 3, u64::MAX];
        firsts.extend(
            SOCKET_FAMILIES
                .iter()
                .chain(CLONE_NS_FLAGS)
                .flat_map(|&f| [f as u64, (f | libc::SIGCHLD) as u64]),
        );
        firsts.extend([libc::AF_PACKET, libc::AF_NETLINK, libc::AF_VSOCK].map(|f| f as u64));
        let seconds = [
            0,
            libc::SOCK_STREAM,
            libc::SOCK_DGRAM,
            libc::SOCK_RAW,
            10, // SOCK_PACKET
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
        ]
        .map(|t| t as u64);
        let numbers = (0..600).chain([X32_SYSCALL_BIT as i64, 0x4000_0001, 0xffff_ffff]);
        let mut checked = 0;
        for nr in numbers {
            for &a in &firsts {
                for &b in &seconds {
                    let args = [a, b, 0, 0, 0, 0];
                    let expected = combined(&programs, AUDIT_ARCH_X86_64, nr, args);
                    let got = combined(&installed, AUDIT_ARCH_X86_64, nr, args);
                    assert_eq!(got, expected, "system call {nr} with {args:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 100_000, "{checked}");
        // A foreign architecture is killed, as by each program.
        let i386 = 3 | 0x4000_0000;
        assert_eq!(combined(&installed, i386, 0, [0; 6]), Verdict::Kill);
        // PID 1 may still bind the inputs; the tool may not.
        let mount = libc::SYS_mount as u32;
        let pid1 = decode(run(&installed[0], AUDIT_ARCH_X86_64, mount, [0; 6]));
        assert_eq!(pid1, Verdict::Allow);
        assert_eq!(
            verdict(libc::SYS_mount, [0; 6]),
            Verdict::Errno(libc::EPERM)
        );
        assert_eq!(combined(&programs, i386, 0, [0; 6]), Verdict::Kill);
    }

    #[test]
    fn a_call_no_rule_names_is_allowed_in_a_few_instructions() {
        let Filters { sandbox, .. } = compile().expect("the filters compile");
        let ruled = {
            let mut rules = rules().expect("rules");
            rules.denied.remove(&libc::SYS_mount);
            rules.numbers()
        };
        assert!(ruled.contains(&(libc::SYS_socket as u32)), "{ruled:?}");
        let mut longest = 0;
        for nr in (0..600u32).filter(|nr| !ruled.contains(nr)) {
            let (verdict, steps) = run_counted(&sandbox, AUDIT_ARCH_X86_64, nr, [0; 6]);
            assert_eq!(decode(verdict), Verdict::Allow, "{nr}");
            longest = longest.max(steps);
        }
        assert!(
            longest <= 12,
            "the longest fast path took {longest} instructions"
        );
        // A ruled call goes on to the rules.
        let (_, steps) = run_counted(&sandbox, AUDIT_ARCH_X86_64, libc::SYS_socket as u32, [0; 6]);
        assert!(steps > longest, "{steps}");
    }

    #[test]
    fn the_fast_path_is_exact_for_any_set_of_numbers() {
        // Behind the fast path, a program refusing everything: what it refuses is exactly
        // what the search sends on.
        let refuse_all = vec![bpf::op(bpf::RET_K, 0, 0, bpf::errno(libc::EPERM))];
        for set in [
            vec![],
            vec![5],
            vec![0, 1],
            vec![3, 9, 10],
            (0..40).map(|n| n * 7).collect(),
        ] {
            let program = with_fast_path(&set, refuse_all.clone()).expect("laid out");
            for nr in (0..300).chain([X32_SYSCALL_BIT, X32_SYSCALL_BIT + 5, u32::MAX]) {
                let refused = set.contains(&nr) || nr >= X32_SYSCALL_BIT;
                let expected = if refused {
                    Verdict::Errno(libc::EPERM)
                } else {
                    Verdict::Allow
                };
                let got = decode(run(&program, AUDIT_ARCH_X86_64, nr, [0; 6]));
                assert_eq!(got, expected, "{nr} against {set:?}");
            }
            assert_eq!(
                decode(run(&program, 3 | 0x4000_0000, 0, [0; 6])),
                Verdict::Kill
            );
        }
        let too_many: Vec<u32> = (0..400).collect();
        let err = with_fast_path(&too_many, refuse_all).expect_err("jumps too long");
        assert!(err.contains("fast-path jump"), "{err}");
    }

    #[test]
    fn a_chain_longer_than_the_kernel_takes_is_refused() {
        let program = x32_guard();
        let copies = 4096 / program.len() + 1;
        let err = chain(vec![program; copies]).expect_err("too long");
        assert!(err.contains("4096"), "{err}");
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
