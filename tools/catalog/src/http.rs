//! The HTTP(S) client every tool uses: `ureq` (blocking, rustls with ring, webpki roots, gzip)
//! behind the proxy the environment names.
//!
//! # Proxies
//! In the sandbox the only way out is the egress proxy, given as `HTTP_PROXY`/`HTTPS_PROXY`
//! (and their lower-case spellings). A request to an `https` URL uses `https_proxy`, then
//! `HTTPS_PROXY`, then `all_proxy`/`ALL_PROXY`; a request to an `http` URL uses `http_proxy`,
//! `HTTP_PROXY`, then `all_proxy`/`ALL_PROXY`. `NO_PROXY`/`no_proxy` (comma-separated host names,
//! `.suffix` or `*.suffix` for sub-domains, `*` for all) bypasses it. Loopback is **not** bypassed
//! implicitly: inside the sandbox, loopback is the sandbox's own, and a test's or demo's loopback
//! server is reachable only through the proxy (which admits it by an overlay entry). The client
//! tunnels every proxied request with `CONNECT host:port` (plain `http` targets too) and never
//! resolves a proxied target's name itself: the proxy does, under its own address policy.
//!
//! # Redirects
//! The client never follows a redirect on its own: a 3xx is returned to the caller, which decides
//! (the page readers follow redirects within the page's own origin only, so a redirect can never
//! carry a read to a host that was not authorized).
//!
//! # Failures
//! Transport failures are classified once, here: timeouts, refused, reset or aborted connections
//! and a proxy answering a `CONNECT` with anything but 200 or 403 are transient; a proxy's 403
//! (the egress policy refused the target), TLS failures, malformed responses and oversized bodies
//! are permanent. [`check_api_status`] classifies the status of an API's answer (408, 425, 429 and
//! 5xx transient, any other non-2xx permanent).

use std::collections::HashMap;
use std::io;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;
use ureq::{Agent, Proxy};
use url::Url;

use crate::error::ToolError;

/// The `User-Agent` of every request, and (its first word) the agent robots.txt is matched for.
pub const USER_AGENT: &str = concat!("escepine-catalog/", env!("CARGO_PKG_VERSION"));
/// The product token robots.txt rules are matched against.
pub const ROBOTS_AGENT: &str = "escepine-catalog";

/// Bound of an API's JSON answer.
pub const API_BODY_LIMIT: u64 = 16 * 1024 * 1024;
/// Bound of a page's body.
pub const PAGE_BODY_LIMIT: u64 = 8 * 1024 * 1024;

/// The proxy configuration of the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    http: Option<String>,
    https: Option<String>,
    no_proxy: Vec<String>,
}

impl ProxyEnv {
    /// The proxy variables of the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The proxy variables from any lookup by name.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let first = |names: &[&str]| {
            names.iter().find_map(|n| {
                lookup(n)
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
            })
        };
        let no_proxy = first(&["no_proxy", "NO_PROXY"])
            .map(|v| {
                v.split(',')
                    .map(|e| e.trim().to_ascii_lowercase())
                    .filter(|e| !e.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Self {
            http: first(&["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]),
            https: first(&["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]),
            no_proxy,
        }
    }

    /// The proxy to reach `url` through, if any.
    pub fn proxy_for(&self, url: &Url) -> Option<&str> {
        let proxy = match url.scheme() {
            "https" => self.https.as_deref(),
            "http" => self.http.as_deref(),
            _ => None,
        }?;
        let host = url
            .host_str()?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let bypass = self.no_proxy.iter().any(|entry| {
            if entry == "*" {
                return true;
            }
            // An entry may carry a port (`host:8080`); ports are not distinguished here.
            let entry = match entry.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
                _ => entry.as_str(),
            };
            let entry = entry.trim_start_matches('[').trim_end_matches(']');
            let suffix = entry.trim_start_matches("*.").trim_start_matches('.');
            host == suffix || host.ends_with(&format!(".{suffix}"))
        });
        (!bypass).then_some(proxy)
    }
}

/// One HTTP answer, its body read (bounded).
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `Location`, if any.
    pub location: Option<String>,
    /// The body (decoded from gzip if so sent).
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body decoded as JSON of type `T`; anything else is a permanent "bad response".
    ///
    /// # Errors
    /// The body is not JSON of that shape.
    pub fn json<T: DeserializeOwned>(&self, what: &str) -> Result<T, ToolError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| ToolError::Permanent(format!("{what} sent a malformed answer ({e})")))
    }

    /// The media type of `Content-Type`, lower case, without parameters.
    pub fn media_type(&self) -> Option<String> {
        self.content_type.as_deref().map(|ct| {
            ct.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
    }
}

/// A request method the tools use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST` with a JSON body.
    Post,
}

/// The client: one `ureq` agent per proxy in use (connections are pooled per agent).
#[derive(Debug)]
pub struct Http {
    proxies: ProxyEnv,
    timeout: Duration,
    agents: Mutex<HashMap<Option<String>, Agent>>,
}

impl Http {
    /// A client using `proxies`, each request (connection, sending, answer, body) bounded by
    /// `timeout`.
    pub fn new(proxies: ProxyEnv, timeout: Duration) -> Self {
        Self {
            proxies,
            timeout,
            agents: Mutex::new(HashMap::new()),
        }
    }

    fn agent(&self, url: &Url) -> Result<Agent, ToolError> {
        let proxy = self.proxies.proxy_for(url).map(str::to_string);
        let mut agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(agent) = agents.get(&proxy) {
            return Ok(agent.clone());
        }
        let parsed = match &proxy {
            Some(p) => Some(Proxy::new(p).map_err(|_| {
                ToolError::Config(
                    "the proxy variable for this URL's scheme is not a proxy URL".into(),
                )
            })?),
            None => None,
        };
        let agent: Agent = Agent::config_builder()
            .proxy(parsed)
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(USER_AGENT)
            .timeout_global(Some(self.timeout))
            .timeout_connect(Some(self.timeout.min(Duration::from_secs(10))))
            .build()
            .into();
        agents.insert(proxy, agent.clone());
        Ok(agent)
    }

    /// `GET url` with `headers`, reading at most `limit` bytes of body.
    ///
    /// # Errors
    /// Transport failures, classified (see the module documentation).
    pub fn get(
        &self,
        url: &Url,
        headers: &[(&str, &str)],
        limit: u64,
    ) -> Result<Response, ToolError> {
        self.send(Method::Get, url, headers, None, limit)
    }

    /// `POST url` with a JSON body and `headers`, reading at most `limit` bytes of answer.
    ///
    /// # Errors
    /// Transport failures, classified (see the module documentation).
    pub fn post_json(
        &self,
        url: &Url,
        headers: &[(&str, &str)],
        body: &Value,
        limit: u64,
    ) -> Result<Response, ToolError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| ToolError::Permanent(format!("cannot encode the request: {e}")))?;
        self.send(Method::Post, url, headers, Some(bytes), limit)
    }

    fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
        limit: u64,
    ) -> Result<Response, ToolError> {
        let agent = self.agent(url)?;
        let target = url.as_str();
        let result = match method {
            Method::Get => {
                let mut req = agent.get(target);
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                req.call()
            }
            Method::Post => {
                let mut req = agent
                    .post(target)
                    .header("content-type", "application/json");
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                req.send(body.unwrap_or_default())
            }
        };
        let mut resp = result.map_err(|e| classify(e, url))?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let status = resp.status().as_u16();
        let content_type = header("content-type");
        let location = header("location");
        let body = resp
            .body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| classify(e, url))?;
        Ok(Response {
            status,
            content_type,
            location,
            body,
        })
    }
}

/// Where a request went, for messages: scheme, host and port, never the path or query (which may
/// carry what an operator considers sensitive) nor user information.
pub fn origin_of(url: &Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{}://{h}:{p}", url.scheme()),
        (Some(h), None) => format!("{}://{h}", url.scheme()),
        _ => url.scheme().to_string(),
    }
}

/// Classify a transport error of a request to `url`.
fn classify(err: ureq::Error, url: &Url) -> ToolError {
    use ureq::Error as E;
    let at = origin_of(url);
    match err {
        E::Timeout(t) => ToolError::Transient(format!("{at}: timed out ({t})")),
        E::Io(e) => io_error(&e, &at),
        E::ConnectionFailed => ToolError::Transient(format!("{at}: the connection failed")),
        E::HostNotFound => ToolError::Transient(format!("{at}: the host name did not resolve")),
        E::ConnectProxyFailed(reason) => {
            if reason.contains(" 403") {
                ToolError::Permanent(format!(
                    "{at}: the egress proxy refused the target ({reason})"
                ))
            } else {
                ToolError::Transient(format!("{at}: the proxy failed ({reason})"))
            }
        }
        E::BodyExceedsLimit(n) => {
            ToolError::Permanent(format!("{at}: the answer is larger than {n} bytes"))
        }
        other => ToolError::Permanent(format!("{at}: {other}")),
    }
}

fn io_error(e: &io::Error, at: &str) -> ToolError {
    use io::ErrorKind as K;
    match e.kind() {
        K::TimedOut
        | K::WouldBlock
        | K::ConnectionRefused
        | K::ConnectionReset
        | K::ConnectionAborted
        | K::NotConnected
        | K::BrokenPipe
        | K::UnexpectedEof
        | K::Interrupted
        | K::AddrNotAvailable
        | K::NetworkUnreachable
        | K::HostUnreachable
        | K::NetworkDown => ToolError::Transient(format!("{at}: {e}")),
        _ => ToolError::Permanent(format!("{at}: {e}")),
    }
}

/// Classify the status of an API's answer: 2xx passes; 408, 425, 429 and 5xx are transient;
/// any other status is permanent. The message carries the API's own error text when the body
/// has one (`error`, `message` or `detail`), cut to 300 characters.
///
/// # Errors
/// A status other than 2xx.
pub fn check_api_status(resp: &Response, api: &str) -> Result<(), ToolError> {
    let status = resp.status;
    if (200..300).contains(&status) {
        return Ok(());
    }
    let detail = error_detail(resp);
    let msg = format!("{api} answered HTTP {status}{detail}");
    if matches!(status, 408 | 425 | 429 | 500..=599) {
        Err(ToolError::Transient(msg))
    } else {
        Err(ToolError::Permanent(msg))
    }
}

fn error_detail(resp: &Response) -> String {
    // `{"error": "…"}`, `{"message": "…"}`, `{"detail": "…"}`, or one level deeper
    // (`{"detail": {"error": "…"}}`, `{"error": {"message": "…"}}`).
    fn message(v: &Value, depth: u8) -> Option<String> {
        ["error", "message", "detail"]
            .iter()
            .find_map(|k| match v.get(*k) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(inner @ Value::Object(_)) if depth > 0 => message(inner, depth - 1),
                _ => None,
            })
    }
    let from_json = serde_json::from_slice::<Value>(&resp.body)
        .ok()
        .and_then(|v| message(&v, 1));
    let text = from_json.unwrap_or_else(|| resp.text());
    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return String::new();
    }
    let cut: String = text.chars().take(300).collect();
    let ellipsis = if cut.len() < text.len() { "…" } else { "" };
    format!(": {cut}{ellipsis}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> ProxyEnv {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ProxyEnv::from_lookup(|n| map.get(n).cloned())
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn the_proxy_follows_the_scheme() {
        let p = env(&[
            ("HTTP_PROXY", "http://127.0.0.1:3128"),
            ("HTTPS_PROXY", "http://127.0.0.1:3129"),
        ]);
        assert_eq!(
            p.proxy_for(&url("http://a.example/")),
            Some("http://127.0.0.1:3128")
        );
        assert_eq!(
            p.proxy_for(&url("https://a.example/")),
            Some("http://127.0.0.1:3129")
        );
        // Loopback is not bypassed implicitly.
        assert_eq!(
            p.proxy_for(&url("http://127.0.0.1:9/")),
            Some("http://127.0.0.1:3128")
        );
        assert_eq!(env(&[]).proxy_for(&url("https://a.example/")), None);
    }

    #[test]
    fn lower_case_and_all_proxy_are_honoured() {
        let p = env(&[
            ("http_proxy", "http://lower:1"),
            ("HTTP_PROXY", "http://upper:1"),
            ("ALL_PROXY", "http://all:1"),
        ]);
        assert_eq!(
            p.proxy_for(&url("http://a.example/")),
            Some("http://lower:1")
        );
        assert_eq!(
            p.proxy_for(&url("https://a.example/")),
            Some("http://all:1")
        );
    }

    #[test]
    fn no_proxy_bypasses_hosts_and_suffixes() {
        let p = env(&[
            ("HTTPS_PROXY", "http://p:1"),
            (
                "NO_PROXY",
                "internal.example, .corp.example,*.dev.example,10.0.0.1:80,[::1]",
            ),
        ]);
        for bypassed in [
            "https://internal.example/",
            "https://x.internal.example/",
            "https://corp.example/",
            "https://a.b.corp.example/",
            "https://x.dev.example/",
            "https://10.0.0.1/",
            "https://[::1]:8443/",
        ] {
            assert_eq!(p.proxy_for(&url(bypassed)), None, "{bypassed}");
        }
        for proxied in ["https://notinternal.example/", "https://example/"] {
            assert!(p.proxy_for(&url(proxied)).is_some(), "{proxied}");
        }
        let all = env(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "*")]);
        assert_eq!(all.proxy_for(&url("https://a.example/")), None);
    }

    fn response(status: u16, body: &str) -> Response {
        Response {
            status,
            content_type: Some("application/json".into()),
            location: None,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn api_statuses_are_classified() {
        assert!(check_api_status(&response(200, "{}"), "api").is_ok());
        for s in [408, 425, 429, 500, 502, 503, 504] {
            let e = check_api_status(&response(s, ""), "api").unwrap_err();
            assert!(e.is_transient(), "{s}");
        }
        for s in [400, 401, 402, 403, 404, 409, 422] {
            let e = check_api_status(&response(s, r#"{"error": "bad key"}"#), "api").unwrap_err();
            assert!(!e.is_transient(), "{s}");
            assert_eq!(e.to_string(), format!("api answered HTTP {s}: bad key"));
        }
        let long = "x".repeat(1000);
        let e = check_api_status(&response(400, &long), "api").unwrap_err();
        assert!(e.to_string().len() < 400);
    }

    #[test]
    fn media_type_drops_parameters() {
        let mut r = response(200, "");
        r.content_type = Some("Text/HTML; charset=utf-8".into());
        assert_eq!(r.media_type().as_deref(), Some("text/html"));
    }

    #[test]
    fn origin_names_no_path_or_user() {
        assert_eq!(
            origin_of(&url("https://u:p@a.example/secret?q=1")),
            "https://a.example:443"
        );
    }
}
