//! Outside ids of live sandboxes, unique on the machine.
//!
//! When the runtime is root, each live sandbox's uid 0 maps to its own unprivileged outside uid
//! (`base + slot`), so that `RLIMIT_NPROC` counts that sandbox's processes alone. Two runtimes on
//! one machine (`escepine serve` and an `escepine call`, a test process and the binary it
//! starts) must never hand out the same slot at the same time, or one sandbox's fork bomb would
//! eat another's process budget. A slot is therefore held twice:
//!
//! - in this process, in a set (cheap, and what several backends of one process share the lock
//!   file through — each has its own open file description, so they exclude each other too);
//! - on the machine, as a one-byte open-file-description lock (`F_OFD_SETLK`) at offset `slot`
//!   of one lock file (`/run/escepine/sandbox-ids.lock`, else under the temporary directory).
//!   The kernel drops such locks when the holder's file closes, so a crashed runtime frees its
//!   slots without any cleanup, and the file never grows.
//!
//! The cursor rotates through the slots (starting at a place derived from the pid), so a slot
//! just freed is not handed out again at once while the kernel may still be tearing its last
//! sandbox down.

use std::collections::HashSet;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::SandboxError;
use escepine_ofd_lock as ofd_lock;

/// Outside ids available from the base: one per live sandbox.
pub(crate) const SLOTS: u32 = 60_000;

/// The machine-wide lock file's directory when the runtime may write `/run`.
const RUN_DIR: &str = "/run/escepine";
/// The lock file's name.
const LOCK_FILE: &str = "sandbox-ids.lock";

/// The slot table of one backend.
#[derive(Debug)]
pub(crate) struct Slots {
    in_use: Mutex<HashSet<u32>>,
    cursor: AtomicU32,
    /// The machine-wide lock file; `None` when slots need not be unique beyond this process
    /// (an unprivileged runtime maps every sandbox to its own uid anyway).
    locks: Option<File>,
}

impl Slots {
    /// A table whose slots are unique in this process only.
    pub(crate) fn process_local() -> Self {
        Self {
            in_use: Mutex::new(HashSet::new()),
            cursor: AtomicU32::new(std::process::id().wrapping_mul(7919) % SLOTS),
            locks: None,
        }
    }

    /// A table whose slots are unique on the machine, through the lock file in `dir` (created
    /// if missing), or in the default place when `dir` is `None`.
    ///
    /// # Errors
    /// When no lock file can be opened.
    pub(crate) fn machine_wide(dir: Option<&Path>) -> Result<Self, SandboxError> {
        let file = match dir {
            Some(d) => open_lock_file(d),
            None => open_lock_file(Path::new(RUN_DIR))
                .or_else(|_| open_lock_file(&std::env::temp_dir().join("escepine"))),
        }?;
        Ok(Self {
            locks: Some(file),
            ..Self::process_local()
        })
    }

    /// A free slot, held until the guard is dropped.
    pub(crate) fn acquire(self: &Arc<Self>) -> Result<SlotGuard, SandboxError> {
        let mut used = self
            .in_use
            .lock()
            .map_err(|_| SandboxError::Protocol("the slot table is poisoned".into()))?;
        for _ in 0..SLOTS {
            let slot = self.cursor.fetch_add(1, Ordering::Relaxed) % SLOTS;
            if used.contains(&slot) {
                continue;
            }
            let locked = match &self.locks {
                None => true,
                Some(file) => ofd_lock::try_lock(file, u64::from(slot))
                    .map_err(|e| SandboxError::io("locking a sandbox id", e))?,
            };
            if locked {
                used.insert(slot);
                return Ok(SlotGuard {
                    slots: Arc::clone(self),
                    slot,
                });
            }
        }
        Err(SandboxError::Protocol(format!(
            "all {SLOTS} sandbox ids are in use"
        )))
    }

    fn release(&self, slot: u32) {
        if let Ok(mut used) = self.in_use.lock() {
            if let Some(file) = &self.locks {
                if let Err(e) = ofd_lock::unlock(file, u64::from(slot)) {
                    // Held until this backend's file closes; the slot is skipped meanwhile.
                    tracing::warn!(slot, error = %e, "could not release a sandbox id");
                }
            }
            used.remove(&slot);
        }
    }
}

/// A slot, released on drop.
#[derive(Debug)]
pub(crate) struct SlotGuard {
    slots: Arc<Slots>,
    /// The slot: the sandbox's outside uid is the base plus this.
    pub(crate) slot: u32,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.slots.release(self.slot);
    }
}

fn open_lock_file(dir: &Path) -> Result<File, SandboxError> {
    let path = dir.join(LOCK_FILE);
    ofd_lock::open(&path).map_err(|e| SandboxError::io(format!("open {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_tables_on_one_lock_file_never_share_a_slot() {
        let dir = tempfile::tempdir().unwrap();
        let a = Arc::new(Slots::machine_wide(Some(dir.path())).unwrap());
        let b = Arc::new(Slots::machine_wide(Some(dir.path())).unwrap());
        // Both start at the same cursor (same pid): without the lock file they would collide.
        let held_a: Vec<SlotGuard> = (0..50).map(|_| a.acquire().unwrap()).collect();
        let held_b: Vec<SlotGuard> = (0..50).map(|_| b.acquire().unwrap()).collect();
        let mut all: Vec<u32> = held_a.iter().chain(&held_b).map(|g| g.slot).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 100);
        // A released slot is free for the other table again.
        let freed = held_a[0].slot;
        drop(held_a);
        let c = Arc::new(Slots::machine_wide(Some(dir.path())).unwrap());
        c.cursor.store(freed, Ordering::Relaxed);
        assert_eq!(c.acquire().unwrap().slot, freed);
    }

    #[test]
    fn process_local_tables_do_collide() {
        // The reason for the lock file.
        let a = Arc::new(Slots::process_local());
        let b = Arc::new(Slots::process_local());
        assert_eq!(a.acquire().unwrap().slot, b.acquire().unwrap().slot);
    }
}
