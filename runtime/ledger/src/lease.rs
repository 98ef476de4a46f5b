//! Run leases: one driver per SOP run at a time.
//!
//! An engine that starts or resumes a run first takes the run's lease from the ledger
//! ([`crate::store::Ledger::lease_run`]) and holds it until it stops driving the run. A second engine —
//! in the same process or, for a file-backed ledger, in another one — asking for the lease of a
//! run being driven gets [`LedgerError::RunLeased`] instead of racing the first (two drivers
//! would both append transitions and both run the next step).
//!
//! [`LocalLeases`] hold leases in this process (the in-memory ledger's); [`FileLeases`] hold
//! them on the machine as open-file-description byte locks (`F_OFD_SETLK`) on the SQLite
//! database file itself, at an offset derived from the run id's SHA-256 ([`lock_offset`]) far
//! above the bytes SQLite locks. No other file is involved, so deleting files beside the
//! ledger lets no second driver in. The kernel drops such a lock when its holder dies, so a
//! crashed driver leaves no stale lease: `escepine resume` after a SIGKILL just works.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::LedgerError;
use escepine_ofd_lock as ofd_lock;

/// What keeps a lease: dropping it releases the lease, and it can tell whether the lease is
/// still held (a lease in the database ends with its connection, even while the process lives).
pub(crate) trait Hold: Send + Sync {
    /// Whether the lease is still held. A lease held by a lock of this process (in memory, or a
    /// byte lock on a file descriptor this process keeps open) cannot be lost while it lives.
    fn held(&self) -> bool {
        true
    }
}

impl Hold for () {}

/// A claim on one run, released when dropped.
pub struct RunLease {
    run_id: String,
    held: Box<dyn Hold>,
}

impl fmt::Debug for RunLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunLease").finish_non_exhaustive()
    }
}

impl RunLease {
    /// The lease of `run_id` that lasts as long as `held` (whose drop releases it).
    pub(crate) fn holding(run_id: &str, held: impl Hold + 'static) -> Self {
        Self {
            run_id: run_id.to_string(),
            held: Box::new(held),
        }
    }

    /// A lease that guards nothing: for a ledger that cannot tell whether a run is driven
    /// elsewhere.
    pub fn unguarded(run_id: &str) -> Self {
        Self::holding(run_id, ())
    }

    /// The run this lease is of.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Whether the lease is still held: an engine checks before each event it records, so a
    /// driver whose lease ended (its database connection lost while its process lives) stops
    /// at once. The store also refuses, in the very transaction of an append, the run's
    /// entries from a driver that lost it (see the PostgreSQL store's fence).
    ///
    /// # Errors
    /// [`LedgerError::LeaseLost`] when it is no longer held.
    pub fn check(&self) -> Result<(), LedgerError> {
        if self.held.held() {
            Ok(())
        } else {
            Err(LedgerError::LeaseLost(self.run_id.clone()))
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

impl Hold for LocalHeld {}

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
            .map_err(|_| LedgerError::unavailable("the lease table is poisoned"))?;
        if !held.insert(run_id.to_string()) {
            return Err(LedgerError::RunLeased(run_id.to_string()));
        }
        Ok(RunLease::holding(
            run_id,
            LocalHeld {
                held: Arc::clone(&self.held),
                run_id: run_id.to_string(),
            },
        ))
    }
}

/// Leases held on the machine as byte locks on the ledger's database file itself.
///
/// A lock on the database file cannot be taken from under a live driver by deleting a file:
/// removing the ledger's path leaves the driver's file (and its lock) in place, and whoever
/// opens the path afterwards opens another file — another ledger, which does not hold the run.
///
/// The lock descriptor of a ledger file is opened once per process and stays open until the
/// process exits: closing any descriptor of a file drops every POSIX lock the process holds
/// on it, and SQLite's connections to the ledger hold theirs through other descriptors of the
/// same file. Leases of one process are told apart by a table beside the descriptor (an open
/// file description may re-take its own lock, so the kernel alone would not refuse them).
#[derive(Debug, Clone)]
pub struct FileLeases {
    file: Arc<LockedFile>,
}

/// The lock descriptor of one ledger file and the offsets this process holds on it.
#[derive(Debug)]
struct LockedFile {
    file: File,
    held: Mutex<HashSet<u64>>,
}

/// Lock descriptors by the (device, inode) of their file.
type OpenFiles = HashMap<(u64, u64), Arc<LockedFile>>;

/// The lock descriptors of this process.
fn open_files() -> &'static Mutex<OpenFiles> {
    static FILES: OnceLock<Mutex<OpenFiles>> = OnceLock::new();
    FILES.get_or_init(Mutex::default)
}

impl FileLeases {
    /// The leases of the existing database file at `path`, which must be the file `expected`
    /// (its `(device, inode)`, as the ledger's connection found it) when `Some`.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the file cannot be opened for writing, or when the
    /// path now names another file than `expected` (it was replaced while being opened).
    pub fn of_file(path: &Path, expected: Option<(u64, u64)>) -> Result<Self, LedgerError> {
        let unavailable = |e: std::io::Error| LedgerError::failed(path.display(), e);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(unavailable)?;
        let meta = file.metadata().map_err(unavailable)?;
        let id = (meta.dev(), meta.ino());
        let now = std::fs::metadata(path).map_err(unavailable)?;
        if expected.is_some_and(|e| e != id) || (now.dev(), now.ino()) != id {
            return Err(LedgerError::unavailable(format!(
                "{}: the file was replaced while the ledger opened it",
                path.display()
            )));
        }
        let mut files = open_files()
            .lock()
            .map_err(|_| LedgerError::unavailable("the lease table is poisoned"))?;
        // An entry's descriptor keeps its inode alive, so an inode number in the table is
        // never reused by another file.
        let file = Arc::clone(files.entry(id).or_insert_with(|| {
            Arc::new(LockedFile {
                file,
                held: Mutex::default(),
            })
        }));
        Ok(Self { file })
    }

    /// The lease of `run_id`: a write lock on one byte of the database file, at
    /// [`lock_offset`]`(run_id)`.
    ///
    /// # Errors
    /// [`LedgerError::RunLeased`] while another lease of it (or of a run id at the same
    /// offset) is held anywhere on the machine; [`LedgerError::Unavailable`] when the lock
    /// cannot be set.
    pub fn acquire(&self, run_id: &str) -> Result<RunLease, LedgerError> {
        let offset = lock_offset(run_id);
        let mut held = self
            .file
            .held
            .lock()
            .map_err(|_| LedgerError::unavailable("the lease table is poisoned"))?;
        if held.contains(&offset) {
            return Err(LedgerError::RunLeased(run_id.to_string()));
        }
        let locked = ofd_lock::try_lock(&self.file.file, offset)
            .map_err(|e| LedgerError::failed("cannot lock the ledger file", e))?;
        if !locked {
            return Err(LedgerError::RunLeased(run_id.to_string()));
        }
        held.insert(offset);
        Ok(RunLease::holding(
            run_id,
            FileHeld {
                file: Arc::clone(&self.file),
                offset,
            },
        ))
    }
}

struct FileHeld {
    file: Arc<LockedFile>,
    offset: u64,
}

impl Hold for FileHeld {}

impl Drop for FileHeld {
    fn drop(&mut self) {
        let Ok(mut held) = self.file.held.lock() else {
            return;
        };
        match ofd_lock::unlock(&self.file.file, self.offset) {
            Ok(()) => {
                held.remove(&self.offset);
            }
            // Still locked: keep refusing it here too (the process's exit frees it).
            Err(e) => tracing::warn!(error = %e, "could not release a run lease"),
        }
    }
}

/// The first byte of the lease locks: 2⁶², far above SQLite's lock bytes (the pending byte at
/// 2³⁰, then the reserved byte and 510 shared bytes), so the two never overlap.
pub const LOCK_BASE: u64 = 1 << 62;

/// The byte of the database file whose lock is the lease of `run_id`: [`LOCK_BASE`] plus the
/// first 8 bytes of SHA-256(`run_id`), big-endian, shifted right by 3 (61 bits: two run ids
/// meet with probability 2⁻⁶¹, and then refuse each other rather than share a lease).
pub fn lock_offset(run_id: &str) -> u64 {
    let digest = Sha256::digest(run_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    LOCK_BASE + (u64::from_be_bytes(first) >> 3)
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
        std::fs::write(&ledger, b"").unwrap();
        // Two handles, as two ledgers of this process would have.
        let a = FileLeases::of_file(&ledger, None).unwrap();
        let b = FileLeases::of_file(&ledger, None).unwrap();
        // Another open file description of the file, as another process would hold.
        let elsewhere = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&ledger)
            .unwrap();
        let held = a.acquire("run-1").unwrap();
        assert!(matches!(b.acquire("run-1"), Err(LedgerError::RunLeased(_))));
        assert!(matches!(a.acquire("run-1"), Err(LedgerError::RunLeased(_))));
        assert!(!ofd_lock::try_lock(&elsewhere, lock_offset("run-1")).unwrap());
        let other = b.acquire("run-2").unwrap();
        drop(held);
        assert!(ofd_lock::try_lock(&elsewhere, lock_offset("run-1")).unwrap());
        assert!(matches!(b.acquire("run-1"), Err(LedgerError::RunLeased(_))));
        ofd_lock::unlock(&elsewhere, lock_offset("run-1")).unwrap();
        b.acquire("run-1").unwrap();
        drop(other);
        // Nothing but the ledger file: no lock file beside it, and the file is unchanged.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["ledger.db"]);
        assert_eq!(std::fs::metadata(&ledger).unwrap().len(), 0);
    }

    #[test]
    fn a_replaced_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger.db");
        std::fs::write(&ledger, b"").unwrap();
        let meta = std::fs::metadata(&ledger).unwrap();
        let first = (meta.dev(), meta.ino());
        // Keep the first file alive so that its inode number cannot be reused.
        let _kept = std::fs::File::open(&ledger).unwrap();
        std::fs::remove_file(&ledger).unwrap();
        std::fs::write(&ledger, b"").unwrap();
        assert!(matches!(
            FileLeases::of_file(&ledger, Some(first)),
            Err(LedgerError::Unavailable { .. })
        ));
        FileLeases::of_file(&ledger, None).unwrap();
    }

    #[test]
    fn lease_bytes_never_meet_sqlite_lock_bytes() {
        // SQLite's unix VFS locks [2^30, 2^30 + 512) of the database file.
        let sqlite_end = (1u64 << 30) + 512;
        for id in ["", "r", "run-1", "a much longer run id than most"] {
            let at = lock_offset(id);
            assert!(at >= LOCK_BASE && at > sqlite_end, "{id}");
            assert!(i64::try_from(at).is_ok(), "{id}");
        }
    }
}
