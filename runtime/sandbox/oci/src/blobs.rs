//! The content-addressed blob store: `<root>/blobs/sha256/<hex>`, each file verified against
//! its digest and its descriptor's size while it was written, then renamed into place.
//!
//! A blob is written to a temporary file under `<root>/tmp/`, hashed as it is written, and
//! renamed to its digest's name only when the digest and the size match; on any mismatch the
//! temporary file is removed, so nothing of a lying blob stays in the cache.
//!
//! Every blob is bounded while it is written by the least of its descriptor's size, the
//! store's largest blob ([`Access::max_blob_bytes`](crate::Access::max_blob_bytes)) and the
//! free space of the cache's filesystem less [`FREE_SPACE_MARGIN`] (measured before the blob and
//! again every [`FREE_SPACE_EVERY`] bytes): a descriptor declaring more than a bound is refused
//! before any byte is fetched, and a blob is refused as soon as its bytes pass one, before the
//! chunk that passes it is written. The writer holds `flock(LOCK_EX)` on its temporary file, so
//! that the file a crashed writer left can be told from one being written and removed
//! ([`Blobs::remove_stale`]).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{BlobBound, OciError};

/// The free space of the cache's filesystem a blob leaves unused.
pub const FREE_SPACE_MARGIN: u64 = 64 << 20;
/// How often (in bytes written) the free space is measured again while a blob is written.
pub const FREE_SPACE_EVERY: u64 = 64 << 20;
/// How old (unmodified) an unlocked temporary blob must be before it counts as a crashed
/// writer's.
const STALE_AFTER: Duration = Duration::from_secs(60);
/// The prefix of temporary blob files under `tmp/`.
const BLOB_STEM: &str = "blob";

/// The blob directory and the staging directory of a store, and its largest blob.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
    tmp: PathBuf,
    max: u64,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A unique temporary path under `tmp` starting with `stem`.
pub fn temp_path(tmp: &Path, stem: &str) -> PathBuf {
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    tmp.join(format!("{stem}.{}.{n}.{nanos}", std::process::id()))
}

impl Blobs {
    /// The store's blobs under `root`, none larger than `max_blob_bytes`.
    pub fn new(root: &Path, max_blob_bytes: u64) -> Self {
        Self {
            dir: root.join("blobs").join("sha256"),
            tmp: root.join("tmp"),
            max: max_blob_bytes,
        }
    }

    /// Where the verified blob `digest` lives.
    pub fn path(&self, digest: &str) -> PathBuf {
        self.dir
            .join(digest.strip_prefix("sha256:").unwrap_or(digest))
    }

    /// Whether `digest` is stored with `size` bytes (it was verified when written).
    pub fn has(&self, digest: &str, size: u64) -> bool {
        std::fs::symlink_metadata(self.path(digest)).is_ok_and(|m| m.is_file() && m.len() == size)
    }

    /// Start writing the blob `digest` of `size` bytes (what its descriptor declares).
    ///
    /// # Errors
    /// [`OciError::BlobTooLarge`] when `size` is more than the largest blob or the free space
    /// allows (nothing is created then); [`OciError::Io`] if the free space cannot be measured
    /// or the temporary file cannot be created.
    pub fn writer(&self, image: &str, digest: &str, size: u64) -> Result<BlobWriter, OciError> {
        self.writer_with(image, digest, size, Space::Statvfs)
    }

    fn writer_with(
        &self,
        image: &str,
        digest: &str,
        size: u64,
        space: Space,
    ) -> Result<BlobWriter, OciError> {
        let too_large = |limit: u64, bound: BlobBound| OciError::BlobTooLarge {
            image: image.to_string(),
            digest: digest.to_string(),
            declared: Some(size),
            limit,
            bound,
        };
        if size > self.max {
            return Err(too_large(self.max, BlobBound::MaxBlobBytes));
        }
        let available = space.available(&self.tmp).map_err(|source| OciError::Io {
            image: image.to_string(),
            action: "measuring the free space of",
            path: self.tmp.clone(),
            source,
        })?;
        let free_limit = available.saturating_sub(FREE_SPACE_MARGIN);
        if size > free_limit {
            return Err(too_large(
                free_limit,
                BlobBound::FreeSpace {
                    path: self.tmp.clone(),
                    available,
                    margin: FREE_SPACE_MARGIN,
                },
            ));
        }
        let temp = temp_path(&self.tmp, BLOB_STEM);
        let io = |action, source| OciError::Io {
            image: image.to_string(),
            action,
            path: temp.clone(),
            source,
        };
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| io("creating", e))?;
        let mut w = BlobWriter {
            image: image.to_string(),
            digest: digest.to_string(),
            size,
            max: self.max,
            free_limit,
            available,
            next_measure: FREE_SPACE_EVERY,
            space,
            tmp: self.tmp.clone(),
            written: 0,
            hasher: Sha256::new(),
            file: None,
            temp: temp.clone(),
            dest: self.path(digest),
        };
        // From here on the writer's drop removes the file, whatever fails.
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io("locking", e.into()))?;
        w.file = Some(file);
        Ok(w)
    }

    /// Remove the temporary blobs crashed writers left under `tmp/`: files no writer holds
    /// locked, unmodified for a minute. Best effort: what cannot be removed stays.
    pub fn remove_stale(&self) {
        let Ok(read) = std::fs::read_dir(&self.tmp) else {
            return;
        };
        let prefix = format!("{BLOB_STEM}.");
        for entry in read.flatten() {
            if !entry.file_name().to_string_lossy().starts_with(&prefix) {
                continue;
            }
            let path = entry.path();
            let old = entry
                .metadata()
                .ok()
                .filter(std::fs::Metadata::is_file)
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= STALE_AFTER);
            if !old {
                continue;
            }
            let Ok(file) = File::open(&path) else {
                continue;
            };
            if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                .is_ok()
            {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// How the free space of the cache's filesystem is known.
#[derive(Debug, Clone, Copy)]
enum Space {
    /// `statvfs(2)` of the directory: `f_bavail × f_frsize`.
    Statvfs,
    /// A fixed figure (tests).
    #[cfg(test)]
    Fixed(u64),
}

impl Space {
    fn available(self, dir: &Path) -> std::io::Result<u64> {
        match self {
            Self::Statvfs => {
                let s = rustix::fs::statvfs(dir)?;
                Ok(s.f_bavail.saturating_mul(s.f_frsize))
            }
            #[cfg(test)]
            Self::Fixed(n) => Ok(n),
        }
    }
}

/// A blob being written: hashed and counted as it goes; removed unless [`BlobWriter::commit`]
/// finds it verified.
pub struct BlobWriter {
    image: String,
    digest: String,
    size: u64,
    max: u64,
    /// The most the free space allows this blob (bytes written when measured, plus what was
    /// available then less the margin).
    free_limit: u64,
    /// What was available when last measured.
    available: u64,
    /// When (in bytes written) to measure again.
    next_measure: u64,
    space: Space,
    tmp: PathBuf,
    written: u64,
    hasher: Sha256,
    file: Option<File>,
    temp: PathBuf,
    dest: PathBuf,
}

impl BlobWriter {
    fn io(&self, action: &'static str, source: std::io::Error) -> OciError {
        OciError::Io {
            image: self.image.clone(),
            action,
            path: self.temp.clone(),
            source,
        }
    }

    /// The bytes written so far.
    #[cfg(test)]
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Append `chunk`; refuses at once, before writing it, a chunk that takes the blob past its
    /// descriptor's size, the largest blob or the free space.
    ///
    /// # Errors
    /// [`OciError::SizeMismatch`] past the size, [`OciError::BlobTooLarge`] past the largest
    /// blob or the free space, [`OciError::Io`] on a write error.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), OciError> {
        let total = self.written.saturating_add(chunk.len() as u64);
        if total > self.size {
            return Err(OciError::SizeMismatch {
                image: self.image.clone(),
                digest: self.digest.clone(),
                expected: self.size,
                found: format!("more than {}", self.size),
            });
        }
        if total > self.max {
            return Err(self.too_large(self.max, BlobBound::MaxBlobBytes));
        }
        if total > self.next_measure {
            let available = self
                .space
                .available(&self.tmp)
                .map_err(|e| self.io("measuring the free space for", e))?;
            self.available = available;
            self.free_limit = self
                .written
                .saturating_add(available.saturating_sub(FREE_SPACE_MARGIN));
            self.next_measure = total.saturating_add(FREE_SPACE_EVERY);
        }
        if total > self.free_limit {
            let bound = BlobBound::FreeSpace {
                path: self.tmp.clone(),
                available: self.available,
                margin: FREE_SPACE_MARGIN,
            };
            return Err(self.too_large(self.free_limit, bound));
        }
        self.hasher.update(chunk);
        self.written = total;
        let result = match self.file.as_mut() {
            Some(f) => f.write_all(chunk),
            None => Ok(()),
        };
        result.map_err(|e| self.io("writing", e))
    }

    fn too_large(&self, limit: u64, bound: BlobBound) -> OciError {
        OciError::BlobTooLarge {
            image: self.image.clone(),
            digest: self.digest.clone(),
            declared: None,
            limit,
            bound,
        }
    }

    /// The digest of what was written, as `sha256:<hex>`.
    pub fn found(&self) -> String {
        format!("sha256:{}", hex::encode(self.hasher.clone().finalize()))
    }

    /// Check the size and the digest and move the blob into place.
    ///
    /// # Errors
    /// [`OciError::SizeMismatch`], [`OciError::DigestMismatch`], or [`OciError::Io`]; in every
    /// case the temporary file is gone.
    pub fn commit(self) -> Result<PathBuf, OciError> {
        if self.written != self.size {
            return Err(OciError::SizeMismatch {
                image: self.image.clone(),
                digest: self.digest.clone(),
                expected: self.size,
                found: self.written.to_string(),
            });
        }
        let found = self.found();
        if found != self.digest {
            return Err(OciError::DigestMismatch {
                image: self.image.clone(),
                expected: self.digest.clone(),
                found,
            });
        }
        if let Some(file) = self.file.as_ref() {
            file.sync_all().map_err(|e| self.io("syncing", e))?;
            file.set_permissions(std::fs::Permissions::from_mode(0o444))
                .map_err(|e| self.io("setting the mode of", e))?;
        }
        // Renamed while still open and locked: no sweep can take it for a crashed writer's.
        std::fs::rename(&self.temp, &self.dest).map_err(|e| self.io("renaming into place", e))?;
        Ok(self.dest.clone())
    }
}

impl Drop for BlobWriter {
    fn drop(&mut self) {
        // After a successful commit the temporary name no longer exists.
        let _ = std::fs::remove_file(&self.temp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

    struct Store {
        _dir: tempfile::TempDir,
        blobs: Blobs,
        tmp: PathBuf,
    }

    fn store(max: u64) -> Store {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["blobs/sha256", "tmp"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        let tmp = dir.path().join("tmp");
        Store {
            blobs: Blobs::new(dir.path(), max),
            tmp,
            _dir: dir,
        }
    }

    /// The one temporary file's length (the writer's), if there is one.
    fn temp_len(tmp: &Path) -> Option<u64> {
        let files: Vec<_> = std::fs::read_dir(tmp)
            .expect("tmp")
            .flatten()
            .map(|e| e.metadata().expect("metadata").len())
            .collect();
        assert!(files.len() <= 1, "{files:?}");
        files.first().copied()
    }

    fn empty(tmp: &Path) -> bool {
        std::fs::read_dir(tmp).expect("tmp").next().is_none()
    }

    #[test]
    fn a_declared_size_past_the_largest_blob_or_the_free_space_is_refused_before_any_file() {
        let s = store(1 << 20);
        let err = s
            .blobs
            .writer("img", DIGEST, (1 << 20) + 1)
            .err()
            .expect("past the largest blob");
        assert!(
            matches!(
                &err,
                OciError::BlobTooLarge {
                    declared: Some(d),
                    limit,
                    bound: BlobBound::MaxBlobBytes,
                    ..
                } if *d == (1 << 20) + 1 && *limit == 1 << 20
            ),
            "{err}"
        );
        let shown = err.to_string();
        assert!(
            shown.contains(DIGEST) && shown.contains("max_blob_bytes") && shown.contains("img"),
            "{shown}"
        );
        assert!(empty(&s.tmp));

        let s = store(u64::MAX);
        let available = FREE_SPACE_MARGIN + 1000;
        let err = s
            .blobs
            .writer_with("img", DIGEST, 1001, Space::Fixed(available))
            .err()
            .expect("past the free space");
        assert!(
            matches!(
                &err,
                OciError::BlobTooLarge {
                    declared: Some(1001),
                    limit: 1000,
                    bound: BlobBound::FreeSpace { available: a, margin: FREE_SPACE_MARGIN, .. },
                    ..
                } if *a == available
            ),
            "{err}"
        );
        assert!(err.to_string().contains("free space"), "{err}");
        assert!(empty(&s.tmp));
    }

    #[test]
    fn a_blob_is_refused_before_the_chunk_that_passes_its_size_is_written() {
        let s = store(u64::MAX);
        let mut w = s.blobs.writer("img", DIGEST, 100).expect("writer");
        w.write(&[1; 60]).expect("within");
        let err = w.write(&[1; 41]).expect_err("past the descriptor's size");
        assert!(
            matches!(&err, OciError::SizeMismatch { expected: 100, .. }),
            "{err}"
        );
        assert_eq!(w.written(), 60);
        assert_eq!(
            temp_len(&s.tmp),
            Some(60),
            "the passing chunk is not written"
        );
        drop(w);
        assert!(empty(&s.tmp), "nothing of the refused blob stays");
    }

    #[test]
    fn a_blob_is_refused_as_soon_as_it_passes_the_free_space_measured_again_while_written() {
        let s = store(u64::MAX);
        let mut w = s
            .blobs
            .writer_with("img", DIGEST, 1 << 40, Space::Fixed(1 << 50))
            .expect("writer");
        // The filesystem fills up meanwhile: the next measure finds 1 KiB over the margin.
        w.space = Space::Fixed(FREE_SPACE_MARGIN + 1024);
        w.next_measure = 0;
        w.write(&[0; 1000]).expect("within the free space");
        let err = w.write(&[0; 25]).expect_err("past the free space");
        assert!(
            matches!(
                &err,
                OciError::BlobTooLarge {
                    declared: None,
                    limit: 1024,
                    bound: BlobBound::FreeSpace { .. },
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("more than 1024 bytes arrived"),
            "{err}"
        );
        assert_eq!(temp_len(&s.tmp), Some(1000));
        drop(w);
        assert!(empty(&s.tmp));
    }

    #[test]
    fn the_free_space_of_the_cache_is_measured_by_statvfs() {
        let s = store(u64::MAX);
        let available = Space::Statvfs.available(&s.tmp).expect("statvfs");
        assert!(available > 0);
        let w = s.blobs.writer("img", DIGEST, 1).expect("writer");
        assert!(w.free_limit <= available);
    }

    #[test]
    fn a_crashed_writers_file_is_removed_and_a_live_writers_is_not() {
        let s = store(u64::MAX);
        let live = s.blobs.writer("img", DIGEST, 10).expect("writer");
        let crashed = s.tmp.join("blob.1.2.3");
        std::fs::write(&crashed, b"half").expect("write");
        let old = std::time::SystemTime::now() - 2 * STALE_AFTER;
        for p in [&crashed, &live.temp] {
            File::options()
                .write(true)
                .open(p)
                .and_then(|f| f.set_modified(old))
                .expect("age it");
        }
        let fresh = s.tmp.join("blob.4.5.6");
        std::fs::write(&fresh, b"just created").expect("write");
        s.blobs.remove_stale();
        assert!(!crashed.exists(), "the crashed writer's file is gone");
        assert!(live.temp.exists(), "the live writer's file stays (locked)");
        assert!(fresh.exists(), "a file too recent to tell stays");
    }
}
