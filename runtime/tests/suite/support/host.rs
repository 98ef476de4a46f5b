//! The host as the tests of this one program share it.
//!
//! A host check ([`crate::support::sandbox::HostSnapshot`]) sees the whole process: its child
//! processes, its mounts, its sandbox cgroups and every process in the sandboxes' uid range. Now
//! that every test runs in one process, a test that checks the host holds [`exclusive`] for its
//! whole run, and every test that starts a process or a sandbox holds [`shared`], so a check sees
//! only the sandboxes and processes of its own test. Tests that start nothing hold neither.
//!
//! A guard is taken once, at the start of a test (never again on the same thread while held).

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

static HOST: RwLock<()> = RwLock::new(());

/// Held by a test that starts processes or sandboxes: others like it run alongside.
pub fn shared() -> RwLockReadGuard<'static, ()> {
    // A test that panicked while holding the lock left nothing it guards inconsistent.
    HOST.read().unwrap_or_else(PoisonError::into_inner)
}

/// Held by a test that checks the host is clean: it runs alone among the tests that start
/// processes or sandboxes.
pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    HOST.write().unwrap_or_else(PoisonError::into_inner)
}
