//! The loopback interface of the calling thread's network namespace: brought up (for the relay
//! of a sandbox with egress) and asked whether it is up.

use std::os::fd::AsRawFd;

/// Brings the loopback interface of this thread's network namespace up (it starts down,
/// without its addresses routed).
pub(crate) fn loopback_up() -> Result<(), String> {
    loopback_flags(
        libc::SIOCSIFFLAGS,
        (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short,
    )
    .map(drop)
    .map_err(|e| format!("bringing loopback up: {e}"))
}

/// Whether the loopback interface of this thread's network namespace is up.
pub(super) fn loopback_is_up() -> std::io::Result<bool> {
    let flags = loopback_flags(libc::SIOCGIFFLAGS, 0)?;
    Ok(flags & libc::IFF_UP as libc::c_short != 0)
}

/// One `request` (`SIOCGIFFLAGS`, or `SIOCSIFFLAGS` with `flags`) on the loopback interface of
/// this thread's network namespace: its flags after the request.
fn loopback_flags(request: libc::Ioctl, flags: libc::c_short) -> std::io::Result<libc::c_short> {
    let sock = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )?;
    // SAFETY: `ifreq` is a plain C struct (a name and a union of integers and addresses), for
    // which all-zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo") {
        *dst = *src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = flags;
    // SAFETY: both requests read and write one `ifreq` through the pointer, valid for the call.
    if unsafe { libc::ioctl(sock.as_raw_fd(), request, &mut req) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the flags are the union's member both requests use.
    Ok(unsafe { req.ifr_ifru.ifru_flags })
}
