//! The sandbox crate's integration tests: the Linux backend driven directly (provision,
//! execute, destroy), with real namespaces (root). The sandboxes' init is this program: the
//! backend starts `/proc/self/exe`, and the dispatch runs as a constructor, before libtest's
//! `main` and its threads.

mod cgroups;
mod jobs;
mod netns;
mod pool;
mod roots;
mod run_dir;

/// Runs before libtest's `main`: the sandbox init's dispatch, which does not return in a
/// sandbox.
#[ctor::ctor(unsafe)]
fn before_main() {
    escepine_sandbox::init::dispatch();
}

/// A backend with this program as its init, its proxy sockets under `run_dir`.
pub(crate) fn backend(run_dir: &std::path::Path) -> escepine_sandbox::LinuxBackend {
    escepine_sandbox::LinuxBackend::new()
        .expect("this test program dispatches the sandbox init")
        .with_run_dir(run_dir)
}

/// Held by each test for its whole run: the tests count this process's sandbox cgroups, so
/// they run one at a time.
pub(crate) static HOST: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
