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
//! [`rules`] builds the rules as data, and (in the tests) `spec::programs` makes seccompiler
//! turn them into one program per action: the filter as specified. What is installed is
//! [`Filters`], the same verdicts in two programs ([`compile`], done once per process by
//! [`compiled`]: the zygote, before its first fork, so that no sandbox compiles them). A
//! namespace sandbox's PID 1 installs [`Filters::sandbox`] (every rule but the refusal of
//! `mount`, in one program) on itself before it reports ready, and the tool's process adds
//! [`Filters::tool`] (`mount`, which PID 1 still calls after ready, to bind the call's inputs
//! read-only). Installing a program costs in proportion to its length, for every sandbox, and
//! the kernel runs a new filter for every system call number to find those it always allows:
//! [`Filters::sandbox`] is laid out by hand ([`compact`]), a binary search that allows the calls
//! no rule names in a few instructions, and a short block for each call a rule names. A gVisor
//! guest installs both in the tool's process.

use std::collections::BTreeMap;

use seccompiler::BpfProgram;

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
pub(super) const SOCKET_FAMILIES: &[u32] = &[
    libc::AF_UNIX as u32,
    libc::AF_INET as u32,
    libc::AF_INET6 as u32,
];
/// The address families of `socketpair` (only Unix sockets come in pairs).
pub(super) const SOCKETPAIR_FAMILIES: &[u32] = &[libc::AF_UNIX as u32];
/// The socket types refused (`EPERM`) whatever the family: raw sockets, and the obsolete
/// packet socket type `SOCK_PACKET` (10).
const REFUSED_SOCKET_TYPES: &[u32] = &[libc::SOCK_RAW as u32, 10];
/// The bits of `socket`'s type argument that hold the type (the others are flags).
const SOCKET_TYPE_MASK: u32 = 0xf;

/// The x32 ABI's bit in x86_64 system call numbers.
pub(super) const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// When a rule refuses a call, judged on the low 32 bits of its arguments (as the seccompiler
/// conditions the tests' `spec::programs` makes of it, `SeccompCmpArgLen::Dword`, are).
#[derive(Debug, Clone, Copy)]
pub(super) enum When {
    /// Every call.
    Always,
    /// When argument `arg` has any bit of `mask` set.
    AnyBit { arg: u8, mask: u32 },
    /// When argument `arg`, masked with `mask`, is one of `values` (masked too).
    MaskedIn {
        arg: u8,
        mask: u32,
        values: &'static [u32],
    },
    /// When argument `arg` is none of `values`.
    NoneOf { arg: u8, values: &'static [u32] },
}

/// The rules, as data: each map is one filter (system call → when it is refused), refusing
/// with its own errno.
pub(super) struct Rules {
    /// Refused with `EPERM`.
    pub(super) denied: BTreeMap<i64, When>,
    /// Refused with `EAFNOSUPPORT`: sockets of a family not allowed.
    pub(super) families: BTreeMap<i64, When>,
    /// Refused with `ENOSYS`.
    pub(super) absent: BTreeMap<i64, When>,
}

/// The OR of `flags`.
const fn any_of(flags: &[libc::c_int]) -> u32 {
    let mut mask = 0;
    let mut i = 0;
    while i < flags.len() {
        mask |= flags[i] as u32;
        i += 1;
    }
    mask
}

/// The rules of the tool's filters.
pub(super) fn rules() -> Rules {
    let mut denied: BTreeMap<i64, When> = DENIED.iter().map(|&nr| (nr, When::Always)).collect();
    denied.insert(
        libc::SYS_socket,
        When::MaskedIn {
            arg: 1,
            mask: SOCKET_TYPE_MASK,
            values: REFUSED_SOCKET_TYPES,
        },
    );
    denied.insert(
        libc::SYS_clone,
        When::AnyBit {
            arg: 0,
            mask: any_of(CLONE_NS_FLAGS),
        },
    );
    let families = BTreeMap::from([
        (
            libc::SYS_socket,
            When::NoneOf {
                arg: 0,
                values: SOCKET_FAMILIES,
            },
        ),
        (
            libc::SYS_socketpair,
            When::NoneOf {
                arg: 0,
                values: SOCKETPAIR_FAMILIES,
            },
        ),
    ]);
    let absent = BTreeMap::from([(libc::SYS_clone3, When::Always)]);
    Rules {
        denied,
        families,
        absent,
    }
}

/// The two programs installed (see the [module](self)).
#[derive(Debug)]
pub(super) struct Filters {
    /// Every rule but the refusal of `mount`, in one program ([`compact`]): PID 1's, before
    /// ready.
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

/// The rules as the two [`Filters`], which installed together answer as the filter as
/// specified (the tests' `spec::programs`) does.
pub(super) fn compile() -> Result<Filters, String> {
    let mut rules = rules();
    rules.denied.remove(&libc::SYS_mount);
    Ok(Filters {
        sandbox: compact(&rules)?,
        tool: refuse_one(libc::SYS_mount as u32, libc::EPERM),
    })
}

impl Rules {
    /// The maps with their errno, in the order their filters are installed one by one. Among
    /// errno answers the kernel takes the last one's, so the family filter comes after the
    /// `EPERM` one: a packet socket of `SOCK_RAW` type is `EAFNOSUPPORT`, as on a kernel
    /// without `AF_PACKET`.
    fn in_order(&self) -> [(&BTreeMap<i64, When>, i32); 3] {
        [
            (&self.denied, libc::EPERM),
            (&self.absent, libc::ENOSYS),
            (&self.families, libc::EAFNOSUPPORT),
        ]
    }

    /// Every system call number some rule names, in order.
    fn numbers(&self) -> Vec<u32> {
        let mut numbers: Vec<u32> = self
            .in_order()
            .into_iter()
            .flat_map(|(rules, _)| rules.keys())
            .filter_map(|&nr| u32::try_from(nr).ok())
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        numbers
    }
}

/// `rules` as one program answering as their programs installed one by one would (the tests'
/// `spec::programs_of`). After the architecture, a number with the x32 bit is refused
/// (`EPERM`), and a binary search of the numbers the rules name (a few comparisons) allows every
/// other call. Each number named has a block of its own: the rules naming it, newest filter
/// first, each refusing if it holds; then `RET ALLOW`.
///
/// Installing a program costs in proportion to its length (the kernel checks it, translates it
/// and compiles it to machine code, for every sandbox), and the kernel runs a new filter for
/// every system call number, to find those it always allows, while it holds the process's
/// signal lock: so few instructions, and few run per number.
///
/// # Errors
/// When a jump would be longer than classic BPF's 255 instructions, or a rule compares with no
/// value.
fn compact(rules: &Rules) -> Result<BpfProgram, String> {
    use bpf::{op, JGE_K, RET_K};
    let numbers = rules.numbers();
    let mut ops: Vec<Jump> = bpf::native_number().into_iter().map(Jump::op).collect();
    ops.push(Jump {
        code: JGE_K,
        jt: To::X32,
        jf: To::Next,
        k: X32_SYSCALL_BIT,
    });
    search(&numbers, 0, &mut ops);
    let allow = ops.len();
    let x32 = allow + 1;
    let blocks = numbers
        .iter()
        .map(|&nr| block(rules, nr))
        .collect::<Result<Vec<_>, _>>()?;
    let mut starts = Vec::with_capacity(blocks.len());
    let mut at = x32 + 1;
    for b in &blocks {
        starts.push(at);
        at += b.len();
    }
    let mut out = Vec::with_capacity(at);
    for (at, jump) in ops.into_iter().enumerate() {
        let offset = |to: To| -> Result<u8, String> {
            let target = match to {
                To::Next => at + 1,
                To::Skip(n) => at + 1 + usize::from(n),
                To::Allow => allow,
                To::X32 => x32,
                To::Block(i) => starts[i],
                To::At(target) => target,
            };
            u8::try_from(target - at - 1)
                .map_err(|_| format!("seccomp: a jump of {} instructions", target - at))
        };
        out.push(op(jump.code, offset(jump.jt)?, offset(jump.jf)?, jump.k));
    }
    out.push(op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    out.push(op(RET_K, 0, 0, bpf::errno(libc::EPERM)));
    out.extend(blocks.into_iter().flatten());
    Ok(out)
}

/// The block of system call `nr` in [`compact`]'s program: the rules naming it, newest filter
/// first, each returning its errno if it holds; `RET ALLOW` if none does.
///
/// # Errors
/// A rule comparing with no value (which holds for no call, and which seccompiler cannot say).
fn block(rules: &Rules, nr: u32) -> Result<BpfProgram, String> {
    use bpf::{load_arg, op, AND_K, JEQ_K, JSET_K, RET_K};
    let mut out = Vec::new();
    for (map, errno) in rules.in_order().into_iter().rev() {
        let Some(&when) = map.get(&i64::from(nr)) else {
            continue;
        };
        let refuse = op(RET_K, 0, 0, bpf::errno(errno));
        match when {
            When::Always => {
                out.push(refuse);
                return Ok(out);
            }
            When::AnyBit { arg, mask } => {
                out.extend([load_arg(arg), op(JSET_K, 0, 1, mask), refuse]);
            }
            // seccompiler takes a call listed without rules for one always refused.
            When::MaskedIn { values: [], .. } => {
                return Err(format!(
                    "seccomp: the rule of system call {nr} compares with no value"
                ))
            }
            When::MaskedIn { arg, mask, values } => {
                out.extend([load_arg(arg), op(AND_K, 0, 0, mask)]);
                let n = values.len();
                for (i, &v) in values.iter().enumerate() {
                    // Equal: on to the refusal after the last comparison; the last one
                    // unequal: over it.
                    let to_refusal = u8::try_from(n - 1 - i).unwrap_or(u8::MAX);
                    let last = u8::from(i + 1 == n);
                    // Masked as seccompiler masks it.
                    out.push(op(JEQ_K, to_refusal, last, v & mask));
                }
                out.push(refuse);
            }
            When::NoneOf { arg, values } => {
                out.push(load_arg(arg));
                let n = values.len();
                for (i, &v) in values.iter().enumerate() {
                    // Equal: over the refusal.
                    let past_refusal = u8::try_from(n - i).unwrap_or(u8::MAX);
                    out.push(op(JEQ_K, past_refusal, 0, v));
                }
                out.push(refuse);
            }
        }
    }
    out.push(op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    Ok(out)
}

/// Where a jump of [`compact`]'s search goes.
#[derive(Debug, Clone, Copy)]
enum To {
    /// The next instruction.
    Next,
    /// This many instructions after the next one.
    Skip(u8),
    /// The search's `RET ALLOW`.
    Allow,
    /// The refusal of an x32 number.
    X32,
    /// The block of the `n`th number named.
    Block(usize),
    /// The instruction at this index.
    At(usize),
}

/// An instruction of the search, its jumps not laid out yet.
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

/// A binary search of the sorted `numbers` (from the `first`th number named on) for the number
/// loaded: found → its [`To::Block`], not found → [`To::Allow`].
fn search(numbers: &[u32], first: usize, ops: &mut Vec<Jump>) {
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
                jt: To::Block(first + i),
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
    search(&numbers[..mid], first, ops);
    ops[split].jt = To::At(ops.len());
    search(&numbers[mid..], first + mid, ops);
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
    /// `BPF_JMP | BPF_JSET | BPF_K`.
    pub(super) const JSET_K: u16 = 0x45;
    /// `BPF_ALU | BPF_AND | BPF_K`.
    pub(super) const AND_K: u16 = 0x54;
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

    /// Loads the low 32 bits of system call argument `arg` (`seccomp_data.args[arg]`).
    pub(super) fn load_arg(arg: u8) -> sock_filter {
        /// Where `struct seccomp_data` has `__u64 args[6]`.
        const ARGS: u32 = 16;
        let low = if cfg!(target_endian = "big") { 4 } else { 0 };
        op(LD_W_ABS, 0, 0, ARGS + 8 * u32::from(arg) + low)
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

/// The filter as specified, made by seccompiler from the same [`Rules`]: the tests' measure of
/// what [`compile`] lays out by hand.
#[cfg(test)]
mod spec {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{bpf, refuse_numbers, rules, Rules, When, X32_SYSCALL_BIT};

    fn arch() -> Result<TargetArch, String> {
        TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|e| format!("seccomp: unsupported architecture: {e}"))
    }

    fn condition(arg: u8, op: SeccompCmpOp, value: u32) -> Result<SeccompCondition, String> {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, u64::from(value))
            .map_err(|e| format!("seccomp condition: {e}"))
    }

    fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
        SeccompRule::new(conditions).map_err(|e| format!("seccomp rule: {e}"))
    }

    impl When {
        /// The seccompiler rules of a call refused when this holds (any one of them matching; none
        /// at all, always).
        fn seccompiler(self) -> Result<Vec<SeccompRule>, String> {
            match self {
                When::Always => Ok(Vec::new()),
                When::AnyBit { arg, mask } => (0..32)
                    .map(|b| 1u32 << b)
                    .filter(|bit| mask & bit != 0)
                    .map(|bit| {
                        rule(vec![condition(
                            arg,
                            SeccompCmpOp::MaskedEq(bit.into()),
                            bit,
                        )?])
                    })
                    .collect(),
                When::MaskedIn { arg, mask, values } => values
                    .iter()
                    .map(|&v| {
                        rule(vec![condition(
                            arg,
                            SeccompCmpOp::MaskedEq(mask.into()),
                            v,
                        )?])
                    })
                    .collect(),
                When::NoneOf { arg, values } => Ok(vec![rule(
                    values
                        .iter()
                        .map(|&v| condition(arg, SeccompCmpOp::Ne, v))
                        .collect::<Result<_, _>>()?,
                )?]),
            }
        }
    }

    fn filter(
        rules: &BTreeMap<i64, When>,
        errno: i32,
        arch: TargetArch,
    ) -> Result<BpfProgram, String> {
        let rules = rules
            .iter()
            .map(|(&nr, when)| Ok((nr, when.seccompiler()?)))
            .collect::<Result<BTreeMap<_, _>, String>>()?;
        let f = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(|e| format!("seccomp filter: {e}"))?;
        BpfProgram::try_from(f).map_err(|e| format!("seccomp compile: {e}"))
    }

    /// The filter as specified: one program per action, in the order they would be installed one
    /// by one ([`Rules::in_order`]), made by seccompiler. The kernel runs every filter and takes
    /// the strictest action; among errno answers, the one of the filter installed last. The tests
    /// hold the installed [`Filters`] to it.
    pub(super) fn programs() -> Result<Vec<BpfProgram>, String> {
        programs_of(&rules())
    }

    /// The programs of `rules`, in the order of [`programs`].
    pub(super) fn programs_of(rules: &Rules) -> Result<Vec<BpfProgram>, String> {
        let arch = arch()?;
        let mut programs = rules
            .in_order()
            .into_iter()
            .map(|(map, errno)| filter(map, errno, arch))
            .collect::<Result<Vec<_>, _>>()?;
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
}

#[cfg(test)]
mod tests {
    use super::spec::{programs, programs_of};
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
                0x15 | 0x25 | 0x35 | 0x45 => {
                    let taken = match i.code {
                        0x15 => acc == i.k,
                        0x25 => acc > i.k,
                        0x45 => acc & i.k != 0,
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
        let mut firsts: Vec<u64> = vec![0, 1, 2, 3, u64::MAX, 0xffff_ffff_0000_0001];
        firsts.extend(
            SOCKET_FAMILIES
                .iter()
                .map(|&f| f as libc::c_int)
                .chain(CLONE_NS_FLAGS.iter().copied())
                .flat_map(|f| [f as u64, (f | libc::SIGCHLD) as u64]),
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
        let spec: usize = programs()
            .expect("the programs compile")
            .iter()
            .map(Vec::len)
            .sum();
        assert!(
            sandbox.len() <= 200 && sandbox.len() * 2 < spec,
            "{} instructions installed, {spec} as specified",
            sandbox.len()
        );
        let ruled = {
            let mut rules = rules();
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
            "the longest search took {longest} instructions"
        );
        // A call a rule names goes on to its block, which is short too.
        for nr in ruled {
            let (_, steps) = run_counted(&sandbox, AUDIT_ARCH_X86_64, nr, [0; 6]);
            assert!(steps <= longest + 8, "{nr}: {steps}");
        }
    }

    #[test]
    fn the_search_is_exact_for_any_set_of_numbers() {
        // Each number of the set refused outright: what is refused is exactly the set (and
        // every x32 number).
        for set in [
            vec![],
            vec![5],
            vec![0, 1],
            vec![3, 9, 10],
            (0..40).map(|n| n * 7).collect(),
        ] {
            let rules = Rules {
                denied: set
                    .iter()
                    .map(|&nr| (i64::from(nr), When::Always))
                    .collect(),
                families: BTreeMap::new(),
                absent: BTreeMap::new(),
            };
            let program = compact(&rules).expect("laid out");
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
        let too_many = Rules {
            denied: (0..400).map(|nr| (nr, When::Always)).collect(),
            families: BTreeMap::new(),
            absent: BTreeMap::new(),
        };
        let err = compact(&too_many).expect_err("jumps too long");
        assert!(err.contains("a jump of"), "{err}");
    }

    #[test]
    fn each_kind_of_rule_answers_as_seccompiler_does_for_it() {
        // One number per kind of rule, several of them naming one number, against the same
        // rules as seccompiler makes them, installed one by one.
        const VALUES: &[u32] = &[3, 10, 0xffff_ffff];
        let rules = Rules {
            denied: BTreeMap::from([
                (
                    1,
                    When::AnyBit {
                        arg: 2,
                        mask: 0x8001_0100,
                    },
                ),
                (
                    2,
                    When::MaskedIn {
                        arg: 1,
                        mask: 0xf0f,
                        values: VALUES,
                    },
                ),
                (
                    3,
                    When::NoneOf {
                        arg: 0,
                        values: VALUES,
                    },
                ),
                (4, When::Always),
            ]),
            families: BTreeMap::from([(
                2,
                When::NoneOf {
                    arg: 0,
                    values: &[7],
                },
            )]),
            absent: BTreeMap::from([(4, When::Always), (3, When::AnyBit { arg: 5, mask: 1 })]),
        };
        let installed = compact(&rules).expect("laid out");
        let programs = programs_of(&rules).expect("the programs compile");
        let values: Vec<u64> = [0u64, 1, 3, 7, 10, 0x100, 0x103, 0xf03, 0x8000_0000]
            .into_iter()
            .chain([0xffff_ffff, 0x1_0000_0003, u64::MAX])
            .collect();
        for nr in 0..8 {
            for &a in &values {
                for &b in &values {
                    for args in [[a, b, 0, 0, 0, 0], [a, 0, b, 0, 0, 0], [a, 0, 0, 0, 0, b]] {
                        let expected = combined(&programs, AUDIT_ARCH_X86_64, nr, args);
                        let got = decode(run(&installed, AUDIT_ARCH_X86_64, nr as u32, args));
                        assert_eq!(got, expected, "system call {nr} with {args:?}");
                    }
                }
            }
        }
        // A comparison with no value, which seccompiler would take for a rule always holding.
        let mut empty = rules;
        empty.denied.insert(
            5,
            When::MaskedIn {
                arg: 0,
                mask: 0xff,
                values: &[],
            },
        );
        let err = compact(&empty).expect_err("no value to compare with");
        assert!(
            err.contains("system call 5 compares with no value"),
            "{err}"
        );
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
            if SOCKET_FAMILIES.contains(&(f as u32)) {
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
