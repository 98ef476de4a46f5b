//! OCI images built by tests: layers from files of the host or from entries written in the
//! test (hostile ones included), gzip, zstd or plain tar, a config, written as an OCI image
//! layout directory; and (feature `push`) such a layout pushed to a registry.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// How a layer is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// `application/vnd.oci.image.layer.v1.tar`.
    None,
    /// `application/vnd.oci.image.layer.v1.tar+gzip`.
    Gzip,
    /// `application/vnd.oci.image.layer.v1.tar+zstd`.
    Zstd,
}

impl Compression {
    /// The OCI media type of a layer so compressed.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::None => "application/vnd.oci.image.layer.v1.tar",
            Self::Gzip => "application/vnd.oci.image.layer.v1.tar+gzip",
            Self::Zstd => "application/vnd.oci.image.layer.v1.tar+zstd",
        }
    }

    fn compress(self, tar: &[u8]) -> io::Result<Vec<u8>> {
        match self {
            Self::None => Ok(tar.to_vec()),
            Self::Gzip => {
                let mut enc =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                enc.write_all(tar)?;
                enc.finish()
            }
            Self::Zstd => Ok(ruzstd::encoding::compress_to_vec(
                tar,
                ruzstd::encoding::CompressionLevel::Fastest,
            )),
        }
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// One layer's entries, in order. Each method appends one entry; the first error is kept and
/// reported when the image is written.
pub struct Layer {
    tar: tar::Builder<Vec<u8>>,
    compression: Compression,
    error: Option<io::Error>,
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(0);
    h
}

impl Layer {
    /// An empty layer.
    pub fn new(compression: Compression) -> Self {
        Self {
            tar: tar::Builder::new(Vec::new()),
            compression,
            error: None,
        }
    }

    fn keep(mut self, r: io::Result<()>) -> Self {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
        self
    }

    /// A regular file at `path` holding `data`, with `mode`.
    pub fn file(mut self, path: &str, data: impl AsRef<[u8]>, mode: u32) -> Self {
        let data = data.as_ref();
        let mut h = header(tar::EntryType::Regular, mode, data.len() as u64);
        let r = self.tar.append_data(&mut h, path, data);
        self.keep(r)
    }

    /// A directory at `path` with `mode`.
    pub fn dir(mut self, path: &str, mode: u32) -> Self {
        let mut h = header(tar::EntryType::Directory, mode, 0);
        let r = self.tar.append_data(&mut h, path, io::empty());
        self.keep(r)
    }

    /// A symbolic link at `path` to `target` (written as given, `..` and absolute included).
    pub fn symlink(mut self, path: &str, target: &str) -> Self {
        let mut h = header(tar::EntryType::Symlink, 0o777, 0);
        let r = self.tar.append_link(&mut h, path, target);
        self.keep(r)
    }

    /// A hard link at `path` to the earlier entry `target` (written as given).
    pub fn hardlink(mut self, path: &str, target: &str) -> Self {
        let mut h = header(tar::EntryType::Link, 0o644, 0);
        let r = self.tar.append_link(&mut h, path, target);
        self.keep(r)
    }

    /// A whiteout: `<dir>/.wh.<name>` removes `<dir>/<name>` of lower layers.
    pub fn whiteout(self, path: &str) -> Self {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let wh = if dir.is_empty() {
            format!(".wh.{name}")
        } else {
            format!("{dir}/.wh.{name}")
        };
        self.file(&wh, b"", 0o644)
    }

    /// An opaque marker: `<dir>/.wh..wh..opq` hides what lower layers put in `dir`.
    pub fn opaque(self, dir: &str) -> Self {
        self.file(&format!("{dir}/.wh..wh..opq"), b"", 0o644)
    }

    /// Any entry with its name written byte for byte (no check: `../x` and absolute paths
    /// pass), its type, mode, link name and content.
    pub fn raw(
        mut self,
        name: &[u8],
        kind: tar::EntryType,
        mode: u32,
        link: &[u8],
        data: &[u8],
    ) -> Self {
        let mut h = header(kind, mode, data.len() as u64);
        let r = (|| {
            let old = h.as_old_mut();
            if name.len() > old.name.len() || link.len() > old.linkname.len() {
                return Err(io::Error::other(
                    "a raw entry's name or link is longer than 100 bytes",
                ));
            }
            old.name[..name.len()].copy_from_slice(name);
            old.linkname[..link.len()].copy_from_slice(link);
            h.set_cksum();
            self.tar.append(&h, data)
        })();
        self.keep(r)
    }

    /// A file of the host (content and permission bits) at `path` in the image.
    pub fn host_file(self, host: impl AsRef<Path>, path: &str) -> Self {
        let host = host.as_ref();
        match std::fs::read(host)
            .and_then(|d| Ok((d, std::fs::metadata(host)?.permissions().mode())))
        {
            Ok((data, mode)) => self.file(path, data, mode & 0o7777),
            Err(e) => self.keep(Err(io::Error::new(
                e.kind(),
                format!("{}: {e}", host.display()),
            ))),
        }
    }

    /// A directory tree of the host at `path` in the image: directories, files (content and
    /// permission bits) and symbolic links (as links), in a stable order.
    pub fn host_tree(mut self, host: impl AsRef<Path>, path: &str) -> Self {
        let host = host.as_ref().to_path_buf();
        let mut stack = vec![(host, path.trim_end_matches('/').to_string())];
        while let Some((h, p)) = stack.pop() {
            let meta = match std::fs::symlink_metadata(&h) {
                Ok(m) => m,
                Err(e) => {
                    return self.keep(Err(io::Error::new(
                        e.kind(),
                        format!("{}: {e}", h.display()),
                    )))
                }
            };
            let ft = meta.file_type();
            if ft.is_symlink() {
                match std::fs::read_link(&h) {
                    Ok(t) => self = self.symlink(&p, &t.to_string_lossy()),
                    Err(e) => return self.keep(Err(e)),
                }
            } else if ft.is_dir() {
                if !p.is_empty() {
                    self = self.dir(&p, meta.permissions().mode() & 0o7777);
                }
                let mut names: Vec<PathBuf> = match std::fs::read_dir(&h) {
                    Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
                    Err(e) => return self.keep(Err(e)),
                };
                names.sort();
                for child in names.into_iter().rev() {
                    let name = child
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let cp = if p.is_empty() {
                        name
                    } else {
                        format!("{p}/{name}")
                    };
                    stack.push((child, cp));
                }
            } else if ft.is_file() {
                self = self.host_file(&h, &p);
            }
        }
        self
    }

    fn finish(self) -> io::Result<(Vec<u8>, Compression)> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok((self.tar.into_inner()?, self.compression))
    }
}

/// An image being built: layers and a config.
#[derive(Default)]
pub struct ImageBuilder {
    layers: Vec<Layer>,
    entrypoint: Option<Vec<String>>,
    cmd: Option<Vec<String>>,
    env: Vec<String>,
    working_dir: Option<String>,
    user: Option<String>,
    index: bool,
    lie_diff_id: bool,
}

/// An image written as a layout.
#[derive(Debug, Clone)]
pub struct BuiltImage {
    /// The layout directory.
    pub dir: PathBuf,
    /// The digest to reference: the index's when the image was wrapped in one, else the
    /// manifest's.
    pub digest: String,
    /// The image manifest's digest.
    pub manifest_digest: String,
    /// The config blob's digest.
    pub config_digest: String,
    /// The layer blobs' digests, lowest first.
    pub layers: Vec<String>,
}

impl BuiltImage {
    /// `oci:<dir>@<digest>`, the layout reference of the image.
    pub fn reference(&self) -> String {
        format!("oci:{}@{}", self.dir.display(), self.digest)
    }
}

/// The platform an index entry is written for (this host's, in OCI spelling).
pub fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

impl ImageBuilder {
    /// An image with no layers and an empty config.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a layer on top.
    #[must_use]
    pub fn layer(mut self, layer: Layer) -> Self {
        self.layers.push(layer);
        self
    }

    /// The config's `Entrypoint`.
    #[must_use]
    pub fn entrypoint<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.entrypoint = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// The config's `Cmd`.
    #[must_use]
    pub fn cmd<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.cmd = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// One `Env` entry.
    #[must_use]
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push(format!("{name}={value}"));
        self
    }

    /// The config's `WorkingDir`.
    #[must_use]
    pub fn working_dir(mut self, dir: &str) -> Self {
        self.working_dir = Some(dir.to_string());
        self
    }

    /// The config's `User`.
    #[must_use]
    pub fn user(mut self, user: &str) -> Self {
        self.user = Some(user.to_string());
        self
    }

    /// Reference the image through an image index listing it for this host's platform (and a
    /// first entry for another platform, which the store must not pick).
    #[must_use]
    pub fn in_index(mut self) -> Self {
        self.index = true;
        self
    }

    /// Write a wrong `rootfs.diff_ids[0]` into the config.
    #[must_use]
    pub fn with_wrong_diff_id(mut self) -> Self {
        self.lie_diff_id = true;
        self
    }

    /// Write the image as an OCI image layout in `dir` (created if absent).
    ///
    /// # Errors
    /// The first error of a layer, or a write error.
    pub fn write_layout(self, dir: impl AsRef<Path>) -> io::Result<BuiltImage> {
        let dir = dir.as_ref().to_path_buf();
        let blobs = dir.join("blobs").join("sha256");
        std::fs::create_dir_all(&blobs)?;
        let put = |bytes: &[u8]| -> io::Result<String> {
            let d = sha256(bytes);
            std::fs::write(blobs.join(&d["sha256:".len()..]), bytes)?;
            Ok(d)
        };
        let mut layer_descs = Vec::new();
        let mut diff_ids = Vec::new();
        let mut layer_digests = Vec::new();
        for layer in self.layers {
            let (tar, compression) = layer.finish()?;
            diff_ids.push(sha256(&tar));
            let blob = compression.compress(&tar)?;
            let d = put(&blob)?;
            layer_descs.push(serde_json::json!({
                "mediaType": compression.media_type(), "digest": d, "size": blob.len()
            }));
            layer_digests.push(d);
        }
        if self.lie_diff_id {
            if let Some(first) = diff_ids.first_mut() {
                *first = sha256(b"not the layer");
            }
        }
        let mut config = serde_json::Map::new();
        if let Some(e) = self.entrypoint {
            config.insert("Entrypoint".into(), e.into());
        }
        if let Some(c) = self.cmd {
            config.insert("Cmd".into(), c.into());
        }
        if !self.env.is_empty() {
            config.insert("Env".into(), self.env.into());
        }
        if let Some(w) = self.working_dir {
            config.insert("WorkingDir".into(), w.into());
        }
        if let Some(u) = self.user {
            config.insert("User".into(), u.into());
        }
        let config = serde_json::json!({
            "architecture": host_arch(), "os": "linux", "config": config,
            "rootfs": { "type": "layers", "diff_ids": diff_ids },
        });
        let config_bytes = serde_json::to_vec(&config)?;
        let config_digest = put(&config_bytes)?;
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest, "size": config_bytes.len()
            },
            "layers": layer_descs,
        });
        let manifest_bytes = serde_json::to_vec(&manifest)?;
        let manifest_digest = put(&manifest_bytes)?;
        let mut top = serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest, "size": manifest_bytes.len(),
        });
        let mut digest = manifest_digest.clone();
        if self.index {
            let other_arch = if host_arch() == "arm64" {
                "amd64"
            } else {
                "arm64"
            };
            // A real manifest for the other platform (a registry refuses an index naming a
            // manifest it lacks); the store never fetches it.
            let mut other = manifest.clone();
            if let Some(obj) = other.as_object_mut() {
                obj.insert(
                    "annotations".into(),
                    serde_json::json!({ "platform": other_arch }),
                );
            }
            let other_bytes = serde_json::to_vec(&other)?;
            let other_digest = put(&other_bytes)?;
            let index = serde_json::json!({
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "manifests": [
                    {
                        "mediaType": "application/vnd.oci.image.manifest.v1+json",
                        "digest": other_digest,
                        "size": other_bytes.len(), "platform": { "os": "linux", "architecture": other_arch }
                    },
                    {
                        "mediaType": "application/vnd.oci.image.manifest.v1+json",
                        "digest": manifest_digest, "size": manifest_bytes.len(),
                        "platform": { "os": "linux", "architecture": host_arch() }
                    }
                ]
            });
            let index_bytes = serde_json::to_vec(&index)?;
            digest = put(&index_bytes)?;
            top = serde_json::json!({
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "digest": digest, "size": index_bytes.len(),
            });
        }
        if let Some(obj) = top.as_object_mut() {
            obj.insert(
                "annotations".into(),
                serde_json::json!({ "org.opencontainers.image.ref.name": "latest" }),
            );
        }
        std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        std::fs::write(
            dir.join("index.json"),
            serde_json::to_vec(&serde_json::json!({ "schemaVersion": 2, "manifests": [top] }))?,
        )?;
        Ok(BuiltImage {
            dir,
            digest,
            manifest_digest,
            config_digest,
            layers: layer_digests,
        })
    }
}

/// Push the image `layout` names in its `index.json` (the first entry) to the registry at
/// `registry_addr` (`127.0.0.1:<port>`) as `repo`, over plain HTTP with anonymous access.
/// Blobs absent from the layout (an index entry for another platform) are skipped. Returns the
/// pushed digest (the index's, or the manifest's).
///
/// # Errors
/// A layout that cannot be read, or the registry's refusal.
#[cfg(feature = "push")]
pub async fn push(layout: &Path, registry_addr: &str, repo: &str) -> io::Result<String> {
    use oci_client::client::{ClientConfig, ClientProtocol};
    use oci_client::{Client, Reference};

    let err = |e: oci_client::errors::OciDistributionError| io::Error::other(e.to_string());
    let client = Client::try_from(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    })
    .map_err(err)?;
    let blob = |d: &str| {
        std::fs::read(
            layout
                .join("blobs/sha256")
                .join(d.trim_start_matches("sha256:")),
        )
    };
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json"))?)?;
    let top = index
        .pointer("/manifests/0")
        .ok_or_else(|| io::Error::other("index.json lists no manifest"))?;
    let str_at = |v: &serde_json::Value, p: &str| -> io::Result<String> {
        v.pointer(p)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| io::Error::other(format!("no string at {p}")))
    };
    let top_digest = str_at(top, "/digest")?;
    let top_type = str_at(top, "/mediaType")?;
    let at = |d: &str| {
        Reference::with_digest(registry_addr.to_string(), repo.to_string(), d.to_string())
    };
    let mut manifests = vec![(top_digest.clone(), top_type.clone())];
    if top_type.ends_with("index.v1+json") {
        let idx: serde_json::Value = serde_json::from_slice(&blob(&top_digest)?)?;
        manifests.clear();
        for m in idx
            .get("manifests")
            .and_then(|m| m.as_array())
            .into_iter()
            .flatten()
        {
            let d = str_at(m, "/digest")?;
            if blob(&d).is_ok() {
                manifests.push((d, str_at(m, "/mediaType")?));
            }
        }
    }
    for (digest, media_type) in &manifests {
        let bytes = blob(digest)?;
        let m: serde_json::Value = serde_json::from_slice(&bytes)?;
        let mut parts = vec![str_at(&m, "/config/digest")?];
        for l in m
            .get("layers")
            .and_then(|l| l.as_array())
            .into_iter()
            .flatten()
        {
            parts.push(str_at(l, "/digest")?);
        }
        for d in parts {
            client
                .push_blob(&at(&d), blob(&d)?, &d)
                .await
                .map_err(err)?;
        }
        let ct = media_type
            .parse()
            .map_err(|_| io::Error::other("bad media type"))?;
        client
            .push_manifest_raw(&at(digest), bytes, ct)
            .await
            .map_err(err)?;
    }
    if top_type.ends_with("index.v1+json") {
        let ct = top_type
            .parse()
            .map_err(|_| io::Error::other("bad media type"))?;
        client
            .push_manifest_raw(&at(&top_digest), blob(&top_digest)?, ct)
            .await
            .map_err(err)?;
    }
    Ok(top_digest)
}
