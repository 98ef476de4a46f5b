//! What the store's callers pass and get back: how a registry is reached, an unpacked image,
//! the part of its config the sandbox uses, and what a fetch cost.

use std::path::PathBuf;

/// How a registry may be reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Access {
    /// Speak plain HTTP instead of HTTPS. Only when the caller says so: the deployment
    /// envelope marks a (loopback) registry `http://`.
    pub plain_http: bool,
}

/// An image unpacked in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    /// The digest of the image manifest unpacked (`sha256:…`); the platform's manifest when
    /// the reference names an index.
    pub manifest_digest: String,
    /// The unpacked root directory. Nothing in it is writable by group or other; it belongs
    /// to the user that unpacked it.
    pub rootfs: PathBuf,
    /// What the image config says to run.
    pub config: ImageConfig,
    /// What this call fetched (zero when the image was cached).
    pub fetched: FetchStats,
    /// Entries whose set-uid or set-gid bit was stripped when the image was unpacked.
    pub setid_stripped: u64,
}

/// The part of an image config the sandbox uses (`config.{Entrypoint, Cmd, Env, WorkingDir,
/// User}`); empty strings read as absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageConfig {
    /// `Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `Cmd`.
    pub cmd: Vec<String>,
    /// `Env`, split at the first `=`.
    pub env: Vec<(String, String)>,
    /// `WorkingDir`.
    pub working_dir: Option<String>,
    /// `User`.
    pub user: Option<String>,
}

/// What one [`ImageStore::ensure`](crate::ImageStore::ensure) fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Blobs fetched (manifests, config, layers) that the cache did not hold.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
}

impl FetchStats {
    pub(crate) fn add(&mut self, new: bool, bytes: u64) {
        if new {
            self.blobs += 1;
            self.bytes += bytes;
        }
    }
}
