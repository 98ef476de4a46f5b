//! The one rule for every URL the resource server is configured with or discovers (the
//! resource, an issuer, a `jwks_uri`): `https`, or `http` on a loopback address only; no user
//! information, no fragment.

use url::{Host, Url};

/// Why a URL breaks the rule.
pub fn problem(url: &Url) -> Option<String> {
    if !url.username().is_empty() || url.password().is_some() {
        return Some("a URL with user information is refused".into());
    }
    if url.fragment().is_some() {
        return Some("a URL with a fragment is refused".into());
    }
    match url.scheme() {
        "https" => None,
        "http" if is_loopback(url) => None,
        "http" => Some(format!(
            "`http` is accepted on a loopback address only (127.0.0.0/8, ::1, localhost); \
             use `https` for `{}`",
            url.host_str().unwrap_or("")
        )),
        other => Some(format!(
            "the scheme `{other}` is neither `https` nor `http`"
        )),
    }
}

/// Whether the URL's host is a loopback address or `localhost`.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: &str) -> Option<String> {
        problem(&Url::parse(s).unwrap())
    }

    #[test]
    fn https_anywhere_http_on_loopback_only() {
        assert_eq!(check("https://idp.example.com/"), None);
        assert_eq!(check("http://127.0.0.1:9000/"), None);
        assert_eq!(check("http://127.8.9.10/"), None);
        assert_eq!(check("http://[::1]:80/mcp"), None);
        assert_eq!(check("http://localhost:8787/mcp"), None);
        assert!(check("http://192.0.2.1/jwks").is_some());
        assert!(check("http://idp.example.com/").is_some());
        // An IPv4-mapped address is not `::1`: refused rather than interpreted.
        assert!(check("http://[::ffff:127.0.0.1]/").is_some());
        assert!(check("ftp://127.0.0.1/").is_some());
        assert!(check("https://user:pw@idp.example.com/").is_some());
        assert!(check("https://idp.example.com/#frag").is_some());
    }
}
