//! The content-addressed blob store: `<root>/blobs/sha256/<hex>`, each file verified against
//! its digest and its descriptor's size while it was written, then renamed into place.
//!
//! A blob is written to a temporary file under `<root>/tmp/`, hashed as it is written, and
//! renamed to its digest's name only when the digest and the size match; on any mismatch the
//! temporary file is removed, so nothing of a lying blob stays in the cache.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::error::OciError;

/// The blob directory and the staging directory of a store.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
    tmp: PathBuf,
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
    /// The store's blobs under `root`.
    pub fn new(root: &Path) -> Self {
        Self {
            dir: root.join("blobs").join("sha256"),
            tmp: root.join("tmp"),
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

    /// Start writing the blob `digest` of `size` bytes.
    ///
    /// # Errors
    /// [`OciError::Io`] if the temporary file cannot be created.
    pub fn writer(&self, image: &str, digest: &str, size: u64) -> Result<BlobWriter, OciError> {
        let temp = temp_path(&self.tmp, "blob");
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|source| OciError::Io {
                image: image.to_string(),
                action: "creating",
                path: temp.clone(),
                source,
            })?;
        Ok(BlobWriter {
            image: image.to_string(),
            digest: digest.to_string(),
            size,
            written: 0,
            hasher: Sha256::new(),
            file: Some(file),
            temp,
            dest: self.path(digest),
        })
    }
}

/// A blob being written: hashed and counted as it goes; removed unless [`BlobWriter::commit`]
/// finds it verified.
pub struct BlobWriter {
    image: String,
    digest: String,
    size: u64,
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
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Append `chunk`; refuses at once a blob growing past its descriptor's size.
    ///
    /// # Errors
    /// [`OciError::SizeMismatch`] past the size, [`OciError::Io`] on a write error.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), OciError> {
        let len = chunk.len() as u64;
        if self.written.saturating_add(len) > self.size {
            return Err(OciError::SizeMismatch {
                image: self.image.clone(),
                digest: self.digest.clone(),
                expected: self.size,
                found: format!("more than {}", self.size),
            });
        }
        self.hasher.update(chunk);
        self.written += len;
        let result = match self.file.as_mut() {
            Some(f) => f.write_all(chunk),
            None => Ok(()),
        };
        result.map_err(|e| self.io("writing", e))
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
    pub fn commit(mut self) -> Result<PathBuf, OciError> {
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
        if let Some(file) = self.file.take() {
            file.sync_all().map_err(|e| self.io("syncing", e))?;
            file.set_permissions(std::fs::Permissions::from_mode(0o444))
                .map_err(|e| self.io("setting the mode of", e))?;
        }
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
