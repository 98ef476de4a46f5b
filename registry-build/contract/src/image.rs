//! OCI image references pinned by digest: the one parser of `endpoint.image`, shared by the
//! registration rules and the runtime's image fetcher.
//!
//! Two forms are accepted:
//! - `host:port/name@sha256:<64 hex>` (or `host/name@…`): an image in a registry reached
//!   through the OCI distribution API. The first path segment is the registry; it must look
//!   like a host (it has a `.` or a `:`, or is `localhost`). An optional tag before the digest
//!   (`name:tag@sha256:…`) is kept for display only: the digest alone selects the image.
//! - `oci:/absolute/layout/dir@sha256:<64 hex>`: an image in a local OCI image layout
//!   directory, selected by its manifest's digest.
//!
//! A reference without a digest (a bare tag, which can change under the record) is refused.

use std::fmt;
use std::path::PathBuf;

/// Where an image comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ImageSource {
    /// A registry speaking the OCI distribution API.
    Registry {
        /// `host[:port]`, lower-case.
        registry: String,
        /// The repository path within it (`name` or `group/name`).
        repository: String,
        /// A tag written before the digest, for display only.
        tag: Option<String>,
    },
    /// A local OCI image layout directory (absolute).
    Layout {
        /// The layout's directory (holding `oci-layout`, `index.json`, `blobs/`).
        dir: PathBuf,
    },
}

/// An image reference pinned by the digest of its manifest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef {
    /// The reference as written.
    pub raw: String,
    /// Where the image comes from.
    pub source: ImageSource,
    /// The manifest's digest, `sha256:<64 lower-case hex>`.
    pub digest: String,
}

/// Why a reference is not a pinned image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageRefError {
    /// No `@sha256:` digest: a tag or a bare name, which can change under the record.
    NotPinned(String),
    /// The digest is not `sha256:` followed by 64 lower-case hex digits.
    BadDigest(String),
    /// `oci:` not followed by an absolute directory.
    RelativeLayout(String),
    /// The first segment is not a registry host (`host:port`, `host.domain` or `localhost`).
    NoRegistry(String),
    /// The repository is not lower-case segments of `[a-z0-9]` joined by `.`, `_`, `__` or `-`.
    BadRepository(String),
}

impl fmt::Display for ImageRefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPinned(r) => write!(
                f,
                "`{r}` is not pinned by digest: write `host:port/name@sha256:<digest>` or \
                 `oci:/layout@sha256:<digest>` (a tag can change under the record)"
            ),
            Self::BadDigest(d) => write!(
                f,
                "`{d}` is not a digest of the form `sha256:<64 lower-case hex digits>`"
            ),
            Self::RelativeLayout(r) => write!(
                f,
                "`{r}`: an `oci:` layout must be an absolute directory (`oci:/path@sha256:…`)"
            ),
            Self::NoRegistry(r) => write!(
                f,
                "`{r}` names no registry: its first segment must be `host:port`, a dotted host \
                 name or `localhost`"
            ),
            Self::BadRepository(r) => write!(
                f,
                "`{r}` is not a repository name (lower-case `[a-z0-9]` segments joined by `.`, \
                 `_`, `__` or `-`, separated by `/`)"
            ),
        }
    }
}

impl std::error::Error for ImageRefError {}

/// Whether `d` is `sha256:` followed by 64 lower-case hex digits.
pub fn is_sha256_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

fn repository_ok(repo: &str) -> bool {
    !repo.is_empty()
        && repo.split('/').all(|seg| {
            let b = seg.as_bytes();
            let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            !b.is_empty()
                && alnum(b[0])
                && alnum(b[b.len() - 1])
                && b.iter()
                    .all(|&c| alnum(c) || matches!(c, b'.' | b'_' | b'-'))
                && !seg.contains("..")
                && !seg.contains("___")
        })
}

impl ImageRef {
    /// Parse a pinned reference.
    ///
    /// # Errors
    /// [`ImageRefError`] naming what is wrong.
    pub fn parse(raw: &str) -> Result<Self, ImageRefError> {
        let Some((name, digest)) = raw.rsplit_once('@') else {
            return Err(ImageRefError::NotPinned(raw.to_string()));
        };
        if !digest.starts_with("sha256:") && !digest.contains(':') {
            return Err(ImageRefError::NotPinned(raw.to_string()));
        }
        if !is_sha256_digest(digest) {
            return Err(ImageRefError::BadDigest(digest.to_string()));
        }
        let source = if let Some(dir) = name.strip_prefix("oci:") {
            let dir = PathBuf::from(dir);
            if !dir.is_absolute() {
                return Err(ImageRefError::RelativeLayout(raw.to_string()));
            }
            ImageSource::Layout { dir }
        } else {
            let Some((registry, rest)) = name.split_once('/') else {
                return Err(ImageRefError::NoRegistry(raw.to_string()));
            };
            let host_like = registry.contains('.')
                || registry.contains(':')
                || registry.eq_ignore_ascii_case("localhost");
            if !host_like || registry.is_empty() {
                return Err(ImageRefError::NoRegistry(raw.to_string()));
            }
            // A tag is the part after the last `:` of the last segment.
            let (repository, tag) = match rest.rsplit_once(':') {
                Some((repo, tag)) if !tag.contains('/') => (repo, Some(tag.to_string())),
                _ => (rest, None),
            };
            if !repository_ok(repository) {
                return Err(ImageRefError::BadRepository(repository.to_string()));
            }
            ImageSource::Registry {
                registry: registry.to_ascii_lowercase(),
                repository: repository.to_string(),
                tag,
            }
        };
        Ok(Self {
            raw: raw.to_string(),
            source,
            digest: digest.to_string(),
        })
    }

    /// The digest's hex part (no `sha256:`).
    pub fn digest_hex(&self) -> &str {
        self.digest.strip_prefix("sha256:").unwrap_or(&self.digest)
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn registry_references_pin_by_digest() {
        let r = ImageRef::parse(&format!("127.0.0.1:5000/mcp/python@{D}")).expect("parses");
        assert_eq!(
            r.source,
            ImageSource::Registry {
                registry: "127.0.0.1:5000".into(),
                repository: "mcp/python".into(),
                tag: None
            }
        );
        assert_eq!(r.digest, D);
        let tagged = ImageRef::parse(&format!("localhost:5000/srv:1.2@{D}")).expect("parses");
        assert!(matches!(
            tagged.source,
            ImageSource::Registry { ref tag, .. } if tag.as_deref() == Some("1.2")
        ));
    }

    #[test]
    fn layouts_are_absolute() {
        let r = ImageRef::parse(&format!("oci:/var/images/py@{D}")).expect("parses");
        assert_eq!(
            r.source,
            ImageSource::Layout {
                dir: "/var/images/py".into()
            }
        );
        assert!(matches!(
            ImageRef::parse(&format!("oci:images/py@{D}")),
            Err(ImageRefError::RelativeLayout(_))
        ));
    }

    #[test]
    fn tags_and_bad_digests_are_refused() {
        assert!(matches!(
            ImageRef::parse("127.0.0.1:5000/mcp/python:latest"),
            Err(ImageRefError::NotPinned(_))
        ));
        assert!(matches!(
            ImageRef::parse("127.0.0.1:5000/mcp/python"),
            Err(ImageRefError::NotPinned(_))
        ));
        assert!(matches!(
            ImageRef::parse("127.0.0.1:5000/mcp/python@sha256:abc"),
            Err(ImageRefError::BadDigest(_))
        ));
        assert!(matches!(
            ImageRef::parse(&format!("127.0.0.1:5000/mcp/python@{}", D.to_uppercase())),
            Err(ImageRefError::BadDigest(_))
        ));
        assert!(matches!(
            ImageRef::parse(&format!("python@{D}")),
            Err(ImageRefError::NoRegistry(_))
        ));
        assert!(matches!(
            ImageRef::parse(&format!("docker.io/Library/Python@{D}")),
            Err(ImageRefError::BadRepository(_))
        ));
    }
}
