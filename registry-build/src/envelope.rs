//! The deployment envelope: the hosts any tool may ever reach, where images may come from, and
//! the host paths a sandbox may bind read-only.
//!
//! ```json
//! { "egress": ["api.example.com", "public"],
//!   "images": ["registry.example.com:443", "http://127.0.0.1:5000", "oci:/var/lib/images"],
//!   "read_only": ["/usr/lib/python3", "/opt/node"] }
//! ```

use std::fmt;
use std::fs;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use escepine_contract::{ImageRef, ImageSource};
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::egress::{EgressEntry, AUTHORIZED_URLS, PUBLIC};
use crate::fields::{Object, ENVELOPE};
use crate::host_path;
use crate::rule::Rule;

/// The envelope's fields.
const FIELDS: &[&str] = &["egress", "images", "read_only"];

/// A deployment envelope (`{ "egress": [...], "images": [...], "read_only": [...] }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The file it came from.
    pub source: PathBuf,
    /// The admitted entries.
    pub egress: Vec<EgressEntry>,
    /// `public` in `egress`: tools may reach public addresses (what a profile's
    /// `authorized-urls` and an overlay's `public_addresses` need).
    pub public: bool,
    /// Where images may come from (empty: no image is admitted).
    pub images: Vec<ImageSourceEntry>,
    /// Host path prefixes a sandbox may bind read-only (empty: none).
    pub read_only: Vec<PathBuf>,
}

/// One `images` entry of the envelope: a source images may come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ImageSourceEntry {
    /// `host:port`: a registry reached over HTTPS.
    Https {
        /// `host[:port]`, lower-case, as written.
        registry: String,
    },
    /// `http://host:port`: a registry on a loopback address reached over plain HTTP.
    Http {
        /// `host[:port]`, lower-case, as written (without `http://`).
        registry: String,
    },
    /// `oci:/dir`: local OCI image layouts under this directory.
    Layout {
        /// The absolute, lexically normal directory prefix.
        prefix: PathBuf,
    },
}

impl ImageSourceEntry {
    /// Parse an `images` entry.
    ///
    /// # Errors
    /// What is wrong with it, for a diagnostic.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(dir) = text.strip_prefix("oci:") {
            return host_path::parse(dir)
                .map(|prefix| Self::Layout { prefix })
                .map_err(|e| format!("`{text}`: an `oci:` entry names a layout directory: {e}"));
        }
        if let Some(registry) = text.strip_prefix("http://") {
            let host = registry_host(registry).map_err(|e| format!("`{text}`: {e}"))?;
            if !is_loopback(&host) {
                return Err(format!(
                    "`{text}`: plain HTTP is allowed only for a registry on a loopback address \
                     (127.0.0.0/8, [::1] or localhost); write `{registry}` for HTTPS"
                ));
            }
            return Ok(Self::Http {
                registry: registry.to_ascii_lowercase(),
            });
        }
        if text.contains("://") {
            return Err(format!(
                "`{text}`: write a registry as `host:port` (HTTPS) or `http://host:port` (plain \
                 HTTP, loopback only), and a layout directory as `oci:/dir`"
            ));
        }
        registry_host(text).map_err(|e| format!("`{text}`: {e}"))?;
        Ok(Self::Https {
            registry: text.to_ascii_lowercase(),
        })
    }
}

impl fmt::Display for ImageSourceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Https { registry } => f.write_str(registry),
            Self::Http { registry } => write!(f, "http://{registry}"),
            Self::Layout { prefix } => write!(f, "oci:{}", prefix.display()),
        }
    }
}

/// The host of a `host[:port]` registry (brackets kept off an IPv6 address).
fn registry_host(registry: &str) -> Result<String, String> {
    let bad = || "a registry is `host` or `host:port`, nothing else (no path, user or query)";
    let url =
        url::Url::parse(&format!("https://{registry}")).map_err(|e| format!("{}: {e}", bad()))?;
    let plain = url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && !registry.ends_with('/')
        && !registry.contains('@');
    match url.host_str() {
        Some(h) if plain && !h.is_empty() => {
            Ok(h.trim_start_matches('[').trim_end_matches(']').to_string())
        }
        _ => Err(bad().to_string()),
    }
}

/// Whether `host` is a loopback address or `localhost`.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Envelope {
    /// Read and check an envelope file.
    ///
    /// # Errors
    /// Every problem of the file.
    pub fn load(path: &Path) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::new();
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                diags.push(Diagnostic::file(
                    Rule::Missing,
                    path,
                    format!("cannot read the envelope: {e}"),
                ));
                return Err(diags);
            }
        };
        let src = SourceFile::new(path, text);
        match Self::parse(&src) {
            Ok(e) => Ok(e),
            Err(d) => Err(d),
        }
    }

    /// Check an envelope given as text.
    ///
    /// # Errors
    /// Every problem of the text.
    pub fn parse(src: &SourceFile) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::new();
        let value = match crate::fields::parse(src) {
            Ok(v) => v,
            Err(d) => {
                diags.push(*d);
                return Err(diags);
            }
        };
        let Some(obj) = value.as_object() else {
            diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                "",
                "the envelope must be an object `{ \"egress\": [...] }`",
            ));
            return Err(diags);
        };
        Object::new(src, "", obj, ENVELOPE).closed(FIELDS, "the envelope", &mut diags);
        let mut egress = Vec::new();
        let mut public = false;
        match obj.get("egress").map(|e| e.as_array()) {
            Some(Some(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let ptr = format!("/egress/{i}");
                    match item.as_str() {
                        Some(PUBLIC) => {
                            public = true;
                            continue;
                        }
                        Some(AUTHORIZED_URLS) => {
                            diags.push(
                                Diagnostic::at(Rule::EgressReservedWord, src, &ptr, format!("`{AUTHORIZED_URLS}` is a sandbox profile entry (the origins of the URLs each call's authorization allowed), not an envelope entry"))
                                    .help(format!("write `\"{PUBLIC}\"` to let tools reach public addresses")),
                            );
                            continue;
                        }
                        _ => {}
                    }
                    match item.as_str().map(str::parse::<EgressEntry>) {
                        Some(Ok(e)) => egress.push(e),
                        Some(Err(e)) => {
                            diags.push(Diagnostic::at(Rule::EgressEntry, src, &ptr, e.to_string()))
                        }
                        None => diags.push(Diagnostic::at(
                            Rule::Envelope,
                            src,
                            &ptr,
                            "an egress entry must be a string",
                        )),
                    }
                }
            }
            Some(None) => diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                "/egress",
                "`egress` must be an array of entries",
            )),
            None => diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                "",
                "missing field `egress`",
            )),
        }
        let images = list(src, obj, "images", &mut diags, |text| {
            ImageSourceEntry::parse(text).map_err(|e| (Rule::EnvelopeImages, e))
        });
        let read_only = list(src, obj, "read_only", &mut diags, |text| {
            host_path::parse(text).map_err(|e| {
                (
                    Rule::EnvelopeReadOnly,
                    format!("a `read_only` prefix must be an absolute, lexically normal path: {e}"),
                )
            })
        });
        if diags.is_empty() {
            Ok(Self {
                source: src.path.clone(),
                egress,
                public,
                images,
                read_only,
            })
        } else {
            Err(diags)
        }
    }

    /// Whether some envelope entry covers `entry`.
    pub fn covers(&self, entry: &EgressEntry) -> bool {
        self.egress.iter().any(|e| e.covers(entry))
    }

    /// The `images` entry that admits `image`, if one does: a registry entry whose `host:port`
    /// is exactly the image's registry (lower-case), or a layout entry whose directory is a
    /// path-component prefix of the image's layout directory (which must be lexically normal).
    pub fn image_entry(&self, image: &ImageRef) -> Option<&ImageSourceEntry> {
        self.images.iter().find(|e| match (e, &image.source) {
            (
                ImageSourceEntry::Https { registry } | ImageSourceEntry::Http { registry },
                ImageSource::Registry { registry: r, .. },
            ) => registry.eq_ignore_ascii_case(r),
            (ImageSourceEntry::Layout { prefix }, ImageSource::Layout { dir }) => {
                host_path::under(dir, prefix)
            }
            _ => false,
        })
    }

    /// Whether `image` is fetched over plain HTTP: the entry admitting it is `http://…`.
    pub fn plain_http(&self, image: &ImageRef) -> bool {
        matches!(self.image_entry(image), Some(ImageSourceEntry::Http { .. }))
    }

    /// Whether `path` lies under one of the `read_only` prefixes (whole components).
    pub fn admits_read_only(&self, path: &Path) -> bool {
        self.read_only.iter().any(|p| host_path::under(path, p))
    }
}

/// An optional array field of string entries, each parsed by `parse`; problems are reported at
/// `/<key>/<i>`.
fn list<T>(
    src: &SourceFile,
    obj: &serde_json::Map<String, Value>,
    key: &str,
    diags: &mut Diagnostics,
    parse: impl Fn(&str) -> Result<T, (Rule, String)>,
) -> Vec<T> {
    let mut out = Vec::new();
    match obj.get(key) {
        None => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let ptr = format!("/{key}/{i}");
                match item.as_str().map(&parse) {
                    Some(Ok(v)) => out.push(v),
                    Some(Err((rule, msg))) => diags.push(Diagnostic::at(rule, src, &ptr, msg)),
                    None => diags.push(Diagnostic::at(
                        Rule::Envelope,
                        src,
                        &ptr,
                        format!("a `{key}` entry must be a string"),
                    )),
                }
            }
        }
        Some(_) => diags.push(Diagnostic::at(
            Rule::Envelope,
            src,
            &format!("/{key}"),
            format!("`{key}` must be an array of strings"),
        )),
    }
    out
}
