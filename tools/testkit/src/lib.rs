//! What the testkit's probes share.

pub mod fixtures;

/// The host name of the UTS namespace the process runs in (empty if it cannot be read).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is valid for `buf.len()` bytes, which `gethostname` does not exceed.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub mod registry;

#[cfg(feature = "image")]
pub mod image;
