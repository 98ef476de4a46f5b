//! Where blobs come from: a registry through the OCI distribution API (`oci-client`,
//! anonymous, HTTPS unless the caller allows plain HTTP), or a local OCI image layout read
//! directly. Either way each blob goes through a [`BlobWriter`], which verifies it.

use std::io::Read;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::blobs::Blobs;
use crate::document::{Descriptor, MANIFEST_TYPES, MAX_DOCUMENT};
use crate::error::OciError;
use crate::types::Access;

/// How long a connection to a registry may take to open.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// How long a registry may stay silent in the middle of a response.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// The origin of one image's blobs.
pub enum Origin {
    /// A registry.
    Registry {
        /// The client (its protocol fixed by [`Access`]).
        client: Box<Client>,
        /// `registry/repository`, the digest being irrelevant for blobs.
        reference: Reference,
        /// `HTTPS` or `plain HTTP`, for errors.
        scheme: &'static str,
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
    /// [`OciError::Registry`] if the HTTP client cannot be built.
    pub fn registry(
        image: &str,
        registry: &str,
        repository: &str,
        digest: &str,
        access: Access,
    ) -> Result<Self, OciError> {
        let (protocol, scheme) = if access.plain_http {
            (ClientProtocol::Http, "plain HTTP")
        } else {
            (ClientProtocol::Https, "HTTPS")
        };
        let config = ClientConfig {
            protocol,
            // Indexes are resolved here, verified like every other blob.
            platform_resolver: None,
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(READ_TIMEOUT),
            ..ClientConfig::default()
        };
        let client = Client::try_from(config).map_err(|source| {
            OciError::registry(
                image,
                "nothing (the HTTP client could not be built)".into(),
                scheme,
                source,
            )
        })?;
        Ok(Self::Registry {
            client: Box::new(client),
            reference: Reference::with_digest(
                registry.to_string(),
                repository.to_string(),
                digest.to_string(),
            ),
            scheme,
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
            Self::Registry {
                client,
                reference,
                scheme,
            } => {
                let at = Reference::with_digest(
                    reference.registry().to_string(),
                    reference.repository().to_string(),
                    digest.to_string(),
                );
                match client
                    .pull_manifest_raw(&at, &RegistryAuth::Anonymous, &MANIFEST_TYPES)
                    .await
                {
                    Ok((bytes, _)) => bytes.to_vec(),
                    Err(OciDistributionError::DigestError(DigestError::VerificationError {
                        expected,
                        actual,
                    })) => {
                        return Err(OciError::DigestMismatch {
                            image: image.to_string(),
                            expected,
                            found: actual,
                        })
                    }
                    Err(source) => {
                        return Err(OciError::registry(
                            image,
                            format!("manifest {digest}"),
                            scheme,
                            source,
                        ))
                    }
                }
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
    /// [`OciError::DigestMismatch`], [`OciError::SizeMismatch`], or a transfer error; nothing
    /// of a refused blob stays in the store.
    pub async fn blob(&self, image: &str, blobs: &Blobs, d: &Descriptor) -> Result<u64, OciError> {
        if blobs.has(&d.digest, d.size) {
            return Ok(0);
        }
        let mut w = blobs.writer(image, &d.digest, d.size)?;
        match self {
            Self::Registry {
                client,
                reference,
                scheme,
            } => {
                let desc = OciDescriptor {
                    media_type: d.media_type.clone(),
                    digest: d.digest.clone(),
                    size: i64::try_from(d.size).unwrap_or(i64::MAX),
                    ..OciDescriptor::default()
                };
                let transfer = |source| {
                    OciError::registry(image, format!("blob {}", d.digest), scheme, source)
                };
                let mut stream = client
                    .pull_blob_stream(reference, &desc)
                    .await
                    .map_err(transfer)?;
                while let Some(chunk) = stream.next().await {
                    match chunk {
                        Ok(bytes) => w.write(&bytes)?,
                        // The client's own check of the digest ends the stream with an error
                        // once every byte arrived: report it as the store's own check would.
                        Err(_) if w.written() == d.size && w.found() != d.digest => {
                            return Err(OciError::DigestMismatch {
                                image: image.to_string(),
                                expected: d.digest.clone(),
                                found: w.found(),
                            })
                        }
                        Err(e) => return Err(transfer(OciDistributionError::IoError(e))),
                    }
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
