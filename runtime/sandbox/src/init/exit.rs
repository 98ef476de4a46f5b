//! How the processes forked from the zygote end.

/// Ends this process at once with `code`, running no exit handler. The processes forked from
/// the zygote (a sandbox's outer process and its PID 1) have nothing to flush: their messages
/// go straight to sockets, and their standard error is unbuffered. The handlers they would run
/// are the zygote's (the loader's finalisers, the C library's and Rust's cleanup), and would
/// only write to memory shared with it, copying each page they touch: about a fifth of these
/// processes' page faults in a burst of sandboxes.
pub(super) fn end(code: i32) -> ! {
    // SAFETY: `_exit` ends the process without running anything of it.
    unsafe { libc::_exit(code) }
}
