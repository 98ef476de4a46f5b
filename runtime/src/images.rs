//! The images of a registry's tools, fetched, verified and unpacked when the runtime is built
//! (and by `escepine check`), never inside a call's timeout.
//!
//! Every distinct `endpoint.image` is ensured in an [`ImageStore`] (the content-addressed cache
//! shared by all runtimes on the machine): a cached image costs no request; plain HTTP is used
//! only for a registry the envelope lists as `http://host:port` (loopback only); a redirect is
//! followed only to the registry's own origin or a blob host the envelope's `image_blob_hosts`
//! lists for it; no blob larger than the envelope's `image_limits.max_blob_bytes` (4 GiB by
//! default) is written ([`access`]). The result is
//! one [`ToolImage`] per reference, which [`SandboxExecutor::with_image`] takes. The cache and the
//! OCI client are the sandbox's (`escepine_sandbox::cache`); which images, and over which
//! transport, is decided here, from the registry and its envelope.

use std::collections::BTreeMap;

use escepine_policy::BoundRegistry;
use escepine_registry::envelope::Envelope;
use escepine_registry::envelope::ImageSourceEntry;
use escepine_sandbox::cache::{
    Access, BlobHost, FetchStats, ImageStore, OciError, DEFAULT_MAX_BLOB_BYTES,
};

use crate::sandbox::SandboxExecutor;
use escepine_sandbox::ToolImage;

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
    registry: &BoundRegistry,
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

/// Ensure the one image `image` is in `store`, unpacked, as [`access`] allows (a layout
/// `oci:/dir` is read from disk). What [`prepare`] does for each image, and
/// `escepine import mcp --image` for its one.
///
/// # Errors
/// When the image cannot be fetched, verified or unpacked.
pub async fn ensure(
    image: &escepine_contract::ImageRef,
    envelope: Option<&Envelope>,
    store: &ImageStore,
) -> Result<(ToolImage, FetchStats), OciError> {
    escepine_sandbox::cache::ensure(image, access(image, envelope), store).await
}

/// How `image` is fetched under `envelope`: over plain HTTP only when it lists the registry as
/// `http://host:port`, else HTTPS; redirected (or sent for a token) only to the registry's own
/// origin or the blob hosts its `image_blob_hosts` lists for that registry; no blob larger than
/// its `image_limits.max_blob_bytes`, else 4 GiB. Without an envelope: HTTPS, no other origin,
/// 4 GiB.
pub fn access(image: &escepine_contract::ImageRef, envelope: Option<&Envelope>) -> Access {
    let Some(envelope) = envelope else {
        return Access::default();
    };
    Access {
        plain_http: envelope.plain_http(image),
        blob_hosts: envelope
            .blob_hosts(image)
            .iter()
            .filter_map(|host| match host {
                ImageSourceEntry::Https { registry } => Some(BlobHost::https(registry.clone())),
                ImageSourceEntry::Http { registry } => Some(BlobHost::http(registry.clone())),
                ImageSourceEntry::Layout { .. } => None,
            })
            .collect(),
        max_blob_bytes: envelope
            .image_limits
            .max_blob_bytes
            .unwrap_or(DEFAULT_MAX_BLOB_BYTES),
    }
}

/// `executor` with every prepared image.
pub fn with_images(mut executor: SandboxExecutor, prepared: &[Prepared]) -> SandboxExecutor {
    for p in prepared {
        executor = executor.with_image(p.image.clone());
    }
    executor
}

#[cfg(test)]
mod tests {
    use super::*;
    use escepine_registry::diagnostic::SourceFile;

    #[test]
    fn the_access_of_an_image_is_what_the_envelope_says_of_its_registry() {
        let envelope = Envelope::parse(&SourceFile::new(
            "envelope.json",
            serde_json::json!({
                "egress": [],
                "images": ["http://127.0.0.1:5000", "registry.example.com"],
                "image_blob_hosts": {"http://127.0.0.1:5000": ["http://127.0.0.1:5001", "127.0.0.1:5443"]},
                "image_limits": {"max_blob_bytes": 1048576},
            })
            .to_string(),
        ))
        .expect("a valid envelope");
        let image = |raw: &str| {
            escepine_contract::ImageRef::parse(&format!(
                "{raw}@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            ))
            .expect("a pinned reference")
        };
        assert_eq!(
            access(&image("127.0.0.1:5000/mcp/x"), Some(&envelope)),
            Access {
                plain_http: true,
                blob_hosts: vec![
                    BlobHost::http("127.0.0.1:5001"),
                    BlobHost::https("127.0.0.1:5443")
                ],
                max_blob_bytes: 1 << 20,
            }
        );
        assert_eq!(
            access(&image("registry.example.com/mcp/x"), Some(&envelope)),
            Access {
                max_blob_bytes: 1 << 20,
                ..Access::default()
            }
        );
        assert_eq!(
            access(&image("127.0.0.1:5000/mcp/x"), None),
            Access::default()
        );
        assert_eq!(Access::default().max_blob_bytes, 4 << 30);
    }
}
