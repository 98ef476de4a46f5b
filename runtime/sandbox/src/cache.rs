//! OCI images as sandbox roots: an image fetched, verified and unpacked into the shared
//! content-addressed cache ([`ImageStore`], from `escepine-oci`), made a [`ToolImage`].
//!
//! Which images a registry needs, and over which transport, is the runtime's to decide; this
//! module turns one reference into what the sandbox runs on.

pub use escepine_oci::{
    Access, BlobHost, FetchStats, ImageStore, OciError, Unpacked, DEFAULT_MAX_BLOB_BYTES,
};

use escepine_contract::ImageRef;

use crate::ToolImage;

/// Ensure `image` is in `store`, unpacked (over plain HTTP only with `access.plain_http`, each
/// request to an origin `access` admits, each blob bounded by `access.max_blob_bytes`; a layout
/// `oci:/dir` read from disk), and the [`ToolImage`] the sandbox runs on; with what was fetched
/// (nothing when it was cached).
///
/// # Errors
/// When the image cannot be fetched, verified or unpacked.
pub async fn ensure(
    image: &ImageRef,
    access: Access,
    store: &ImageStore,
) -> Result<(ToolImage, FetchStats), OciError> {
    let unpacked = store.ensure(image, access).await?;
    let config = unpacked.config;
    Ok((
        ToolImage {
            reference: image.raw.clone(),
            rootfs: unpacked.rootfs,
            entrypoint: config.entrypoint,
            cmd: config.cmd,
            env: config.env,
            working_dir: config.working_dir,
        },
        unpacked.fetched,
    ))
}
