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
//! What the [`Access`] admits bounds the fetch: every request goes to the registry's own origin
//! or to one of its [`Access::blob_hosts`] — a redirect elsewhere, or past [`MAX_REDIRECTS`]
//! hops, is refused before anything is sent there ([`OciError::Refused`]) — and every blob is
//! bounded while it is written by its descriptor's size, [`Access::max_blob_bytes`] (4 GiB by
//! default) and the free space of the cache's filesystem ([`OciError::BlobTooLarge`]).
//!
//! ```no_run
//! # async fn f() -> Result<(), escepine_oci::OciError> {
//! use escepine_oci::{Access, ImageStore};
//! let image = escepine_contract::ImageRef::parse(
//!     "127.0.0.1:5000/mcp/python@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
//! ).expect("a pinned reference");
//! let store = ImageStore::open(ImageStore::default_root())?;
//! let access = Access { plain_http: true, ..Access::default() };
//! let unpacked = store.ensure(&image, access).await?;
//! println!("{} fetched {} bytes", unpacked.rootfs.display(), unpacked.fetched.bytes);
//! # Ok(()) }
//! ```

mod blobs;
mod document;
mod error;
mod fetch;
mod http;
mod store;
mod types;
mod unpack;

pub use blobs::{FREE_SPACE_EVERY, FREE_SPACE_MARGIN};
pub use error::{BlobBound, OciError, Refusal, RegistryError};
pub use http::MAX_REDIRECTS;
pub use store::ImageStore;
pub use types::{Access, BlobHost, FetchStats, ImageConfig, Unpacked, DEFAULT_MAX_BLOB_BYTES};
pub use unpack::Limits;
