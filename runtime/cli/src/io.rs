//! [`Io`]: where a command writes.

use std::io::Write;

/// Where a command writes: standard output and standard error, or buffers in tests.
pub struct Io<'a> {
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error.
    pub err: &'a mut dyn Write,
}
