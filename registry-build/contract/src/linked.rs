//! A tool host linked into the program that runs its tools.
//!
//! A crate of `#[tool]` functions built outside the agent's workspace has no binary the agent
//! can name portably. Linked instead (a dependency of the agent, and a build-dependency so that
//! `build.rs` reads its contracts), its tools are served by the agent's own binary: the
//! executors start the program that runs the registry as
//!
//! ```text
//! <this program> --escepine-linked-host <host> <endpoint args…>
//! ```
//!
//! where `<host>` is the endpoint's `command`, and the program's `main` hands that call to the
//! host's tools before doing anything else (`escepine_toolhost::linked::dispatch`).

/// The first argument of a call of a linked tool host; the host's name follows it.
pub const FLAG: &str = "--escepine-linked-host";
