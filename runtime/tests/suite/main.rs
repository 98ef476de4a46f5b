//! The runtime's integration tests: one test program, one module per subject, the helpers they
//! share in [`support`] (and, where they do not need the runtime, in `escepine_testkit`).
//!
//! One program shares one process, so what is process-wide is settled here and in [`support`]:
//!
//! - The sandboxes' init is this program (the backend starts `/proc/self/exe`): the dispatch
//!   runs as a constructor, before libtest's `main` and its threads.
//! - The host variables no tool may see are planted by the same constructor, once, before any
//!   thread exists (a `setenv` while other threads read the environment is a data race).
//! - Tests that check the host clean run alone among the tests that start processes or
//!   sandboxes ([`support::host`]).
//! - One global tracing subscriber captures every log ([`support::logs`]).
//! - The crash tests re-run this program as a child with `--exact <module>::<child test>
//!   --ignored`, so the child runs only its own test.
//!
//! The workspace's other binaries (the testtool, the hostile tool, the MCP servers, the catalog)
//! are found beside this program in `target/<profile>/`, where `cargo test --workspace` builds
//! them; `cargo test -p escepine-runtime` alone needs them built first (the error says how).

mod support;

mod approval;
mod authorize_catalog;
mod authorize_formats;
mod authorize_policies;
mod authorize_slicing;
mod budgets;
mod catalog_path;
#[cfg(feature = "in-process")]
mod executor_inprocess;
mod executor_process;
#[cfg(feature = "in-process")]
mod flows;
mod governed_crash;
mod governed_path;
mod ledger_tamper;
mod mcp_transport;
#[cfg(feature = "mcp-http")]
mod remote_hostile;
#[cfg(feature = "mcp-http")]
mod remote_tls;
mod sandbox_authorized_urls;
mod sandbox_egress;
mod sandbox_files;
mod sandbox_governed;
mod sandbox_hostile;
mod sandbox_hostile_gvisor;
mod sandbox_hostile_on_image;
mod sandbox_images;
mod sandbox_leaks;
mod sandbox_mcp;
mod sandbox_roots;
mod sandbox_tiers;
mod sop_crash;
mod sop_lease;
mod sop_saga;

/// The value of every planted host variable.
const HOST_ONLY_VALUE: &str = "host-only-value";

/// Runs before libtest's `main`: the sandbox init's dispatch (which does not return in a
/// sandbox), then the host variables planted while this program has one thread.
#[ctor::ctor(unsafe)]
fn before_main() {
    escepine_sandbox::init::dispatch();
    for name in [
        executor_process::HOST_SECRET,
        sandbox_governed::HOST_VAR,
        sandbox_hostile::scenarios::HOST_VAR,
    ] {
        std::env::set_var(name, HOST_ONLY_VALUE);
    }
}
