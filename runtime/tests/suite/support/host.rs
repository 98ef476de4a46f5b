//! The host as the tests of this one program share it.
//!
//! A host check ([`crate::support::sandbox::HostSnapshot`]) sees the whole process: its child
//! processes, its mounts, its sandbox cgroups and every process in the sandboxes' uid range. Now
//! that every test runs in one process, a test that checks the host holds [`exclusive`] for its
//! whole run, and every test that starts a process or a sandbox holds [`shared`], so a check sees
//! only the sandboxes and processes of its own test. Tests that start nothing hold neither.
//!
//! A guard is taken once, at the start of a test. The lock is tokio's (fair, so a waiting host
//! check is not starved), held across the test's awaits; a synchronous test takes it with the
//! `_blocking` forms.

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static HOST: RwLock<()> = RwLock::const_new(());

/// Held by a test that starts processes or sandboxes: others like it run alongside.
pub async fn shared() -> RwLockReadGuard<'static, ()> {
    HOST.read().await
}

/// Held by a test that checks the host is clean: it runs alone among the tests that start
/// processes or sandboxes.
pub async fn exclusive() -> RwLockWriteGuard<'static, ()> {
    HOST.write().await
}

/// [`shared`], for a synchronous test (not within an async runtime).
pub fn shared_blocking() -> RwLockReadGuard<'static, ()> {
    HOST.blocking_read()
}

/// [`exclusive`], for a synchronous test (not within an async runtime).
pub fn exclusive_blocking() -> RwLockWriteGuard<'static, ()> {
    HOST.blocking_write()
}
