//! Run leases: one driver per SOP run at a time.
//!
//! An engine that starts or resumes a run first takes the run's lease from the ledger
//! ([`super::Ledger::lease_run`]) and holds it until it stops driving the run. A second engine —
//! in the same process or, for a file-backed ledger, in another one — asking for the lease of a
//! run being driven gets [`LedgerError::RunLeased`] instead of racing the first (two drivers
//! would both append transitions and both run the next step).
//!
//! [`LocalLeases`] hold leases in this process (the in-memory ledger's); [`FileLeases`] hold
//! them on the machine as open-file-description byte locks on one lock file beside the ledger
//! (`<ledger>.leases`), at an offset derived from the run id's SHA-256 (62 bits: two run ids
//! meet with probability 2⁻⁶²). The kernel drops such a lock when its holder's file closes, so a
//! crashed driver leaves no stale lease: `escepine resume` after a SIGKILL just works.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::LedgerError;
use crate::ofd_lock;

/// A claim on one run, released when dropped.
pub struct RunLease {
    _held: Box<dyn Send + Sync>,
}

impl fmt::Debug for RunLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunLease").finish_non_exhaustive()
    }
}

impl RunLease {
    /// A lease that guards nothing: for a ledger that cannot tell whether a run is driven
    /// elsewhere.
    pub fn unguarded() -> Self {
        Self {
            _held: Box::new(()),
        }
    }
}

/// Leases held in this process.
#[derive(Debug, Default)]
pub struct LocalLeases {
    held: Arc<Mutex<HashSet<String>>>,
}

struct LocalHeld {
    held: Arc<Mutex<HashSet<String>>>,
    run_id: String,
}

impl Drop for LocalHeld {
    fn drop(&mut self) {
        if let Ok(mut held) = self.held.lock() {
            held.remove(&self.run_id);
        }
    }
}

impl LocalLeases {
    /// The lease of `run_id`.
    ///
    /// # Errors
    /// [`LedgerError::RunLeased`] while another lease of it is held.
    pub fn acquire(&self, run_id: &str) -> Result<RunLease, LedgerError> {
        let mut held = self
            .held
            .lock()
            .map_err(|_| LedgerError::Unavailable("the lease table is poisoned".into()))?;
        if !held.insert(run_id.to_string()) {
            return Err(LedgerError::RunLeased(run_id.to_string()));
        }
        Ok(RunLease {
            _held: Box::new(LocalHeld {
                held: Arc::clone(&self.held),
                run_id: run_id.to_string(),
            }),
        })
    }
}

/// Leases held on the machine through the lock file `path`.
#[derive(Debug, Clone)]
pub struct FileLeases {
    path: PathBuf,
}

impl FileLeases {
    /// Leases through the lock file at `path` (created on first use).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The lock file beside the ledger file `ledger`: `<ledger>.leases`.
    pub fn beside(ledger: &Path) -> Self {
        let mut name = ledger.as_os_str().to_owned();
        name.push(".leases");
        Self::new(PathBuf::from(name))
    }

    /// The lease of `run_id`. Each lease opens the lock file anew, so two leases of one run
    /// exclude each other in one process as across processes.
    ///
    /// # Errors
    /// [`LedgerError::RunLeased`] while another lease of it is held anywhere on the machine;
    /// [`LedgerError::Unavailable`] when the lock file cannot be opened or locked.
    pub fn acquire(&self, run_id: &str) -> Result<RunLease, LedgerError> {
        let unavailable =
            |e: std::io::Error| LedgerError::Unavailable(format!("{}: {e}", self.path.display()));
        let file = ofd_lock::open(&self.path).map_err(unavailable)?;
        if !ofd_lock::try_lock(&file, offset(run_id)).map_err(unavailable)? {
            return Err(LedgerError::RunLeased(run_id.to_string()));
        }
        // Closing the file releases the lock.
        Ok(RunLease {
            _held: Box::new(file),
        })
    }
}

/// The lock offset of `run_id`: 62 bits of its SHA-256.
fn offset(run_id: &str) -> u64 {
    let digest = Sha256::digest(run_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) >> 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_has_one_lease_at_a_time_in_a_process() {
        let leases = LocalLeases::default();
        let first = leases.acquire("r1").unwrap();
        assert!(matches!(leases.acquire("r1"), Err(LedgerError::RunLeased(id)) if id == "r1"));
        let _other = leases.acquire("r2").unwrap();
        drop(first);
        leases.acquire("r1").unwrap();
    }

    #[test]
    fn a_run_has_one_lease_at_a_time_on_the_machine() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger.db");
        // Two handles, as two processes would have.
        let a = FileLeases::beside(&ledger);
        let b = FileLeases::beside(&ledger);
        let held = a.acquire("run-1").unwrap();
        assert!(matches!(b.acquire("run-1"), Err(LedgerError::RunLeased(_))));
        assert!(matches!(a.acquire("run-1"), Err(LedgerError::RunLeased(_))));
        let _other = b.acquire("run-2").unwrap();
        drop(held);
        b.acquire("run-1").unwrap();
        assert!(dir.path().join("ledger.db.leases").is_file());
    }
}
