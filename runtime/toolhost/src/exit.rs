//! The exit statuses of a tool host (the `stdio-json` protocol's, and the host's own).

/// Exit status of a payload that does not deserialise into the tool's input type (`EX_DATAERR`).
pub const EXIT_BAD_PAYLOAD: u8 = 65;
/// Exit status of a permanent tool failure.
pub const EXIT_PERMANENT: u8 = 1;
/// Exit status of bad usage: no tool id, an unknown one, a bad option (`EX_USAGE`).
pub const EXIT_USAGE: u8 = 64;
/// Exit status of a failure of the host itself: an output that does not serialise, two tools with
/// one id, no runtime (`EX_SOFTWARE`).
pub const EXIT_INTERNAL: u8 = 70;
/// Exit status of a transient tool failure (`EX_TEMPFAIL`): the runtime may retry.
pub const EXIT_TRANSIENT: u8 = 75;
