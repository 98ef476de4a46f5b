//! Remote endpoints (`"transport": "mcp-http"`): the server's URL and origin, the tool's name on
//! it, and how the runtime authenticates to it — with credentials named, never written.
//!
//! ```json
//! "endpoint": {
//!   "transport": "mcp-http",
//!   "url": "https://notes.example.com/mcp",
//!   "tool": "search",
//!   "definition_sha256": "…",
//!   "auth": {"oauth": {"token_endpoint": "https://id.example.com/token",
//!                      "client_id": "escepine", "client_secret": "NOTES_CLIENT_SECRET",
//!                      "scopes": ["notes"], "resource": "https://notes.example.com/mcp"}}
//! }
//! ```
//!
//! A URL (the server's, a token endpoint's) is `https`, or plain `http` on a loopback host
//! (127.0.0.0/8, `[::1]`, `localhost`); it has no user information and no fragment
//! ([`RemoteUrl::parse`]). The runtime connects to nothing but the origins of these URLs, and
//! each must be covered by the record's `sandbox_profile.egress` (and so by the deployment
//! envelope).

use std::fmt;
use std::net::IpAddr;

use crate::egress::EgressEntry;

/// A URL the runtime may connect to for a remote endpoint, with its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    /// The URL as written (parsed and normalized by the `url` crate).
    pub url: url::Url,
    /// `https` or `http`.
    pub scheme: String,
    /// The host, lower-case (IDNA A-labels), an IPv6 literal without brackets.
    pub host: String,
    /// The port, explicit or the scheme's default.
    pub port: u16,
}

impl RemoteUrl {
    /// Parse a remote endpoint's URL (see the module documentation).
    ///
    /// # Errors
    /// What is wrong with it, for a diagnostic.
    pub fn parse(text: &str) -> Result<Self, String> {
        let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            Some(url::Host::Ipv6(a)) => a.to_string(),
            None => return Err(format!("`{text}` has no host")),
        };
        let scheme = url.scheme().to_string();
        match scheme.as_str() {
            "https" => {}
            "http" if is_loopback(&host) => {}
            "http" => {
                return Err(format!(
                    "`{text}`: plain http is allowed only for a loopback host (127.0.0.0/8, \
                     [::1], localhost); use https"
                ))
            }
            other => return Err(format!("`{text}`: the scheme `{other}` is not https")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "`{text}` carries user information; credentials are named in `auth`, never \
                 written in a URL"
            ));
        }
        if url.fragment().is_some() {
            return Err(format!("`{text}` has a fragment"));
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("`{text}` has no port"))?;
        Ok(Self {
            url,
            scheme,
            host,
            port,
        })
    }

    /// The origin as an egress entry would name it: `host:port` (`[v6]:port`).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The origin as flows and egress grants spell it: `scheme://host:port`.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority())
    }

    /// Whether `entries` admit this URL's origin.
    pub fn admitted_by(&self, entries: &[EgressEntry]) -> bool {
        entries.iter().any(|e| e.admits(&self.host, self.port))
    }

    /// Whether `other` has the same origin (scheme, host, port).
    pub fn same_origin(&self, other: &url::Url) -> bool {
        Self::parse(other.as_str())
            .is_ok_and(|o| o.scheme == self.scheme && o.host == self.host && o.port == self.port)
    }
}

impl fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.url.as_str())
    }
}

/// Whether `host` is a loopback host: `localhost` or an address of 127.0.0.0/8 or `::1`.
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A remote endpoint: where the server is, the tool's name there, how to authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSpec {
    /// The server's MCP endpoint.
    pub url: RemoteUrl,
    /// The server's name for the tool (`tools/list`'s `name`).
    pub tool: String,
    /// How the runtime authenticates to the server.
    pub auth: RemoteAuth,
}

impl RemoteSpec {
    /// Every URL the runtime connects to for this endpoint: the server's, then the token
    /// endpoint's, if any.
    pub fn urls(&self) -> Vec<&RemoteUrl> {
        let mut out = vec![&self.url];
        if let Some(g) = self.auth.grant() {
            out.push(&g.token_endpoint);
        }
        out
    }
}

/// How the runtime authenticates to a remote server. Every credential is a secret *name*,
/// whose value the runtime's secret source gives and the record's `auth.secrets` declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteAuth {
    /// No credential.
    None,
    /// `{"bearer": "NAME"}`: the secret's value is sent as a bearer token.
    Bearer {
        /// The secret's name.
        secret: String,
    },
    /// `{"oauth": {…}}`: a token of the client-credentials grant (RFC 6749 §4.4), for
    /// `resource` (RFC 8707) when given.
    ClientCredentials(TokenGrant),
    /// `{"token_exchange": {…}}`: the caller's own access token exchanged (RFC 8693) for one
    /// meant for `audience`.
    TokenExchange(TokenGrant),
}

impl RemoteAuth {
    /// The token grant, for the OAuth kinds.
    pub fn grant(&self) -> Option<&TokenGrant> {
        match self {
            Self::ClientCredentials(g) | Self::TokenExchange(g) => Some(g),
            Self::None | Self::Bearer { .. } => None,
        }
    }

    /// The secret names the authentication needs.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Self::None => Vec::new(),
            Self::Bearer { secret } => vec![secret],
            Self::ClientCredentials(g) | Self::TokenExchange(g) => vec![&g.client_secret],
        }
    }

    /// The record's key (`bearer`, `oauth`, `token_exchange`), `None` without authentication.
    pub fn key(&self) -> Option<&'static str> {
        match self {
            Self::None => None,
            Self::Bearer { .. } => Some("bearer"),
            Self::ClientCredentials(_) => Some("oauth"),
            Self::TokenExchange(_) => Some("token_exchange"),
        }
    }
}

/// A token request's parameters: where, as which client, for what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    /// The authorization server's token endpoint.
    pub token_endpoint: RemoteUrl,
    /// The client id.
    pub client_id: String,
    /// The name of the secret holding the client secret.
    pub client_secret: String,
    /// The scopes asked for (none: the server's default).
    pub scopes: Vec<String>,
    /// `resource` (RFC 8707) of a client-credentials grant.
    pub resource: Option<String>,
    /// `audience` (RFC 8693) of a token exchange.
    pub audience: Option<String>,
}

/// The record's `endpoint.auth` for `auth` (`None` without authentication): what registration
/// reads back to the same value.
pub fn auth_json(auth: &RemoteAuth) -> Option<serde_json::Value> {
    use serde_json::{json, Map, Value};
    let grant = |g: &TokenGrant, target: (&str, &Option<String>)| {
        let mut m = Map::new();
        m.insert(
            "token_endpoint".into(),
            Value::from(g.token_endpoint.to_string()),
        );
        m.insert("client_id".into(), Value::from(g.client_id.clone()));
        m.insert("client_secret".into(), Value::from(g.client_secret.clone()));
        if !g.scopes.is_empty() {
            m.insert("scopes".into(), Value::from(g.scopes.clone()));
        }
        if let Some(t) = target.1 {
            m.insert(target.0.into(), Value::from(t.clone()));
        }
        Value::Object(m)
    };
    match auth {
        RemoteAuth::None => None,
        RemoteAuth::Bearer { secret } => Some(json!({ "bearer": secret })),
        RemoteAuth::ClientCredentials(g) => {
            Some(json!({ "oauth": grant(g, ("resource", &g.resource)) }))
        }
        RemoteAuth::TokenExchange(g) => {
            Some(json!({ "token_exchange": grant(g, ("audience", &g.audience)) }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_https_or_loopback_http_without_user_or_fragment() {
        let u = RemoteUrl::parse("https://Notes.Example.com/mcp").expect("https");
        assert_eq!((u.host.as_str(), u.port), ("notes.example.com", 443));
        assert_eq!(u.authority(), "notes.example.com:443");
        let u = RemoteUrl::parse("http://127.0.0.1:8080/mcp").expect("loopback http");
        assert_eq!(u.authority(), "127.0.0.1:8080");
        let u = RemoteUrl::parse("http://[::1]:9/mcp").expect("v6 loopback");
        assert_eq!(u.authority(), "[::1]:9");
        for bad in [
            "http://10.0.0.1/mcp",
            "http://example.com/mcp",
            "ftp://example.com/",
            "https://user:pw@example.com/mcp",
            "https://example.com/mcp#x",
            "/mcp",
        ] {
            assert!(RemoteUrl::parse(bad).is_err(), "{bad}");
        }
        let u = RemoteUrl::parse("https://a.example/mcp").expect("url");
        assert!(u.same_origin(&url::Url::parse("https://a.example:443/other").expect("url")));
        assert!(!u.same_origin(&url::Url::parse("https://b.example/mcp").expect("url")));
        assert!(!u.same_origin(&url::Url::parse("http://a.example:443/mcp").expect("url")));
    }
}
