//! The images of a registry's tools, fetched, verified and unpacked when the runtime is built
//! (and by `escepine check`), never inside a call's timeout.
//!
//! Every distinct `endpoint.image` is ensured in an [`ImageStore`] (the content-addressed cache
//! shared by all runtimes on the machine): a cached image costs no request; plain HTTP is used
//! only for a registry the envelope lists as `http://host:port` (loopback only). The result is
//! one [`ToolImage`] per reference, which [`SandboxExecutor::with_image`] takes. The cache and the
//! OCI client are the sandbox's (`escepine_sandbox::cache`); which images, and over which
//! transport, is decided here, from the registry and its envelope.

use std::collections::BTreeMap;

use escepine_sandbox::cache::{Access, FetchStats, ImageStore, OciError};
use registry_build::{Envelope, Registry};

use crate::sandbox::{SandboxExecutor, ToolImage};

/// An image made ready for the sandboxes of the tools that name it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The image as the sandbox uses it.
    pub image: ToolImage,
    /// The tools that name it.
    pub tools: Vec<String>,
    /// What preparing it fetched (nothing when it was cached).
    pub fetched: FetchStats,
}

/// Why an image could not be made ready.
#[derive(Debug, thiserror::Error)]
#[error("the image `{image}` of `{tool}` cannot be used: {source}")]
pub struct ImagesError {
    /// The first tool naming it.
    pub tool: String,
    /// The reference.
    pub image: String,
    /// What failed.
    #[source]
    pub source: OciError,
}

/// Ensure every image the registry's tools name is in `store`, unpacked.
///
/// # Errors
/// The first image that cannot be fetched, verified or unpacked.
pub async fn prepare(
    registry: &Registry,
    store: &ImageStore,
) -> Result<Vec<Prepared>, ImagesError> {
    let mut by_ref: BTreeMap<String, (escepine_contract::ImageRef, Vec<String>)> = BTreeMap::new();
    for tool in registry.records() {
        if let Some(image) = &tool.endpoint().image {
            by_ref
                .entry(image.raw.clone())
                .or_insert_with(|| (image.clone(), Vec::new()))
                .1
                .push(tool.tool_id().to_string());
        }
    }
    let mut out = Vec::new();
    for (raw, (image, tools)) in by_ref {
        let (image, fetched) =
            ensure(&image, registry.envelope(), store)
                .await
                .map_err(|source| ImagesError {
                    tool: tools.first().cloned().unwrap_or_default(),
                    image: raw.clone(),
                    source,
                })?;
        out.push(Prepared {
            image,
            tools,
            fetched,
        });
    }
    Ok(out)
}

/// Ensure the one image `image` is in `store`, unpacked: over plain HTTP only when `envelope`
/// lists its registry as `http://host:port`, else HTTPS (a layout `oci:/dir` is read from
/// disk). What [`prepare`] does for each image, and `escepine import mcp --image` for its one.
///
/// # Errors
/// When the image cannot be fetched, verified or unpacked.
pub async fn ensure(
    image: &escepine_contract::ImageRef,
    envelope: Option<&Envelope>,
    store: &ImageStore,
) -> Result<(ToolImage, FetchStats), OciError> {
    let access = Access {
        plain_http: envelope.is_some_and(|e| e.plain_http(image)),
    };
    escepine_sandbox::cache::ensure(image, access, store).await
}

/// `executor` with every prepared image.
pub fn with_images(mut executor: SandboxExecutor, prepared: &[Prepared]) -> SandboxExecutor {
    for p in prepared {
        executor = executor.with_image(p.image.clone());
    }
    executor
}
