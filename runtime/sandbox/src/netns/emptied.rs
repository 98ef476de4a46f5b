//! Whether a network namespace an ended sandbox used holds nothing of it, so that another
//! sandbox may have it.
//!
//! The namespaces of the pool belong to the host's user namespace: nothing in a sandbox holds a
//! capability over them, so nothing there can configure an interface, a route, a rule or a
//! sysctl. What a process without those capabilities can leave in a network namespace is
//! sockets, and what sockets make. The tool's seccomp filter allows sockets of `AF_UNIX`,
//! `AF_INET` and `AF_INET6` only (no raw, packet or netlink sockets). A socket ends with the
//! last descriptor of it (so a UDP or ping socket needs no look), unless
//! - it is a TCP connection still ending, or its `TIME-WAIT` (the kernel keeps those past
//!   their descriptors): asked of the kernel with `sock_diag`, every TCP state but `LISTEN`
//!   (a listening socket ends with its descriptor), IPv4 and IPv6;
//! - a descriptor of it is in flight, in a Unix socket's queue, until the kernel collects the
//!   cycle: such a Unix socket is listed in `/proc/<tid>/net/unix` until then;
//! - it is an SCTP association still ending: `/proc/<tid>/net/sctp/assocs` and `eps`, when
//!   the kernel has SCTP at all.
//!
//! Beyond sockets: an IPv6 flow label lingers after its socket (`/proc/<tid>/net/ip6_flowlabel`),
//! and TCP keeps metrics per destination past a connection's end (`ip tcp_metrics`), which are
//! never kept in a namespace with loopback up ([`forget_tcp_peers`]; with loopback down no
//! connection can be made). So a namespace is given to another sandbox only when all of those
//! are empty and its loopback is as it was made.

use std::io;

/// The tables of `/proc/<tid>/net` that list what of a sandbox may outlive its processes,
/// besides TCP's connections: a namespace any of them lists something in is not given again.
/// A table the kernel does not have (no IPv6, no SCTP) holds nothing.
const TABLES: &[&str] = &["unix", "ip6_flowlabel", "sctp/assocs", "sctp/eps"];

/// The sysctls, below `/proc/sys/net/`, written in the namespace the pool's namespaces are
/// made from, so that each of them has TCP and UDP socket tables of its own, of these sizes,
/// rather than sharing the host's (262,144 TCP buckets on a machine of 24 GiB): the kernel
/// walks every bucket of a namespace's table to list its connections (the look before the
/// namespace is given again) and to purge its `TIME-WAIT`s when it is destroyed. A sandbox's
/// sockets are the tool's and the relay's; a table of these sizes holds thousands.
const OWN_TABLES: &[(&str, &str)] = &[
    ("ipv4/tcp_child_ehash_entries", "1024"),
    ("ipv4/udp_child_hash_entries", "256"),
];

/// Writes [`OWN_TABLES`] in the network namespace of the calling thread, so that those made
/// from it have socket tables of their own; a kernel without these settings (before Linux
/// 6.1 and 6.2) makes them share the host's tables, as it always did.
pub(super) fn own_tables() -> io::Result<()> {
    write_sysctls(OWN_TABLES, true)
}

/// The sysctls, below `/proc/sys/net/`, written in each namespace with loopback up before it is
/// first handed out, so that no TCP connection in it leaves the metrics the kernel keeps per
/// destination past the connection's end: none saved at a connection's end, and no Fast Open
/// (whose client caches the server's answer there). Only connections between the tool and the
/// relay, on loopback, are affected.
const NO_TCP_MEMORY: &[(&str, &str)] = &[
    ("ipv4/tcp_no_metrics_save", "1"),
    ("ipv4/tcp_fastopen", "0"),
];

/// Writes [`NO_TCP_MEMORY`] in the network namespace of the calling thread.
pub(super) fn forget_tcp_peers() -> io::Result<()> {
    write_sysctls(NO_TCP_MEMORY, false)
}

/// Writes each of `sysctls` (a name below `/proc/sys/net/`, a value) in the network namespace of
/// the calling thread; one the kernel does not have is passed over if `missing_ok`.
fn write_sysctls(sysctls: &[(&str, &str)], missing_ok: bool) -> io::Result<()> {
    for (name, value) in sysctls {
        let path = format!("/proc/sys/net/{name}");
        match std::fs::write(&path, value) {
            Ok(()) => {}
            Err(e) if missing_ok && e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("writing {path}: {e}"))),
        }
    }
    Ok(())
}

/// What the network namespace of the calling thread still holds of a sandbox (the first thing
/// found, named), or `None` when it holds no TCP socket but listening ones, every table of
/// [`TABLES`] is empty, and its loopback is up exactly if `loopback`.
pub(super) fn leftover(loopback: bool) -> io::Result<Option<String>> {
    let tcp = tcp_sockets()?;
    if tcp > 0 {
        return Ok(Some(format!("{tcp} TCP sockets")));
    }
    for table in TABLES {
        let path = format!("/proc/thread-self/net/{table}");
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("reading {path}: {e}"))),
        };
        // A line of headings, then one line per entry.
        let entries = text
            .split(|&b| b == b'\n')
            .skip(1)
            .filter(|line| !line.is_empty())
            .count();
        if entries > 0 {
            return Ok(Some(format!("{entries} entries in {table}")));
        }
    }
    let up = super::loopback::loopback_is_up()?;
    if up != loopback {
        return Ok(Some(format!(
            "loopback {}, made {}",
            if up { "up" } else { "down" },
            if loopback { "up" } else { "down" }
        )));
    }
    Ok(None)
}

/// How many TCP sockets, IPv4 and IPv6, in any state but `LISTEN`, the network namespace of the
/// calling thread holds: a `sock_diag` dump of each family (which, without `LISTEN`, walks only
/// the namespace's own table of connections).
fn tcp_sockets() -> io::Result<usize> {
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload};
    use netlink_packet_core::{NLM_F_DUMP, NLM_F_REQUEST};
    use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
    use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
    use netlink_packet_sock_diag::SockDiagMessage;

    let sock = rustix::net::socket(
        rustix::net::AddressFamily::NETLINK,
        rustix::net::SocketType::DGRAM,
        Some(rustix::net::netlink::SOCK_DIAG),
    )?;
    let mut found = 0;
    let mut buf = vec![0u8; 16 * 1024];
    for (family, socket_id) in [
        (AF_INET, SocketId::new_v4()),
        (AF_INET6, SocketId::new_v6()),
    ] {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        let mut request = NetlinkMessage::new(
            header,
            SockDiagMessage::InetRequest(InetRequest {
                family,
                protocol: IPPROTO_TCP,
                extensions: ExtensionFlags::empty(),
                // SYN_RECV includes the connections not yet accepted.
                states: StateFlags::all() - StateFlags::LISTEN,
                socket_id,
            })
            .into(),
        );
        request.finalize();
        let mut bytes = vec![0u8; request.buffer_len()];
        request.serialize(&mut bytes);
        rustix::net::send(&sock, &bytes, rustix::net::SendFlags::empty())?;
        'dump: loop {
            let (len, _) = rustix::net::recv(&sock, &mut buf[..], rustix::net::RecvFlags::empty())?;
            let mut at = 0;
            while at < len {
                let message = NetlinkMessage::<SockDiagMessage>::deserialize(&buf[at..len])
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                match message.payload {
                    NetlinkPayload::Done(_) => break 'dump,
                    NetlinkPayload::Error(e) => {
                        return Err(io::Error::other(format!("sock_diag: {e}")))
                    }
                    NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(_)) => found += 1,
                    _ => {}
                }
                let step = message.header.length as usize;
                if step == 0 {
                    break;
                }
                // Messages are aligned to 4 bytes.
                at += (step + 3) & !3;
            }
        }
    }
    Ok(found)
}
