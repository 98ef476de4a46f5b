//! The image cache: verified blobs shared by all images, unpacked images by manifest digest.
//!
//! ```text
//! <root>/                      0700
//!   blobs/sha256/<hex>         verified blobs (manifests, indexes, configs, layers), 0444
//!   images/<hex>/              one image per referenced digest
//!     rootfs/                  the unpacked root
//!     image.json               the manifest digest and the config the sandbox needs
//!     complete                 written last: the image is whole
//!   tmp/                       blobs being verified, images being unpacked
//!   locks/<hex>.lock           flock(LOCK_EX) while one image is fetched or unpacked
//! ```
//!
//! An image is unpacked under `tmp/` and renamed into `images/` once its marker is written, so
//! a crash never leaves a half-unpacked image that looks complete.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use escepine_contract::{ImageRef, ImageSource};

use crate::blobs::{temp_path, Blobs};
use crate::document::{host_platform, Document, Reader};
use crate::error::OciError;
use crate::fetch::Origin;
use crate::types::{Access, FetchStats, ImageConfig, Unpacked};
use crate::unpack::{compression_of, fsops, LayerSpec, Limits, Unpacker};

/// The metadata of an unpacked image, `images/<hex>/image.json`.
#[derive(serde::Serialize, serde::Deserialize)]
struct Meta {
    manifest_digest: String,
    config: ImageConfig,
    setid_stripped: u64,
}

/// A cache of verified blobs and unpacked images under one root directory.
#[derive(Debug, Clone)]
pub struct ImageStore {
    root: PathBuf,
    limits: Limits,
}

impl ImageStore {
    /// The cache under `root` (created 0700 if absent).
    ///
    /// # Errors
    /// [`OciError::Io`] if a directory of the cache cannot be created.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, OciError> {
        let root = root.into();
        for dir in [
            root.clone(),
            root.join("blobs").join("sha256"),
            root.join("images"),
            root.join("tmp"),
            root.join("locks"),
        ] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|source| OciError::Io {
                    image: String::new(),
                    action: "creating the image cache directory",
                    path: dir.clone(),
                    source,
                })?;
        }
        Ok(Self {
            root,
            limits: Limits::default(),
        })
    }

    /// The same store with other unpacking limits (the default: 4 GiB, two million entries).
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `$ESCEPINE_IMAGE_CACHE`, else `/var/cache/escepine/images` for root, else
    /// `$XDG_CACHE_HOME/escepine/images` / `~/.cache/escepine/images`.
    pub fn default_root() -> PathBuf {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(p) = var("ESCEPINE_IMAGE_CACHE") {
            return p;
        }
        if rustix::process::geteuid().is_root() {
            return PathBuf::from("/var/cache/escepine/images");
        }
        let base = var("XDG_CACHE_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").map(|h| h.join(".cache")))
            .unwrap_or_else(|| {
                std::env::temp_dir()
                    .join(format!("escepine-{}", rustix::process::geteuid().as_raw()))
            });
        base.join("escepine").join("images")
    }

    fn image_dir(&self, image: &ImageRef) -> PathBuf {
        self.root.join("images").join(image.digest_hex())
    }

    /// The image if it is fully cached (no network).
    ///
    /// # Errors
    /// [`OciError::CacheDamaged`] if the image's metadata cannot be read back.
    pub fn cached(&self, image: &ImageRef) -> Result<Option<Unpacked>, OciError> {
        let dir = self.image_dir(image);
        if !dir.join("complete").is_file() {
            return Ok(None);
        }
        let path = dir.join("image.json");
        let damaged = |reason: String| OciError::CacheDamaged {
            image: image.raw.clone(),
            path: path.clone(),
            reason,
        };
        let text = std::fs::read(&path).map_err(|e| damaged(e.to_string()))?;
        let meta: Meta = serde_json::from_slice(&text).map_err(|e| damaged(e.to_string()))?;
        Ok(Some(Unpacked {
            manifest_digest: meta.manifest_digest,
            rootfs: dir.join("rootfs"),
            config: meta.config,
            fetched: FetchStats::default(),
            setid_stripped: meta.setid_stripped,
        }))
    }

    /// The image unpacked, fetching and unpacking only what is not cached yet.
    ///
    /// A cached image is returned without any network request. Otherwise an exclusive lock on
    /// the image is taken (another runtime fetching the same image is waited for), the
    /// temporary blobs crashed writers left are removed, every blob missing from the cache is
    /// fetched (each request to an origin `access` admits) and verified, each bounded by
    /// [`Access::max_blob_bytes`] and the cache's free space, and the layers are unpacked.
    ///
    /// # Errors
    /// An [`OciError`] naming the image and what was refused or failed; a refused image leaves
    /// nothing under `images/` and no blob that failed its digest or a bound.
    pub async fn ensure(&self, image: &ImageRef, access: Access) -> Result<Unpacked, OciError> {
        if let Some(done) = self.cached(image)? {
            return Ok(done);
        }
        let _lock = self.lock(image).await?;
        // Another runtime may have finished it while this one waited.
        if let Some(done) = self.cached(image)? {
            return Ok(done);
        }
        let origin = match &image.source {
            ImageSource::Registry {
                registry,
                repository,
                ..
            } => Origin::registry(&image.raw, registry, repository, &access)?,
            ImageSource::Layout { dir } => Origin::layout(&image.raw, dir)?,
        };
        let blobs = Blobs::new(&self.root, access.max_blob_bytes);
        blobs.remove_stale();
        self.fetch_and_unpack(image, &origin, &blobs).await
    }

    async fn lock(&self, image: &ImageRef) -> Result<File, OciError> {
        let path = self
            .root
            .join("locks")
            .join(format!("{}.lock", image.digest_hex()));
        let raw = image.raw.clone();
        let task = tokio::task::spawn_blocking(move || {
            let io = |source| OciError::Io {
                image: raw.clone(),
                action: "locking",
                path: path.clone(),
                source,
            };
            let file = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(io)?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
                .map_err(|e| io(e.into()))?;
            Ok(file)
        });
        task.await.map_err(|e| OciError::Task {
            image: image.raw.clone(),
            reason: e.to_string(),
        })?
    }

    async fn fetch_and_unpack(
        &self,
        image: &ImageRef,
        origin: &Origin,
        blobs: &Blobs,
    ) -> Result<Unpacked, OciError> {
        let raw = image.raw.as_str();
        let reader = Reader { image: raw };
        let mut fetched = FetchStats::default();

        // The manifest, through an index when the reference names one.
        let (bytes, new) = origin.manifest(raw, blobs, &image.digest).await?;
        fetched.add(new, bytes.len() as u64);
        let mut manifest_digest = image.digest.clone();
        let mut document = reader.document(&image.digest, &bytes)?;
        if let Document::Index(entries) = &document {
            let chosen = reader.pick(&image.digest, entries, &host_platform())?;
            let (bytes, new) = origin.manifest(raw, blobs, &chosen.digest).await?;
            if bytes.len() as u64 != chosen.size {
                return Err(OciError::SizeMismatch {
                    image: raw.to_string(),
                    digest: chosen.digest.clone(),
                    expected: chosen.size,
                    found: bytes.len().to_string(),
                });
            }
            fetched.add(new, bytes.len() as u64);
            document = reader.document(&chosen.digest, &bytes)?;
            manifest_digest = chosen.digest;
        }
        let Document::Manifest { config, layers } = document else {
            return Err(OciError::BadDocument {
                image: raw.to_string(),
                kind: "index",
                digest: manifest_digest,
                pointer: "/manifests".into(),
                reason: "the chosen entry is itself an index".into(),
            });
        };

        // The config and the layers, each verified.
        if config.size > crate::document::MAX_DOCUMENT {
            return Err(OciError::SizeMismatch {
                image: raw.to_string(),
                digest: config.digest.clone(),
                expected: config.size,
                found: "nothing (larger than the largest config accepted)".into(),
            });
        }
        let n = origin.blob(raw, blobs, &config).await?;
        fetched.add(n > 0, n);
        let config_path = blobs.path(&config.digest);
        let config_bytes = std::fs::read(&config_path).map_err(|source| OciError::Io {
            image: raw.to_string(),
            action: "reading",
            path: config_path.clone(),
            source,
        })?;
        let (image_config, diff_ids) = reader.config(&config.digest, &config_bytes)?;
        if diff_ids.len() != layers.len() {
            return Err(OciError::BadDocument {
                image: raw.to_string(),
                kind: "config",
                digest: config.digest.clone(),
                pointer: "/rootfs/diff_ids".into(),
                reason: format!(
                    "{} diff_ids for the manifest's {} layers",
                    diff_ids.len(),
                    layers.len()
                ),
            });
        }
        let mut specs = Vec::with_capacity(layers.len());
        for layer in &layers {
            let compression =
                compression_of(&layer.media_type).ok_or_else(|| OciError::UnsupportedLayer {
                    image: raw.to_string(),
                    layer: layer.digest.clone(),
                    media_type: layer.media_type.clone(),
                })?;
            let n = origin.blob(raw, blobs, layer).await?;
            fetched.add(n > 0, n);
            specs.push((layer.digest.clone(), compression, blobs.path(&layer.digest)));
        }

        // Unpack off the async threads, into a staging directory renamed into place.
        let store = self.clone();
        let image_owned = image.clone();
        let config_owned = image_config.clone();
        let digest_owned = manifest_digest.clone();
        let setid = tokio::task::spawn_blocking(move || {
            store.unpack(
                &image_owned,
                &digest_owned,
                &config_owned,
                &specs,
                &diff_ids,
            )
        })
        .await
        .map_err(|e| OciError::Task {
            image: raw.to_string(),
            reason: e.to_string(),
        })??;
        Ok(Unpacked {
            manifest_digest,
            rootfs: self.image_dir(image).join("rootfs"),
            config: image_config,
            fetched,
            setid_stripped: setid,
        })
    }

    fn unpack(
        &self,
        image: &ImageRef,
        manifest_digest: &str,
        config: &ImageConfig,
        layers: &[(String, crate::unpack::Compression, PathBuf)],
        diff_ids: &[String],
    ) -> Result<u64, OciError> {
        let raw = image.raw.as_str();
        let tmp = self.root.join("tmp");
        let io = |action: &'static str, path: &Path, source: std::io::Error| OciError::Io {
            image: raw.to_string(),
            action,
            path: path.to_path_buf(),
            source,
        };
        // What a crashed run of this image left (the lock is held: nobody else is in there).
        let stem = format!("image-{}", image.digest_hex());
        if let Ok(read) = std::fs::read_dir(&tmp) {
            for e in read.flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{stem}."))
                {
                    fsops::remove_tree(&e.path())
                        .map_err(|err| io("removing the stale", &e.path(), err))?;
                }
            }
        }
        let staging = temp_path(&tmp, &stem);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&staging)
            .map_err(|e| io("creating", &staging, e))?;
        let result = (|| {
            let rootfs = staging.join("rootfs");
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&rootfs)
                .map_err(|e| io("creating", &rootfs, e))?;
            let mut unpacker = Unpacker::new(raw, &rootfs, self.limits)?;
            for ((digest, compression, blob), diff_id) in layers.iter().zip(diff_ids) {
                unpacker.apply(&LayerSpec {
                    digest,
                    compression: *compression,
                    blob,
                    diff_id,
                })?;
            }
            let stats = unpacker.finish()?;
            let meta = Meta {
                manifest_digest: manifest_digest.to_string(),
                config: config.clone(),
                setid_stripped: stats.setid_stripped,
            };
            let meta_path = staging.join("image.json");
            let text = serde_json::to_vec_pretty(&meta)
                .map_err(|e| io("writing", &meta_path, e.into()))?;
            std::fs::write(&meta_path, text).map_err(|e| io("writing", &meta_path, e))?;
            let marker = staging.join("complete");
            std::fs::write(&marker, b"").map_err(|e| io("writing", &marker, e))?;
            std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| io("setting the mode of", &staging, e))?;
            let dest = self.image_dir(image);
            // A directory without its marker is not an image (nothing renames one there).
            if dest.exists() {
                fsops::remove_tree(&dest).map_err(|e| io("removing the incomplete", &dest, e))?;
            }
            std::fs::rename(&staging, &dest).map_err(|e| io("renaming into place", &dest, e))?;
            Ok(stats.setid_stripped)
        })();
        if result.is_err() {
            let _ = fsops::remove_tree(&staging);
        }
        result
    }
}
