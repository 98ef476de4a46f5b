//! The JSON documents of an image: the index (or Docker manifest list), the manifest and the
//! config, read into what the store needs, with every rule broken named by its JSON pointer.

use serde_json::Value;

use crate::error::OciError;

/// OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker image manifest, schema 2.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker manifest list.
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// The manifest media types asked of a registry.
pub const MANIFEST_TYPES: [&str; 4] = [OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST];

/// The largest manifest, index or config accepted (bytes).
pub const MAX_DOCUMENT: u64 = 4 << 20;

/// A content descriptor: what a manifest says of a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    /// The blob's media type.
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// The blob's length in bytes.
    pub size: u64,
}

/// A manifest document: either an image manifest or an index of them.
#[derive(Debug)]
pub enum Document {
    /// An image manifest: a config and layers.
    Manifest {
        /// The config blob.
        config: Descriptor,
        /// The layers, lowest first.
        layers: Vec<Descriptor>,
    },
    /// An index: manifests per platform.
    Index(Vec<(Descriptor, Option<Platform>)>),
}

/// The platform an index entry is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// `linux`.
    pub os: String,
    /// `amd64`, `arm64`, …
    pub architecture: String,
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)
    }
}

/// The platform of this host, in OCI spelling (`linux/amd64`).
pub fn host_platform() -> Platform {
    let architecture = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        other => other,
    };
    Platform {
        os: "linux".into(),
        architecture: architecture.into(),
    }
}

/// Reads documents of one image, naming it in errors.
pub struct Reader<'a> {
    /// The image reference.
    pub image: &'a str,
}

impl Reader<'_> {
    fn bad(
        &self,
        kind: &'static str,
        digest: &str,
        pointer: &str,
        reason: impl Into<String>,
    ) -> OciError {
        OciError::BadDocument {
            image: self.image.to_string(),
            kind,
            digest: digest.to_string(),
            pointer: pointer.to_string(),
            reason: reason.into(),
        }
    }

    fn descriptor(
        &self,
        kind: &'static str,
        digest: &str,
        v: &Value,
        pointer: &str,
    ) -> Result<Descriptor, OciError> {
        let obj = v
            .as_object()
            .ok_or_else(|| self.bad(kind, digest, pointer, "a descriptor must be an object"))?;
        let media_type = obj
            .get("mediaType")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                self.bad(
                    kind,
                    digest,
                    &format!("{pointer}/mediaType"),
                    "a descriptor needs a string `mediaType`",
                )
            })?;
        let d = obj.get("digest").and_then(Value::as_str).ok_or_else(|| {
            self.bad(
                kind,
                digest,
                &format!("{pointer}/digest"),
                "a descriptor needs a string `digest`",
            )
        })?;
        if !escepine_contract::image::is_sha256_digest(d) {
            return Err(self.bad(
                kind,
                digest,
                &format!("{pointer}/digest"),
                format!("`{d}` is not `sha256:` and 64 lower-case hex digits"),
            ));
        }
        let size = obj.get("size").and_then(Value::as_u64).ok_or_else(|| {
            self.bad(
                kind,
                digest,
                &format!("{pointer}/size"),
                "a descriptor needs a non-negative integer `size`",
            )
        })?;
        Ok(Descriptor {
            media_type: media_type.to_string(),
            digest: d.to_string(),
            size,
        })
    }

    /// Parse a manifest or index whose bytes were verified against `digest`.
    ///
    /// # Errors
    /// [`OciError::BadDocument`] naming the pointer and the rule.
    pub fn document(&self, digest: &str, bytes: &[u8]) -> Result<Document, OciError> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| self.bad("manifest", digest, "", format!("not JSON: {e}")))?;
        let media_type = v.get("mediaType").and_then(Value::as_str);
        let is_index = match media_type {
            Some(OCI_INDEX | DOCKER_LIST) => true,
            Some(OCI_MANIFEST | DOCKER_MANIFEST) => false,
            // The OCI spec makes `mediaType` optional; the shape tells.
            None => v.get("manifests").is_some(),
            Some(other) => {
                return Err(self.bad(
                    "manifest",
                    digest,
                    "/mediaType",
                    format!("`{other}` is not an OCI or Docker image manifest or index"),
                ))
            }
        };
        if is_index {
            let list = v
                .get("manifests")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    self.bad(
                        "index",
                        digest,
                        "/manifests",
                        "an index needs an array `manifests`",
                    )
                })?;
            let mut out = Vec::with_capacity(list.len());
            for (i, m) in list.iter().enumerate() {
                let pointer = format!("/manifests/{i}");
                let d = self.descriptor("index", digest, m, &pointer)?;
                let platform = m.get("platform").and_then(|p| {
                    Some(Platform {
                        os: p.get("os")?.as_str()?.to_string(),
                        architecture: p.get("architecture")?.as_str()?.to_string(),
                    })
                });
                out.push((d, platform));
            }
            return Ok(Document::Index(out));
        }
        let config = self.descriptor(
            "manifest",
            digest,
            v.get("config").unwrap_or(&Value::Null),
            "/config",
        )?;
        let list = v.get("layers").and_then(Value::as_array).ok_or_else(|| {
            self.bad(
                "manifest",
                digest,
                "/layers",
                "a manifest needs an array `layers`",
            )
        })?;
        let layers = list
            .iter()
            .enumerate()
            .map(|(i, l)| self.descriptor("manifest", digest, l, &format!("/layers/{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Document::Manifest { config, layers })
    }

    /// The entry of an index for `want`, or an error listing what it offers.
    ///
    /// # Errors
    /// [`OciError::NoPlatform`] when no entry is for `want`; [`OciError::BadDocument`] when
    /// the chosen entry is not an image manifest.
    pub fn pick(
        &self,
        digest: &str,
        entries: &[(Descriptor, Option<Platform>)],
        want: &Platform,
    ) -> Result<Descriptor, OciError> {
        let found = entries
            .iter()
            .position(|(_, p)| p.as_ref() == Some(want))
            .ok_or_else(|| OciError::NoPlatform {
                image: self.image.to_string(),
                digest: digest.to_string(),
                platform: want.to_string(),
                listed: entries
                    .iter()
                    .map(|(_, p)| {
                        p.as_ref()
                            .map_or_else(|| "(no platform)".to_string(), Platform::to_string)
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let d = &entries[found].0;
        if d.media_type != OCI_MANIFEST && d.media_type != DOCKER_MANIFEST {
            return Err(self.bad(
                "index",
                digest,
                &format!("/manifests/{found}/mediaType"),
                format!(
                    "`{}` is not an image manifest (nested indexes are not followed)",
                    d.media_type
                ),
            ));
        }
        Ok(d.clone())
    }

    /// Parse an image config: what the sandbox runs, and the layers' diff_ids.
    ///
    /// # Errors
    /// [`OciError::BadDocument`] naming the pointer and the rule.
    pub fn config(
        &self,
        digest: &str,
        bytes: &[u8],
    ) -> Result<(crate::types::ImageConfig, Vec<String>), OciError> {
        let bad = |pointer: &str, reason: String| self.bad("config", digest, pointer, reason);
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| bad("", format!("not JSON: {e}")))?;
        let empty = serde_json::Map::new();
        let c = match v.get("config") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(c)) => c,
            Some(_) => return Err(bad("/config", "must be an object".into())),
        };
        let strings = |key: &str| -> Result<Vec<String>, OciError> {
            match c.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        s.as_str().map(str::to_string).ok_or_else(|| {
                            bad(&format!("/config/{key}/{i}"), "must be a string".into())
                        })
                    })
                    .collect(),
                Some(_) => Err(bad(
                    &format!("/config/{key}"),
                    "must be an array of strings".into(),
                )),
            }
        };
        let optional = |key: &str| -> Result<Option<String>, OciError> {
            match c.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.is_empty() => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(&format!("/config/{key}"), "must be a string".into())),
            }
        };
        let env = strings("Env")?
            .into_iter()
            .enumerate()
            .map(|(i, kv)| match kv.split_once('=') {
                Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
                _ => Err(bad(
                    &format!("/config/Env/{i}"),
                    format!("`{kv}` is not `NAME=value`"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let config = crate::types::ImageConfig {
            entrypoint: strings("Entrypoint")?,
            cmd: strings("Cmd")?,
            env,
            working_dir: optional("WorkingDir")?,
            user: optional("User")?,
        };
        let diff_ids = v
            .pointer("/rootfs/diff_ids")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                bad(
                    "/rootfs/diff_ids",
                    "an image config needs an array `rootfs.diff_ids`".into(),
                )
            })?
            .iter()
            .enumerate()
            .map(|(i, d)| match d.as_str() {
                Some(d) if escepine_contract::image::is_sha256_digest(d) => Ok(d.to_string()),
                _ => Err(bad(
                    &format!("/rootfs/diff_ids/{i}"),
                    "must be `sha256:` and 64 lower-case hex digits".into(),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((config, diff_ids))
    }
}
