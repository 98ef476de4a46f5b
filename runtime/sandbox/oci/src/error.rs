//! Why an image cannot be fetched, verified, unpacked or read from the cache.
//!
//! Every variant names the image (as the record wrote it) and, where there is one, the blob
//! digest, the layer and the entry path concerned.

use std::path::PathBuf;

/// An image that cannot be made available.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// A file or directory of the cache (or of a layout) could not be read or written.
    #[error("image `{image}`: {action} `{}`: {source}", path.display())]
    Io {
        /// The image reference.
        image: String,
        /// What was being done (`creating`, `reading`, …).
        action: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An `oci:` layout directory that is not an OCI image layout.
    #[error("image `{image}`: `{}` is not an OCI image layout: {reason}", dir.display())]
    Layout {
        /// The image reference.
        image: String,
        /// The layout directory.
        dir: PathBuf,
        /// What is missing or wrong.
        reason: String,
    },
    /// The registry could not be reached or refused a request.
    #[error("image `{image}`: fetching {what} over {scheme} failed: {detail}")]
    Registry {
        /// The image reference.
        image: String,
        /// The manifest or blob (`blob sha256:…`, `manifest sha256:…`).
        what: String,
        /// `HTTPS`, or `plain HTTP` when the caller allowed it.
        scheme: &'static str,
        /// The client's error with its causes, and a hint for HTTPS.
        detail: String,
        /// The client's error.
        #[source]
        source: Box<RegistryError>,
    },
    /// The registry sent the fetcher (by a redirect, or by the token service its challenge
    /// names) where the image's access does not admit; nothing was requested there.
    #[error(
        "image `{image}`: fetching {what} is refused: {via} {reason}; nothing was requested there"
    )]
    Refused {
        /// The image reference.
        image: String,
        /// The manifest or blob (`blob sha256:…`, `manifest sha256:…`).
        what: String,
        /// How the registry sent it there (`the registry redirected to`, …).
        via: &'static str,
        /// The rule broken.
        reason: Box<Refusal>,
    },
    /// A blob larger than a bound of the store: refused before it is fetched when its
    /// descriptor declares more, else as soon as the bytes received pass the bound. (A blob
    /// longer than its own descriptor is a [`OciError::SizeMismatch`].)
    #[error(
        "image `{image}`: blob {digest} is refused: {}, more than the {limit} bytes {bound} \
         allows; nothing of it was cached",
        declared.map_or_else(|| format!("more than {limit} bytes arrived"), |d| format!("its descriptor declares {d} bytes"))
    )]
    BlobTooLarge {
        /// The image reference.
        image: String,
        /// The blob's digest.
        digest: String,
        /// The descriptor's size when the blob was refused before any byte was fetched; `None`
        /// when it was refused while it was being received.
        declared: Option<u64>,
        /// The bound passed, in bytes.
        limit: u64,
        /// Which bound.
        bound: BlobBound,
    },
    /// The image's access names an origin that cannot be admitted (plain HTTP off loopback, a
    /// blob host that is not `host[:port]`).
    #[error("image `{image}`: the access to its registry is refused: {reason}")]
    BadAccess {
        /// The image reference.
        image: String,
        /// What is wrong.
        reason: String,
    },
    /// A blob whose content does not hash to the digest that names it.
    #[error(
        "image `{image}`: blob {expected} is refused: its content has digest {found} \
         (expected {expected}); nothing of it was cached"
    )]
    DigestMismatch {
        /// The image reference.
        image: String,
        /// The digest the descriptor (or the reference) names.
        expected: String,
        /// The digest of the bytes received.
        found: String,
    },
    /// A blob longer or shorter than its descriptor says.
    #[error(
        "image `{image}`: blob {digest} is refused: its descriptor says {expected} bytes, \
         {found} were received; nothing of it was cached"
    )]
    SizeMismatch {
        /// The image reference.
        image: String,
        /// The blob's digest.
        digest: String,
        /// The descriptor's size.
        expected: u64,
        /// What was received (`more than N` when the transfer was cut short).
        found: String,
    },
    /// A manifest, index or config that is not what the OCI image spec describes.
    #[error("image `{image}`: {kind} {digest} at `{pointer}`: {reason}")]
    BadDocument {
        /// The image reference.
        image: String,
        /// `manifest`, `index` or `config`.
        kind: &'static str,
        /// The document's digest.
        digest: String,
        /// The JSON pointer of the offending value (`` for the whole document).
        pointer: String,
        /// The rule broken.
        reason: String,
    },
    /// An image index with no manifest for this host's platform.
    #[error("image `{image}`: index {digest} has no manifest for {platform} (it lists: {listed})")]
    NoPlatform {
        /// The image reference.
        image: String,
        /// The index's digest.
        digest: String,
        /// The platform looked for, `linux/amd64`.
        platform: String,
        /// The platforms the index lists.
        listed: String,
    },
    /// A layer whose media type is not a tar, tar+gzip or tar+zstd layer.
    #[error("image `{image}`: layer {layer} has media type `{media_type}`, which is not a tar, tar+gzip or tar+zstd layer")]
    UnsupportedLayer {
        /// The image reference.
        image: String,
        /// The layer's digest.
        layer: String,
        /// Its media type.
        media_type: String,
    },
    /// A layer entry the unpacker refuses (path traversal, a link leaving the root, a device
    /// node, …). The whole image is refused.
    #[error("image `{image}`: layer {layer}, entry `{entry}` is refused: {reason}")]
    UnsafeEntry {
        /// The image reference.
        image: String,
        /// The layer's digest.
        layer: String,
        /// The entry's path as the layer writes it.
        entry: String,
        /// The rule broken.
        reason: String,
    },
    /// A layer entry that could not be read or written.
    #[error("image `{image}`: layer {layer}, entry `{entry}`: {source}")]
    LayerIo {
        /// The image reference.
        image: String,
        /// The layer's digest.
        layer: String,
        /// The entry's path (empty when the layer stream itself failed).
        entry: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A layer whose uncompressed content does not hash to the config's `rootfs.diff_ids`.
    #[error("image `{image}`: layer {layer} is refused: its uncompressed content has digest {found}, the config's diff_id is {expected}")]
    DiffIdMismatch {
        /// The image reference.
        image: String,
        /// The layer's digest.
        layer: String,
        /// The config's diff_id.
        expected: String,
        /// The digest of the uncompressed stream.
        found: String,
    },
    /// The image unpacks to more than the store's limit.
    #[error("image `{image}`: layer {layer} is refused: the unpacked image would exceed {limit} bytes (entry `{entry}`)")]
    TooLarge {
        /// The image reference.
        image: String,
        /// The layer being unpacked.
        layer: String,
        /// The entry that crossed the limit.
        entry: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// A cached image whose metadata cannot be read back.
    #[error("image `{image}`: the cached image at `{}` is damaged: {reason}", path.display())]
    CacheDamaged {
        /// The image reference.
        image: String,
        /// The cached image's metadata file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A blocking task of the store stopped unexpectedly.
    #[error("image `{image}`: the unpacking task failed: {reason}")]
    Task {
        /// The image reference.
        image: String,
        /// Why.
        reason: String,
    },
}

/// Which bound a blob passed ([`OciError::BlobTooLarge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobBound {
    /// [`Access::max_blob_bytes`](crate::Access::max_blob_bytes): the envelope's
    /// `image_limits.max_blob_bytes`, 4 GiB by default.
    MaxBlobBytes,
    /// The free space of the cache's filesystem, less a margin.
    FreeSpace {
        /// The directory measured (the cache's `tmp/`).
        path: PathBuf,
        /// The bytes available to the store when measured (`statvfs`: `f_bavail × f_frsize`).
        available: u64,
        /// The margin left free.
        margin: u64,
    },
}

impl std::fmt::Display for BlobBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MaxBlobBytes => f.write_str(
                "the largest blob (`image_limits.max_blob_bytes` of the envelope, 4 GiB by default)",
            ),
            Self::FreeSpace {
                path,
                available,
                margin,
            } => write!(
                f,
                "the free space of the image cache's filesystem (`{}`: {available} bytes \
                 available, less a margin of {margin})",
                path.display()
            ),
        }
    }
}

/// Why a URL the registry sent the fetcher to is not requested ([`OciError::Refused`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// An origin neither the registry's own nor one of the blob hosts listed for it.
    #[error(
        "`{url}`, whose origin {origin} is neither the registry's own nor a blob host the \
         envelope lists for it in `image_blob_hosts` (admitted: {admitted})"
    )]
    NotAdmitted {
        /// The URL (its query left out).
        url: String,
        /// Its origin, `scheme://host:port`.
        origin: String,
        /// The origins admitted, comma-separated.
        admitted: String,
    },
    /// A URL carrying a user name or password.
    #[error("`{url}`, which carries user information")]
    UserInfo {
        /// The URL (its user information and query left out).
        url: String,
    },
    /// A URL that does not parse.
    #[error("`{url}`, which is not a URL: {reason}")]
    NotUrl {
        /// The text.
        url: String,
        /// Why.
        reason: String,
    },
    /// More redirects than allowed in one request.
    #[error("`{url}` after {max} redirects already (at most {max} are followed)")]
    TooManyRedirects {
        /// The URL of the hop refused (its query left out).
        url: String,
        /// The most followed.
        max: usize,
    },
}

/// What failed between the fetcher and a registry ([`OciError::Registry`]).
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The HTTP client failed (connection, TLS, timeout, a broken body).
    #[error("{0}")]
    Http(#[source] reqwest::Error),
    /// The registry (or a blob host) answered with an error status.
    #[error("`{url}` answered {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Status {
        /// The URL requested (its query left out).
        url: String,
        /// The status code.
        status: u16,
        /// The start of the answer's body.
        body: String,
    },
    /// The token service of the registry's challenge gave no usable token.
    #[error("the token service `{url}`: {reason}")]
    Token {
        /// The token service's URL (its query left out).
        url: String,
        /// What was wrong.
        reason: String,
    },
}

impl OciError {
    /// A registry error, its causes spelled out.
    pub(crate) fn registry(
        image: &str,
        what: String,
        scheme: &'static str,
        source: RegistryError,
    ) -> Self {
        let mut detail = source.to_string();
        let mut cause = std::error::Error::source(&source);
        while let Some(c) = cause {
            let text = c.to_string();
            if !detail.contains(&text) {
                detail.push_str(": ");
                detail.push_str(&text);
            }
            cause = c.source();
        }
        if scheme == "HTTPS" {
            detail.push_str(
                " (plain HTTP is spoken only to a registry the deployment envelope marks `http://`)",
            );
        }
        Self::Registry {
            image: image.to_string(),
            what,
            scheme,
            detail,
            source: Box::new(source),
        }
    }
}
