//! The deployment envelope: the hosts any tool may ever reach, where images may come from (and
//! how large their blobs may be), and the host paths a sandbox may bind read-only.
//!
//! ```json
//! { "egress": ["api.example.com", "public"],
//!   "images": ["registry.example.com:443", "http://127.0.0.1:5000", "oci:/var/lib/images"],
//!   "image_blob_hosts": { "registry.example.com:443": ["blobs.example-cdn.com"],
//!                         "http://127.0.0.1:5000": ["http://127.0.0.1:5001"] },
//!   "image_limits": { "max_blob_bytes": 2147483648 },
//!   "read_only": ["/usr/lib/python3", "/opt/node"] }
//! ```
//!
//! - `images`: the sources images may come from: `host:port` (a registry over HTTPS),
//!   `http://host:port` (plain HTTP, loopback only), `oci:/dir` (local OCI image layouts).
//! - `image_blob_hosts` (optional): for a registry entry of `images` (the key, written as it is
//!   there), the other origins that registry may send the image fetcher to — by a redirect (its
//!   blob storage), or as the token service of its `WWW-Authenticate` challenge — written like
//!   `images` registry entries (`host:port` for HTTPS, `http://host:port` for plain HTTP on
//!   loopback). Every request of a fetch, and each redirect hop, goes to the registry's own
//!   origin or to one of these; anything else is refused before it is requested, and at most 5
//!   redirects are followed.
//! - `image_limits` (optional, closed): `max_blob_bytes`, an integer ≥ 1, the largest blob
//!   (manifest, config or layer) written into the image cache; 4 GiB (4294967296) when absent.
//!   A descriptor declaring more is refused before any byte of it is fetched. (Every blob is
//!   also bounded by its descriptor's size and by the free space of the cache's filesystem.)
//! - `read_only`: host path prefixes a sandbox may bind read-only.
//! - `labels` (optional): the information-flow labels records may declare in `data_labels`,
//!   each with a description (`{"untrusted-content": "Text from outside …"}`).
//! - `remote_ca_files` (optional): PEM files of CA certificates that the TLS servers of remote
//!   endpoints (`mcp-http`) and their token endpoints are also verified against, besides the
//!   system's roots (an organisation's own CA).
//! - `isolation` (optional): `{"min": "gvisor", "for": ["compensatable", "untrusted-code"]}`,
//!   the weakest sandbox tier of the tools of these side-effect classes or action groups
//!   ([`crate::isolation`]).

use std::collections::BTreeMap;
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
use crate::isolation::IsolationRule;
use crate::rule::Rule;

/// The envelope's fields.
const FIELDS: &[&str] = &[
    "egress",
    "images",
    "image_blob_hosts",
    "image_limits",
    "read_only",
    "remote_ca_files",
    "labels",
    "isolation",
];

/// The fields of `image_limits`.
const IMAGE_LIMITS_FIELDS: &[&str] = &["max_blob_bytes"];

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
    /// For a registry of `images` (its `host[:port]`, lower-case), the other origins it may send
    /// the image fetcher to (blob storage it redirects to, its token service): each an
    /// [`ImageSourceEntry::Https`] or [`ImageSourceEntry::Http`]. See [`Envelope::blob_hosts`].
    pub image_blob_hosts: BTreeMap<String, Vec<ImageSourceEntry>>,
    /// `image_limits`: how large an image's blobs may be.
    pub image_limits: ImageLimits,
    /// Host path prefixes a sandbox may bind read-only (empty: none).
    pub read_only: Vec<PathBuf>,
    /// PEM files of CA certificates remote endpoints (`mcp-http`) are also verified against,
    /// besides the system's roots (absolute, lexically normal paths).
    pub remote_ca_files: Vec<PathBuf>,
    /// The information-flow labels records may declare ([`crate::labels`]), each with what it
    /// means.
    pub labels: BTreeMap<String, String>,
    /// The weakest isolation tier some tools may run on ([`crate::isolation`]); `None`: any.
    pub isolation: Option<IsolationRule>,
}

/// The envelope's `image_limits` (`{"max_blob_bytes": N}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageLimits {
    /// The largest blob written into the image cache, in bytes (≥ 1); `None` when the envelope
    /// says nothing: the image fetcher's default, 4 GiB.
    pub max_blob_bytes: Option<u64>,
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
        let image_blob_hosts = blob_hosts(src, obj, &images, &mut diags);
        let image_limits = image_limits(src, obj, &mut diags);
        let read_only = list(src, obj, "read_only", &mut diags, |text| {
            host_path::parse(text).map_err(|e| {
                (
                    Rule::EnvelopeReadOnly,
                    format!("a `read_only` prefix must be an absolute, lexically normal path: {e}"),
                )
            })
        });
        let remote_ca_files = list(src, obj, "remote_ca_files", &mut diags, |text| {
            host_path::parse(text).map_err(|e| {
                (
                    Rule::EnvelopeRemoteCa,
                    format!(
                        "a `remote_ca_files` entry must be an absolute, lexically normal path: {e}"
                    ),
                )
            })
        });
        let labels = labels(src, obj, &mut diags);
        let isolation = crate::isolation::parse(src, obj, &mut diags);
        if diags.is_empty() {
            Ok(Self {
                source: src.path.clone(),
                egress,
                public,
                images,
                image_blob_hosts,
                image_limits,
                read_only,
                remote_ca_files,
                labels,
                isolation,
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

    /// The other origins the registry of `image` may send the image fetcher to
    /// (`image_blob_hosts` of the `images` entry admitting it): empty for a layout, or a
    /// registry with none listed.
    pub fn blob_hosts(&self, image: &ImageRef) -> &[ImageSourceEntry] {
        match self.image_entry(image) {
            Some(ImageSourceEntry::Https { registry } | ImageSourceEntry::Http { registry }) => {
                self.image_blob_hosts
                    .get(&registry.to_ascii_lowercase())
                    .map_or(&[], Vec::as_slice)
            }
            _ => &[],
        }
    }

    /// Whether `path` lies under one of the `read_only` prefixes (whole components).
    pub fn admits_read_only(&self, path: &Path) -> bool {
        self.read_only.iter().any(|p| host_path::under(path, p))
    }
}

/// An optional array field of string entries, each parsed by `parse`; problems are reported at
/// `/<key>/<i>`.
/// `labels`: label names (lower-case words joined by `-`) to non-empty descriptions.
fn labels(
    src: &SourceFile,
    obj: &serde_json::Map<String, Value>,
    diags: &mut Diagnostics,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    match obj.get("labels") {
        None => {}
        Some(Value::Object(m)) => {
            for (name, v) in m {
                let ptr = format!("/labels/{}", crate::schema::walk::escape(name));
                if let Some(why) = crate::labels::name_problem(name) {
                    diags.push(Diagnostic::at(
                        Rule::EnvelopeLabels,
                        src,
                        &ptr,
                        format!("`{name}` is not a label name: {why}"),
                    ));
                    continue;
                }
                match v.as_str().map(str::trim) {
                    Some(d) if !d.is_empty() => {
                        out.insert(name.clone(), d.to_string());
                    }
                    _ => diags.push(Diagnostic::at(
                        Rule::EnvelopeLabels,
                        src,
                        &ptr,
                        format!("the label `{name}` needs a description: a non-empty string"),
                    )),
                }
            }
        }
        Some(_) => diags.push(Diagnostic::at(
            Rule::EnvelopeLabels,
            src,
            "/labels",
            "`labels` must be an object of label names to descriptions",
        )),
    }
    out
}

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

/// The optional `image_blob_hosts`: `{ "<images registry entry>": ["<origin>", ...] }`, each key
/// a registry entry of `images` as written there, each origin `host:port` (HTTPS) or
/// `http://host:port` (plain HTTP, loopback only).
fn blob_hosts(
    src: &SourceFile,
    obj: &serde_json::Map<String, Value>,
    images: &[ImageSourceEntry],
    diags: &mut Diagnostics,
) -> BTreeMap<String, Vec<ImageSourceEntry>> {
    let mut out = BTreeMap::new();
    let Some(value) = obj.get("image_blob_hosts") else {
        return out;
    };
    let Some(map) = value.as_object() else {
        diags.push(Diagnostic::at(
            Rule::Envelope,
            src,
            "/image_blob_hosts",
            "`image_blob_hosts` must be an object: `{ \"<registry of images>\": [\"host:port\", ...] }`",
        ));
        return out;
    };
    let at = |key: &str| format!("/image_blob_hosts/{}", crate::schema::walk::escape(key));
    for (key, hosts) in map {
        let registry = match ImageSourceEntry::parse(key) {
            Ok(entry @ (ImageSourceEntry::Https { .. } | ImageSourceEntry::Http { .. }))
                if images.contains(&entry) =>
            {
                match entry {
                    ImageSourceEntry::Https { registry } | ImageSourceEntry::Http { registry } => {
                        registry
                    }
                    ImageSourceEntry::Layout { .. } => continue,
                }
            }
            _ => {
                let listed: Vec<String> = images
                    .iter()
                    .filter(|e| !matches!(e, ImageSourceEntry::Layout { .. }))
                    .map(ToString::to_string)
                    .collect();
                diags.push(
                    Diagnostic::at(
                        Rule::EnvelopeImages,
                        src,
                        &at(key),
                        format!(
                            "`{key}` is not a registry entry of `images`: blob hosts are listed \
                             for a registry `images` admits, keyed as it is written there"
                        ),
                    )
                    .help(if listed.is_empty() {
                        "`images` lists no registry".to_string()
                    } else {
                        format!("the registries of `images`: {}", listed.join(", "))
                    }),
                );
                continue;
            }
        };
        let Some(items) = hosts.as_array() else {
            diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                &at(key),
                format!("the blob hosts of `{key}` must be an array of strings"),
            ));
            continue;
        };
        let mut entries = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let ptr = format!("{}/{i}", at(key));
            let Some(text) = item.as_str() else {
                diags.push(Diagnostic::at(
                    Rule::Envelope,
                    src,
                    &ptr,
                    "a blob host must be a string",
                ));
                continue;
            };
            match ImageSourceEntry::parse(text) {
                Ok(entry @ (ImageSourceEntry::Https { .. } | ImageSourceEntry::Http { .. })) => {
                    entries.push(entry);
                }
                Ok(ImageSourceEntry::Layout { .. }) => diags.push(Diagnostic::at(
                    Rule::EnvelopeImages,
                    src,
                    &ptr,
                    format!("`{text}`: a blob host is an origin (`host:port`, or `http://host:port` on loopback), not a layout directory"),
                )),
                Err(e) => diags.push(Diagnostic::at(Rule::EnvelopeImages, src, &ptr, e)),
            }
        }
        out.entry(registry).or_insert_with(Vec::new).extend(entries);
    }
    out
}

/// The optional `image_limits`, closed: `{ "max_blob_bytes": N }` with N an integer ≥ 1.
fn image_limits(
    src: &SourceFile,
    obj: &serde_json::Map<String, Value>,
    diags: &mut Diagnostics,
) -> ImageLimits {
    let mut limits = ImageLimits::default();
    let Some(value) = obj.get("image_limits") else {
        return limits;
    };
    let Some(map) = value.as_object() else {
        diags.push(Diagnostic::at(
            Rule::Envelope,
            src,
            "/image_limits",
            "`image_limits` must be an object: `{ \"max_blob_bytes\": N }`",
        ));
        return limits;
    };
    Object::new(src, "/image_limits", map, ENVELOPE).closed(
        IMAGE_LIMITS_FIELDS,
        "`image_limits`",
        diags,
    );
    if let Some(v) = map.get("max_blob_bytes") {
        match v.as_u64() {
            Some(n) if n >= 1 => limits.max_blob_bytes = Some(n),
            _ => diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                "/image_limits/max_blob_bytes",
                format!(
                    "`max_blob_bytes` must be an integer ≥ 1 (bytes; 4294967296, 4 GiB, when \
                     absent), not `{v}`"
                ),
            )),
        }
    }
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<Envelope, Diagnostics> {
        Envelope::parse(&SourceFile::new("deploy/envelope.json", v.to_string()))
    }

    fn image(raw: &str) -> ImageRef {
        ImageRef::parse(&format!(
            "{raw}@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        ))
        .expect("a pinned reference")
    }

    /// The diagnostics as `(rule, pointer, message)`, each also shown as a whole.
    fn problems(d: &Diagnostics) -> Vec<(Rule, String, String)> {
        d.iter()
            .map(|d| {
                let shown = d.to_string();
                assert!(shown.contains("deploy/envelope.json"), "{shown}");
                (
                    d.rule,
                    d.pointer.clone().unwrap_or_default(),
                    d.message.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn image_limits_and_blob_hosts_are_read_and_default_when_absent() {
        let e = parse(serde_json::json!({
            "egress": [],
            "images": ["registry.example.com", "http://127.0.0.1:5000", "oci:/var/lib/images"],
            "image_blob_hosts": {
                "registry.example.com": ["blobs.example-cdn.com:443"],
                "http://127.0.0.1:5000": ["http://127.0.0.1:5001", "localhost:5443"],
            },
            "image_limits": {"max_blob_bytes": 1048576},
        }))
        .expect("valid");
        assert_eq!(e.image_limits.max_blob_bytes, Some(1 << 20));
        assert_eq!(
            e.blob_hosts(&image("127.0.0.1:5000/mcp/x")),
            [
                ImageSourceEntry::Http {
                    registry: "127.0.0.1:5001".into()
                },
                ImageSourceEntry::Https {
                    registry: "localhost:5443".into()
                },
            ]
        );
        assert_eq!(
            e.blob_hosts(&image("REGISTRY.example.com/mcp/x")),
            [ImageSourceEntry::Https {
                registry: "blobs.example-cdn.com:443".into()
            }]
        );
        assert!(e.blob_hosts(&image("oci:/var/lib/images/x")).is_empty());
        assert!(e.blob_hosts(&image("other.example.com/x")).is_empty());

        let plain = parse(serde_json::json!({"egress": [], "images": ["http://127.0.0.1:5000"]}))
            .expect("valid");
        assert_eq!(plain.image_limits, ImageLimits::default());
        assert_eq!(plain.image_limits.max_blob_bytes, None);
        assert!(plain.image_blob_hosts.is_empty());
    }

    #[test]
    fn image_limits_is_closed_and_its_bound_an_integer_of_at_least_one() {
        for (limits, pointer, part) in [
            (
                serde_json::json!({"max_blob_bytes": 10, "max_blobs": 3}),
                "/image_limits/max_blobs",
                "unknown field `max_blobs`",
            ),
            (
                serde_json::json!({"max_blob_bytes": 0}),
                "/image_limits/max_blob_bytes",
                "integer ≥ 1",
            ),
            (
                serde_json::json!({"max_blob_bytes": -1}),
                "/image_limits/max_blob_bytes",
                "integer ≥ 1",
            ),
            (
                serde_json::json!({"max_blob_bytes": 1.5}),
                "/image_limits/max_blob_bytes",
                "integer ≥ 1",
            ),
            (
                serde_json::json!({"max_blob_bytes": "1GiB"}),
                "/image_limits/max_blob_bytes",
                "integer ≥ 1",
            ),
            (serde_json::json!([1]), "/image_limits", "must be an object"),
        ] {
            let d = parse(serde_json::json!({"egress": [], "image_limits": limits}))
                .expect_err("refused");
            let all = problems(&d);
            assert_eq!(all.len(), 1, "{all:?}");
            let (rule, ptr, message) = &all[0];
            assert_eq!(*rule, Rule::Envelope, "{all:?}");
            assert_eq!(ptr, pointer, "{all:?}");
            assert!(message.contains(part), "{message}");
        }
        let d = parse(serde_json::json!({"egress": [], "image_limit": {}})).expect_err("refused");
        let all: Vec<_> = d.iter().collect();
        assert_eq!(all[0].help.as_deref(), Some("did you mean `image_limits`?"));
    }

    #[test]
    fn blob_hosts_are_listed_for_a_registry_of_images_each_an_admissible_origin() {
        let images = serde_json::json!(["registry.example.com", "http://127.0.0.1:5000"]);
        for (hosts, pointer, rule, part) in [
            (
                serde_json::json!({"127.0.0.1:5000": ["http://127.0.0.1:5001"]}),
                "/image_blob_hosts/127.0.0.1:5000",
                Rule::EnvelopeImages,
                "not a registry entry of `images`",
            ),
            (
                serde_json::json!({"other.example.com": ["blobs.example.com"]}),
                "/image_blob_hosts/other.example.com",
                Rule::EnvelopeImages,
                "not a registry entry of `images`",
            ),
            (
                serde_json::json!({"registry.example.com": ["http://blobs.example.com"]}),
                "/image_blob_hosts/registry.example.com/0",
                Rule::EnvelopeImages,
                "loopback",
            ),
            (
                serde_json::json!({"registry.example.com": ["https://blobs.example.com"]}),
                "/image_blob_hosts/registry.example.com/0",
                Rule::EnvelopeImages,
                "write a registry as `host:port`",
            ),
            (
                serde_json::json!({"registry.example.com": ["oci:/var/lib"]}),
                "/image_blob_hosts/registry.example.com/0",
                Rule::EnvelopeImages,
                "not a layout directory",
            ),
            (
                serde_json::json!({"registry.example.com": ["blobs.example.com/path"]}),
                "/image_blob_hosts/registry.example.com/0",
                Rule::EnvelopeImages,
                "nothing else",
            ),
            (
                serde_json::json!({"registry.example.com": "blobs.example.com"}),
                "/image_blob_hosts/registry.example.com",
                Rule::Envelope,
                "array of strings",
            ),
            (
                serde_json::json!({"registry.example.com": [5001]}),
                "/image_blob_hosts/registry.example.com/0",
                Rule::Envelope,
                "must be a string",
            ),
            (
                serde_json::json!(["blobs.example.com"]),
                "/image_blob_hosts",
                Rule::Envelope,
                "must be an object",
            ),
        ] {
            let d = parse(serde_json::json!({
                "egress": [], "images": images, "image_blob_hosts": hosts,
            }))
            .expect_err("refused");
            let all = problems(&d);
            assert_eq!(all.len(), 1, "{all:?}");
            let (r, ptr, message) = &all[0];
            assert_eq!(*r, rule, "{all:?}");
            assert_eq!(ptr, pointer, "{all:?}");
            assert!(message.contains(part), "{message}");
        }
    }
}
