//! URL facts: the parsed parts of the one URL a request authorizes (`context.url`).
//!
//! Policies compare hosts as strings, so the host must have exactly one spelling: it is the
//! host the URL really names (not a query string or user-info that merely contains a name),
//! lower-case, IDNA-normalised to its A-label form (`xn--…`), without trailing dots
//! (`linkedin.com.` is `linkedin.com`). A URL without a host, or whose host cannot be
//! normalised, has no facts and its request is denied.

use std::net::IpAddr;

use cedar_policy::RestrictedExpression;
use escepine_contract::{Origin, OriginHost};
use url::{Host, Url};

use escepine_host_class as host_class;

/// The facts of one URL, as `context.url` carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlFacts {
    /// The URL exactly as the payload gave it.
    pub raw: String,
    /// The scheme, lower-case (`https`).
    pub scheme: String,
    /// The host: lower-case, IDNA A-labels, no trailing dot; an IPv6 address in brackets.
    pub host: String,
    /// The explicit port, else the scheme's default.
    pub port: u16,
    /// The path, percent-encoded and with dot segments resolved (`/a/b`).
    pub path: String,
    /// The host as an address, when it is an address literal (in any form the URL parser
    /// reads: `0`, `0x7f.1`, `[::ffff:127.0.0.1]`); an IPv4-mapped IPv6 address is its IPv4
    /// address. `context.url.ip`, Cedar's `ipaddr`.
    pub ip: Option<IpAddr>,
    /// Whether the host is public: a public unicast address, or a name under a public suffix
    /// ([`escepine_host_class`]). `context.url.public`.
    pub public: bool,
}

/// Why a URL has no facts (its request is denied).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not an absolute URL.
    #[error("`{raw}` is not an absolute URL: {reason}")]
    Unparseable {
        /// The URL as given.
        raw: String,
        /// What the parser said.
        reason: String,
    },
    /// No host to authorize (`mailto:`, `file:///…`, `data:`…).
    #[error("`{raw}` has no host to authorize")]
    NoHost {
        /// The URL as given.
        raw: String,
    },
    /// A host that cannot be IDNA-normalised.
    #[error("the host of `{raw}` cannot be IDNA-normalised")]
    BadHost {
        /// The URL as given.
        raw: String,
    },
    /// No explicit port and no default port for the scheme.
    #[error("`{raw}` has no port and the scheme `{scheme}` has no default port")]
    NoPort {
        /// The URL as given.
        raw: String,
        /// The scheme.
        scheme: String,
    },
}

/// Schemes whose hosts the WHATWG URL parser normalises itself (lower case, IDNA, IPv4 forms).
fn is_special(scheme: &str) -> bool {
    matches!(scheme, "http" | "https" | "ws" | "wss" | "ftp" | "file")
}

impl UrlFacts {
    /// Parse `raw` into its facts.
    ///
    /// # Errors
    /// [`UrlError`] when `raw` is not an absolute URL, has no host, has a host that cannot be
    /// normalised, or has no port (explicit or the scheme's default).
    pub fn parse(raw: &str) -> Result<Self, UrlError> {
        let url = Url::parse(raw).map_err(|e| UrlError::Unparseable {
            raw: raw.to_string(),
            reason: e.to_string(),
        })?;
        let no_host = || UrlError::NoHost {
            raw: raw.to_string(),
        };
        let host = match url.host() {
            None => return Err(no_host()),
            Some(Host::Ipv4(a)) => a.to_string(),
            Some(Host::Ipv6(a)) => format!("[{a}]"),
            Some(Host::Domain(d)) => {
                let ascii = if is_special(url.scheme()) {
                    // Already percent-decoded, mapped (lower case) and converted to A-labels.
                    d.to_string()
                } else {
                    // An opaque host: kept as written (percent-encoded, any case).
                    opaque_to_ascii(d).ok_or_else(|| UrlError::BadHost {
                        raw: raw.to_string(),
                    })?
                };
                let trimmed = ascii.trim_end_matches('.');
                if trimmed.is_empty() {
                    return Err(no_host());
                }
                trimmed.to_string()
            }
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| UrlError::NoPort {
                raw: raw.to_string(),
                scheme: url.scheme().to_string(),
            })?;
        let ip = address_of(&host);
        let public = match ip {
            Some(ip) => host_class::non_public_address(ip).is_none(),
            None => host_class::non_public_name(&host).is_none(),
        };
        Ok(Self {
            raw: raw.to_string(),
            scheme: url.scheme().to_string(),
            host,
            port,
            path: url.path().to_string(),
            ip,
            public,
        })
    }

    /// The origin these facts name: the scheme, the host exactly as Cedar saw it (an address
    /// literal as its address, IPv4-mapped as IPv4) and the port (explicit or the default).
    pub fn origin(&self) -> Origin {
        Origin {
            scheme: self.scheme.clone(),
            host: match self.ip {
                Some(ip) => OriginHost::Ip(ip),
                None => OriginHost::Name(self.host.clone()),
            },
            port: self.port,
        }
    }

    /// The facts as the Cedar record `{ raw, scheme, host, port, path, origin, public, ip? }`
    /// (`origin` as the egress grant spells it: `scheme://host:port`).
    pub fn to_expression(&self) -> RestrictedExpression {
        let fields = [
            ("raw", RestrictedExpression::new_string(self.raw.clone())),
            (
                "scheme",
                RestrictedExpression::new_string(self.scheme.clone()),
            ),
            ("host", RestrictedExpression::new_string(self.host.clone())),
            ("port", RestrictedExpression::new_long(i64::from(self.port))),
            ("path", RestrictedExpression::new_string(self.path.clone())),
            (
                "origin",
                RestrictedExpression::new_string(self.origin().to_string()),
            ),
            ("public", RestrictedExpression::new_bool(self.public)),
        ];
        let ip = self.ip.map(|ip| {
            (
                "ip".to_string(),
                RestrictedExpression::new_ip(ip.to_string()),
            )
        });
        // The keys are distinct, so the record always builds; the fallback is unreachable but
        // keeps this function total.
        RestrictedExpression::new_record(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .chain(ip),
        )
        .unwrap_or_else(|_| RestrictedExpression::new_string(self.raw.clone()))
    }
}

/// The address a normalised host names, if it is an address literal. Opaque hosts (of
/// non-special schemes) are read as a web URL's host would be (`0x7f.1` is `127.0.0.1`).
fn address_of(host: &str) -> Option<IpAddr> {
    let ip = match Host::parse(host).ok()? {
        Host::Ipv4(a) => IpAddr::V4(a),
        Host::Ipv6(a) => IpAddr::V6(a),
        Host::Domain(_) => return None,
    };
    Some(host_class::canonical_ip(ip))
}

/// Normalise an opaque (non-special scheme) host: percent-decode, then UTS #46 to A-labels
/// (which also lower-cases).
fn opaque_to_ascii(host: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(host)
        .decode_utf8()
        .ok()?;
    idna::domain_to_ascii(&decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(raw: &str) -> String {
        UrlFacts::parse(raw).expect("parses").host
    }

    #[test]
    fn facts_of_a_plain_url() {
        let f = UrlFacts::parse("https://example.com/a/../b?q=1#x").expect("parses");
        assert_eq!(f.scheme, "https");
        assert_eq!(f.host, "example.com");
        assert_eq!(f.port, 443);
        assert_eq!(f.path, "/b");
        assert_eq!(f.raw, "https://example.com/a/../b?q=1#x");
    }

    #[test]
    fn hosts_have_one_spelling() {
        assert_eq!(host("https://LinkedIn.COM/x"), "linkedin.com");
        assert_eq!(host("https://www.linkedin.com./"), "www.linkedin.com");
        assert_eq!(host("https://linkedin.com../"), "linkedin.com");
        assert_eq!(host("https://user:pw@linkedin.com"), "linkedin.com");
        assert_eq!(host("https://evil.com/?linkedin.com"), "evil.com");
        assert_eq!(
            host("https://linkedin.com.evil.com"),
            "linkedin.com.evil.com"
        );
        assert_eq!(host("https://bücher.example/"), "xn--bcher-kva.example");
        assert_eq!(
            host("https://XN--BCHER-KVA.example/"),
            "xn--bcher-kva.example"
        );
        assert_eq!(host("https://linkedin%2Ecom/"), "linkedin.com");
        assert_eq!(host("http://0x7f.1/"), "127.0.0.1");
        assert_eq!(host("http://[::1]:8080/"), "[::1]");
        assert_eq!(host("foo://LinkedIn.COM.:9/x"), "linkedin.com");
        assert_eq!(
            host("foo://B%C3%BCcher.example:1/"),
            "xn--bcher-kva.example"
        );
    }

    #[test]
    fn address_and_public_facts() {
        let facts = |raw: &str| {
            let f = UrlFacts::parse(raw).expect("parses");
            (f.ip.map(|i| i.to_string()), f.public)
        };
        assert_eq!(facts("https://example.com/"), (None, true));
        assert_eq!(
            facts("https://93.184.216.34/"),
            (Some("93.184.216.34".into()), true)
        );
        for (raw, ip) in [
            ("http://127.0.0.2/", "127.0.0.2"),
            ("http://0/", "0.0.0.0"),
            ("http://[::ffff:127.0.0.1]/", "127.0.0.1"),
            ("http://169.254.170.2/", "169.254.170.2"),
            ("http://10.0.0.1/", "10.0.0.1"),
            ("http://172.16.5.4/", "172.16.5.4"),
            ("http://192.168.0.1/", "192.168.0.1"),
            ("http://100.100.100.200/", "100.100.100.200"),
            ("http://2130706433/", "127.0.0.1"),
            ("foo://0x7f.1:1/", "127.0.0.1"),
        ] {
            assert_eq!(facts(raw), (Some(ip.to_string()), false), "{raw}");
        }
        for raw in [
            "https://kubernetes.default.svc/",
            "http://printer.lan/",
            "http://intranet/",
            "https://metadata.google.internal/",
            "https://nas.home.arpa/",
        ] {
            assert_eq!(facts(raw), (None, false), "{raw}");
        }
    }

    #[test]
    fn ports_default_by_scheme() {
        let f = UrlFacts::parse("HTTPS://WWW.LINKEDIN.COM:443").expect("parses");
        assert_eq!(
            (f.scheme.as_str(), f.host.as_str(), f.port),
            ("https", "www.linkedin.com", 443)
        );
        assert_eq!(
            UrlFacts::parse("http://a.b:8080/").expect("parses").port,
            8080
        );
        assert_eq!(UrlFacts::parse("http://a.b/").expect("parses").port, 80);
        assert!(matches!(
            UrlFacts::parse("foo://a.b/"),
            Err(UrlError::NoPort { .. })
        ));
    }

    #[test]
    fn origins_agree_with_the_facts() {
        let origin = |raw: &str| UrlFacts::parse(raw).expect("parses").origin().to_string();
        for (raw, want) in [
            (
                "HTTPS://WWW.LinkedIn.COM./a?b",
                "https://www.linkedin.com:443",
            ),
            (
                "https://bücher.example:8443/",
                "https://xn--bcher-kva.example:8443",
            ),
            ("http://0x7f.1/", "http://127.0.0.1:80"),
            ("http://[::ffff:127.0.0.1]:81/", "http://127.0.0.1:81"),
            ("http://[::1]/", "http://[::1]:80"),
            (
                "https://user:pw@linkedin.com:443/",
                "https://linkedin.com:443",
            ),
        ] {
            assert_eq!(origin(raw), want, "{raw}");
        }
    }

    #[test]
    fn no_host_no_facts() {
        for raw in [
            "mailto:a@b.c",
            "file:///etc/passwd",
            "data:text/plain,hi",
            "https://./",
        ] {
            assert!(
                matches!(
                    UrlFacts::parse(raw),
                    Err(UrlError::NoHost { .. } | UrlError::Unparseable { .. })
                ),
                "{raw}"
            );
        }
        assert!(matches!(
            UrlFacts::parse("not a url"),
            Err(UrlError::Unparseable { .. })
        ));
    }
}
