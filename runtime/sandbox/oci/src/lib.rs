//! OCI images for the sandbox: fetched by digest, verified, unpacked, cached.
//!
//! A tool record's `endpoint.image` names an image pinned by the digest of its manifest
//! ([`escepine_contract::ImageRef`]): `host:port/name@sha256:…` in a registry (the OCI
//! distribution API, anonymous, HTTPS unless [`Access::plain_http`]), or
//! `oci:/layout/dir@sha256:…` in a local OCI image layout. [`ImageStore::ensure`] fetches
//! what the cache lacks — an index is resolved to this host's platform — verifies every blob
//! (index, manifest, config, layers) against its digest and size while writing it, unpacks
//! the layers (tar, tar+gzip, tar+zstd; OCI whiteouts) refusing whatever could reach outside
//! the root, and returns the unpacked root with the image config the sandbox needs. A second
//! `ensure` of a cached image makes no network request.
//!
//! ```no_run
//! # async fn f() -> Result<(), escepine_oci::OciError> {
//! use escepine_oci::{Access, ImageStore};
//! let image = escepine_contract::ImageRef::parse(
//!     "127.0.0.1:5000/mcp/python@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
//! ).expect("a pinned reference");
//! let store = ImageStore::open(ImageStore::default_root())?;
//! let unpacked = store.ensure(&image, Access { plain_http: true }).await?;
//! println!("{} fetched {} bytes", unpacked.rootfs.display(), unpacked.fetched.bytes);
//! # Ok(()) }
//! ```

mod blobs;
mod document;
mod error;
mod fetch;
mod store;
mod unpack;

use std::path::PathBuf;

pub use error::OciError;
pub use store::ImageStore;
pub use unpack::Limits;

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

/// What one [`ImageStore::ensure`] fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Blobs fetched (manifests, config, layers) that the cache did not hold.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
}

impl FetchStats {
    fn add(&mut self, new: bool, bytes: u64) {
        if new {
            self.blobs += 1;
            self.bytes += bytes;
        }
    }
}
