//! Where blobs come from: a registry through the OCI distribution API ([`RegistryClient`],
//! anonymous, HTTPS unless the caller allows plain HTTP, every request and redirect hop to an
//! origin the image's access admits), or a local OCI image layout read directly. Either way
//! each blob goes through a [`BlobWriter`](crate::blobs::BlobWriter), which verifies and bounds
//! it.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::blobs::Blobs;
use crate::document::{Descriptor, MANIFEST_TYPES, MAX_DOCUMENT};
use crate::error::OciError;
use crate::http::{Get, RegistryClient};
use crate::types::Access;

/// The origin of one image's blobs.
pub enum Origin {
    /// A registry.
    Registry {
        /// The client (its protocol and admitted origins fixed by [`Access`]).
        client: Box<RegistryClient>,
    },
    /// A local OCI image layout.
    Layout {
        /// Its directory.
        dir: PathBuf,
    },
}

impl Origin {
    /// A registry origin for `registry`/`repository`.
    ///
    /// # Errors
    /// [`OciError::BadAccess`] if `access` admits an origin it may not;
    /// [`OciError::Registry`] if the HTTP client cannot be built.
    pub fn registry(
        image: &str,
        registry: &str,
        repository: &str,
        access: &Access,
    ) -> Result<Self, OciError> {
        Ok(Self::Registry {
            client: Box::new(RegistryClient::new(image, registry, repository, access)?),
        })
    }

    /// A layout origin; the directory must hold `oci-layout`.
    ///
    /// # Errors
    /// [`OciError::Layout`] if it does not.
    pub fn layout(image: &str, dir: &Path) -> Result<Self, OciError> {
        let marker = dir.join("oci-layout");
        let text = std::fs::read_to_string(&marker).map_err(|e| OciError::Layout {
            image: image.to_string(),
            dir: dir.to_path_buf(),
            reason: format!("`oci-layout` cannot be read: {e}"),
        })?;
        let version = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("imageLayoutVersion")?.as_str().map(str::to_string));
        if version.is_none() {
            return Err(OciError::Layout {
                image: image.to_string(),
                dir: dir.to_path_buf(),
                reason: "`oci-layout` has no string `imageLayoutVersion`".into(),
            });
        }
        Ok(Self::Layout {
            dir: dir.to_path_buf(),
        })
    }

    /// Fetch the manifest (or index) `digest` into the store, verified; returns its bytes.
    ///
    /// # Errors
    /// [`OciError::DigestMismatch`] when the bytes lie, or a transfer error.
    pub async fn manifest(
        &self,
        image: &str,
        blobs: &Blobs,
        digest: &str,
    ) -> Result<(Vec<u8>, bool), OciError> {
        let path = blobs.path(digest);
        if let Ok(bytes) = std::fs::read(&path) {
            return Ok((bytes, false));
        }
        let bytes = match self {
            Self::Registry { client } => {
                let what = format!("manifest {digest}");
                let get = Get {
                    image,
                    what: &what,
                    path: format!("manifests/{digest}"),
                    accept: Some(MANIFEST_TYPES.join(", ")),
                };
                let mut response = client.get(&get).await?;
                let mut bytes = Vec::new();
                while let Some(chunk) = client.chunk(&get, &mut response).await? {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() as u64 > MAX_DOCUMENT {
                        break;
                    }
                }
                bytes
            }
            Self::Layout { dir } => {
                let file = layout_blob(dir, digest);
                let mut bytes = Vec::new();
                std::fs::File::open(&file)
                    .and_then(|f| f.take(MAX_DOCUMENT + 1).read_to_end(&mut bytes))
                    .map_err(|source| OciError::Io {
                        image: image.to_string(),
                        action: "reading the layout blob",
                        path: file.clone(),
                        source,
                    })?;
                bytes
            }
        };
        let size = bytes.len() as u64;
        if size > MAX_DOCUMENT {
            return Err(OciError::SizeMismatch {
                image: image.to_string(),
                digest: digest.to_string(),
                expected: MAX_DOCUMENT,
                found: format!("more than {MAX_DOCUMENT} (the largest manifest accepted)"),
            });
        }
        let mut w = blobs.writer(image, digest, size)?;
        w.write(&bytes)?;
        w.commit()?;
        Ok((bytes, true))
    }

    /// Fetch the blob `d` into the store, verified against its digest and size. Returns the
    /// number of bytes transferred (0 when it was already stored).
    ///
    /// # Errors
    /// [`OciError::DigestMismatch`], [`OciError::SizeMismatch`], [`OciError::BlobTooLarge`]
    /// (before any request when the descriptor declares too much), [`OciError::Refused`], or a
    /// transfer error; nothing of a refused blob stays in the store.
    pub async fn blob(&self, image: &str, blobs: &Blobs, d: &Descriptor) -> Result<u64, OciError> {
        if blobs.has(&d.digest, d.size) {
            return Ok(0);
        }
        // Bounded before any request: a declared size past a bound is refused here.
        let mut w = blobs.writer(image, &d.digest, d.size)?;
        match self {
            Self::Registry { client } => {
                let what = format!("blob {}", d.digest);
                let get = Get {
                    image,
                    what: &what,
                    path: format!("blobs/{}", d.digest),
                    accept: None,
                };
                let mut response = client.get(&get).await?;
                while let Some(chunk) = client.chunk(&get, &mut response).await? {
                    w.write(&chunk)?;
                }
            }
            Self::Layout { dir } => {
                let file = layout_blob(dir, &d.digest);
                let io = |source| OciError::Io {
                    image: image.to_string(),
                    action: "reading the layout blob",
                    path: file.clone(),
                    source,
                };
                let mut f = std::fs::File::open(&file).map_err(io)?;
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    let n = f.read(&mut buf).map_err(io)?;
                    if n == 0 {
                        break;
                    }
                    w.write(&buf[..n])?;
                }
            }
        }
        w.commit()?;
        Ok(d.size)
    }
}

/// A layout's blob file.
fn layout_blob(dir: &Path, digest: &str) -> PathBuf {
    dir.join("blobs")
        .join("sha256")
        .join(digest.strip_prefix("sha256:").unwrap_or(digest))
}
