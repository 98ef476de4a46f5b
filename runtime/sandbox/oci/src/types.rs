//! What the store's callers pass and get back: how a registry is reached (and how large a blob
//! may be), an unpacked image, the part of its config the sandbox uses, and what a fetch cost.

use std::path::PathBuf;

/// The largest blob [`Access::default`] lets the store write: 4 GiB.
pub const DEFAULT_MAX_BLOB_BYTES: u64 = 4 << 30;

/// How a registry may be reached, and how large a blob of the image may be.
///
/// Every request of a fetch goes to an origin this admits: the registry's own (`https://`, or
/// `http://` with [`Access::plain_http`]), or one of [`Access::blob_hosts`]. A redirect is
/// followed only to such an origin, each hop checked like the first request, at most
/// [`MAX_REDIRECTS`](crate::MAX_REDIRECTS) hops; so is the token service a registry's
/// `WWW-Authenticate` challenge names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// Speak plain HTTP instead of HTTPS. Only when the caller says so: the deployment
    /// envelope marks a (loopback) registry `http://`.
    pub plain_http: bool,
    /// The other origins the registry may send the fetcher to (its blob storage, its token
    /// service): the envelope's `image_blob_hosts` for this registry. Empty: none.
    pub blob_hosts: Vec<BlobHost>,
    /// The largest blob written (bytes): a descriptor declaring more is refused before any byte
    /// is fetched. The envelope's `image_limits.max_blob_bytes`; [`DEFAULT_MAX_BLOB_BYTES`] by
    /// default.
    pub max_blob_bytes: u64,
}

impl Default for Access {
    /// HTTPS, no other origin, blobs up to [`DEFAULT_MAX_BLOB_BYTES`].
    fn default() -> Self {
        Self {
            plain_http: false,
            blob_hosts: Vec::new(),
            max_blob_bytes: DEFAULT_MAX_BLOB_BYTES,
        }
    }
}

/// An origin other than the registry's own that its redirects (or its token challenge) may
/// send the fetcher to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlobHost {
    /// `host[:port]` (no scheme, path or user information).
    pub authority: String,
    /// Plain HTTP instead of HTTPS; allowed only for a loopback host (127.0.0.0/8, `[::1]`,
    /// `localhost`), as the envelope's `http://` entries are.
    pub plain_http: bool,
}

impl BlobHost {
    /// An HTTPS origin `authority`.
    pub fn https(authority: impl Into<String>) -> Self {
        Self {
            authority: authority.into(),
            plain_http: false,
        }
    }

    /// A plain HTTP origin `authority` (loopback only).
    pub fn http(authority: impl Into<String>) -> Self {
        Self {
            authority: authority.into(),
            plain_http: true,
        }
    }
}

impl std::fmt::Display for BlobHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.plain_http { "http" } else { "https" };
        write!(f, "{scheme}://{}", self.authority)
    }
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
