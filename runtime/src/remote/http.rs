//! One MCP client session with a remote server over streamable HTTP, request by request.
//!
//! The session speaks the 2026-07-28 revision when the server does: no `initialize`, no
//! session id; each request carries the revision and the client's capabilities in its `_meta`
//! and in the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers. A server that does
//! not answer `server/discover` with `2026-07-28` among its `supportedVersions` gets the
//! 2025-11-25 handshake instead: `initialize`, `notifications/initialized`, then every request
//! in the session its `Mcp-Session-Id` names, which is ended by `DELETE` afterwards.
//!
//! Every request goes to the endpoint's own URL; no redirect is followed (a 3xx is a refusal
//! naming where it pointed), so the session never reaches another origin. An answer is JSON, or
//! an event stream read until the answer to the request (other messages are skipped), bounded
//! in bytes either way.

use std::sync::Arc;
use std::time::Duration;

use escepine_registry::remote::RemoteUrl;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::mcp::rpc::{error_answer, Exchange, SessionError, PROTOCOL_VERSION};
use crate::telemetry::{TraceContext, META_TRACEPARENT, META_TRACESTATE};

/// The stateless revision.
pub const MODERN: &str = "2026-07-28";

/// The revisions with an `initialize` handshake this client accepts from a server.
const LEGACY: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The revision a session speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28: stateless.
    Modern,
    /// An `initialize` session of this revision.
    Legacy(String),
}

/// What one HTTP request of a session was, for the attempt's evidence: `POST host:port/path
/// (method)`.
pub(crate) fn request_line(method: &str, url: &RemoteUrl, what: &str) -> String {
    format!("{method} {}{} ({what})", url.authority(), url.url.path())
}

/// An open session.
pub(crate) struct HttpSession {
    http: reqwest::Client,
    url: RemoteUrl,
    bearer: Option<Arc<str>>,
    /// The attempt's trace context, sent as `traceparent` / `tracestate` headers.
    trace: Option<TraceContext>,
    era: Era,
    session_id: Option<String>,
    next_id: u64,
    max_bytes: usize,
    /// The requests sent, as evidence lines.
    pub(crate) requests: Vec<String>,
    /// Whether the server answered 401 (the token was refused).
    pub(crate) unauthorized: bool,
    /// What the server said of itself (`serverInfo`), from `server/discover` or `initialize`.
    pub(crate) server_info: Option<Value>,
}

impl HttpSession {
    /// Open a session with the server at `url`: `era` when the caller knows it (a server seen
    /// before), else discovered (see the module documentation).
    pub(crate) async fn open(
        http: reqwest::Client,
        url: RemoteUrl,
        bearer: Option<Arc<str>>,
        trace: Option<TraceContext>,
        era: Option<Era>,
        max_bytes: usize,
    ) -> Result<Self, (Self, SessionError)> {
        let mut s = Self {
            http,
            url,
            bearer,
            trace,
            era: era.clone().unwrap_or(Era::Modern),
            session_id: None,
            next_id: 0,
            max_bytes,
            requests: Vec::new(),
            unauthorized: false,
            server_info: None,
        };
        let outcome = match era {
            Some(Era::Modern) => Ok(()),
            Some(Era::Legacy(_)) => s.initialize().await,
            None => match s.discover().await {
                Ok(true) => Ok(()),
                Ok(false) => s.initialize().await,
                Err(e) => Err(e),
            },
        };
        match outcome {
            Ok(()) => Ok(s),
            Err(e) => Err((s, e)),
        }
    }

    /// The revision the session speaks.
    pub(crate) fn era(&self) -> &Era {
        &self.era
    }

    /// `server/discover`: whether the server speaks 2026-07-28. A refusal that says nothing
    /// of the credential or of the server's availability means it does not.
    async fn discover(&mut self) -> Result<bool, SessionError> {
        self.era = Era::Modern;
        match self.exchange("server/discover", json!({})).await {
            Ok((result, _)) => {
                self.server_info = result
                    .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
                    .or_else(|| result.get("serverInfo"))
                    .cloned();
                Ok(result
                    .get("supportedVersions")
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().any(|v| v == MODERN)))
            }
            Err(e @ (SessionError::Unavailable { .. } | SessionError::Changed(_))) => Err(e),
            Err(e) if self.unauthorized => Err(e),
            Err(SessionError::Refused(why)) if why.starts_with(FORBIDDEN) => {
                Err(SessionError::Refused(why))
            }
            Err(_) => Ok(false),
        }
    }

    /// The 2025-11-25 handshake.
    async fn initialize(&mut self) -> Result<(), SessionError> {
        self.era = Era::Legacy(PROTOCOL_VERSION.to_string());
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "escepine", "version": env!("CARGO_PKG_VERSION") },
        });
        let (result, _) = self.exchange("initialize", params).await?;
        self.server_info = result.get("serverInfo").cloned();
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !LEGACY.contains(&version) {
            return Err(SessionError::Protocol(format!(
                "the MCP server answered initialize with the revision `{version}`, which this \
                 client does not speak ({MODERN}, {})",
                LEGACY.join(", ")
            )));
        }
        self.era = Era::Legacy(version.to_string());
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        self.post("notifications/initialized", None, &note).await?;
        Ok(())
    }

    /// End a 2025 session (`DELETE`), without waiting for the answer.
    pub(crate) fn close(mut self) {
        let Some(id) = self.session_id.take() else {
            return;
        };
        let request = self
            .http
            .delete(self.url.url.clone())
            .headers(self.headers(None))
            .header("Mcp-Session-Id", id)
            .timeout(Duration::from_secs(2));
        tokio::spawn(async move {
            let _ = request.send().await;
        });
    }

    /// The headers of every request of the session.
    fn headers(&self, method: Option<(&str, Option<&str>)>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Some(token) = &self.bearer {
            if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {token}")) {
                v.set_sensitive(true);
                h.insert(reqwest::header::AUTHORIZATION, v);
            }
        }
        if let Some(trace) = &self.trace {
            if let Ok(v) = HeaderValue::from_str(trace.traceparent()) {
                h.insert(META_TRACEPARENT, v);
            }
            if let Some(v) = trace
                .tracestate()
                .and_then(|s| HeaderValue::from_str(s).ok())
            {
                h.insert(META_TRACESTATE, v);
            }
        }
        match &self.era {
            Era::Modern => {
                h.insert("MCP-Protocol-Version", HeaderValue::from_static(MODERN));
                if let Some((m, name)) = method {
                    if let Ok(v) = HeaderValue::from_str(m) {
                        h.insert("Mcp-Method", v);
                    }
                    if let Some(v) = name.and_then(|n| HeaderValue::from_str(n).ok()) {
                        h.insert("Mcp-Name", v);
                    }
                }
            }
            Era::Legacy(version) => {
                if let Ok(v) = HeaderValue::from_str(version) {
                    h.insert("MCP-Protocol-Version", v);
                }
                if let Some(v) = self
                    .session_id
                    .as_deref()
                    .and_then(|s| HeaderValue::from_str(s).ok())
                {
                    h.insert("Mcp-Session-Id", v);
                }
            }
        }
        h
    }

    /// POST one message; the response, its status checked.
    async fn post(
        &mut self,
        method: &str,
        name: Option<&str>,
        message: &Value,
    ) -> Result<reqwest::Response, SessionError> {
        self.requests.push(request_line("POST", &self.url, method));
        let sent = self
            .http
            .post(self.url.url.clone())
            .headers(self.headers(Some((method, name))))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(message.to_string())
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => return Err(send_failure(method, &e)),
        };
        let status = response.status();
        if status.is_success() {
            if method == "initialize" {
                self.session_id = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
            }
            return Ok(response);
        }
        Err(self.status_failure(method, response).await)
    }

    /// How a non-success answer fails the request.
    async fn status_failure(&mut self, method: &str, response: reqwest::Response) -> SessionError {
        let status = response.status();
        if status.is_redirection() {
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("(no Location)")
                .to_string();
            let other = match self.url.url.join(&to) {
                Ok(u) if self.url.same_origin(&u) => "the same origin",
                _ => "another origin",
            };
            return SessionError::Refused(format!(
                "{method}: the MCP server answered {status} redirecting to `{to}` ({other}); \
                 redirects are not followed: the endpoint's URL is the only one called"
            ));
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after(v, std::time::SystemTime::now()));
        let body = excerpt(response).await;
        match status {
            StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
                SessionError::Unavailable {
                    message: format!("{method}: the MCP server answered {status}{body}"),
                    retry_after,
                }
            }
            StatusCode::UNAUTHORIZED => {
                self.unauthorized = true;
                SessionError::Refused(format!(
                    "{method}: the MCP server answered {status}: it did not accept the \
                     credential{body}"
                ))
            }
            StatusCode::FORBIDDEN => {
                SessionError::Refused(format!("{FORBIDDEN} {method}: {status}{body}"))
            }
            _ => SessionError::Refused(format!("{method}: the MCP server answered {status}{body}")),
        }
    }
}

/// The wait a `Retry-After` value asks for (RFC 9110 §10.2.3): delay-seconds, or an HTTP date
/// (the time until it from `now`; a date past is no wait). Anything else is ignored.
fn retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or_default())
}

/// How a refusal of the credential's rights begins (the server knows the caller and refuses).
const FORBIDDEN: &str = "the MCP server refused (forbidden)";

/// The first bytes of an error answer's body, for the message (the attempt scrubs it).
async fn excerpt(response: reqwest::Response) -> String {
    const MAX: usize = 300;
    let text = response.text().await.unwrap_or_default();
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let cut: String = text.chars().take(MAX).collect();
    let more = if cut.len() < text.len() { " […]" } else { "" };
    format!(": {cut}{more}")
}

/// A request that got no answer: a connection failure is worth another attempt; a TLS
/// certificate that does not verify is not (the handshake failed, nothing was sent).
fn send_failure(method: &str, e: &reqwest::Error) -> SessionError {
    let mut chain = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        chain.push_str(": ");
        chain.push_str(&s.to_string());
        source = s.source();
    }
    if chain.contains("certificate") || chain.contains("InvalidCertificate") {
        return SessionError::Refused(format!(
            "{method}: the TLS certificate of the MCP server does not verify: {chain}"
        ));
    }
    SessionError::Unavailable {
        message: format!("{method}: the MCP server could not be reached: {chain}"),
        retry_after: None,
    }
}

impl Exchange for HttpSession {
    async fn exchange(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<(Value, Vec<u8>), SessionError> {
        self.next_id += 1;
        let id = self.next_id;
        let mut params = params;
        if self.era == Era::Modern {
            if let Value::Object(p) = &mut params {
                // Beside what the request's `_meta` already holds (its trace context).
                let meta = p
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(
                        "io.modelcontextprotocol/protocolVersion".into(),
                        MODERN.into(),
                    );
                    meta.insert(
                        "io.modelcontextprotocol/clientCapabilities".into(),
                        json!({}),
                    );
                    meta.insert(
                        "io.modelcontextprotocol/clientInfo".into(),
                        json!({ "name": "escepine", "version": env!("CARGO_PKG_VERSION") }),
                    );
                }
            }
        }
        let name = (method == "tools/call")
            .then(|| {
                params
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .flatten();
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let response = self.post(method, name.as_deref(), &message).await?;
        let bytes = answer(method, id, response, self.max_bytes).await?;
        let Ok(Value::Object(mut m)) = serde_json::from_slice::<Value>(&bytes) else {
            return Err(SessionError::Protocol(format!(
                "{method}: the MCP server's answer is not a JSON object"
            )));
        };
        if let Some(result) = m.remove("result") {
            return Ok((result, bytes));
        }
        let error = m.remove("error").unwrap_or(Value::Null);
        Err(error_answer(method, &error))
    }
}

/// The error text of an answer longer than its bound.
const TOO_LONG: &str = "the answer exceeds its bound";

/// The bytes of the JSON-RPC answer with `id` in `response`: its JSON body, or the event of
/// its stream that carries it.
async fn answer(
    method: &str,
    id: u64,
    response: reqwest::Response,
    max_bytes: usize,
) -> Result<Vec<u8>, SessionError> {
    let too_long = || {
        SessionError::Protocol(format!(
            "{method}: the MCP server's answer is longer than {max_bytes} bytes"
        ))
    };
    let is_stream = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    // The body's chunks, failing once more than `max_bytes` came.
    let chunks = futures::stream::unfold((response, 0usize), move |(mut r, read)| async move {
        match r.chunk().await {
            Ok(Some(c)) if read + c.len() > max_bytes => {
                Some((Err(std::io::Error::other(TOO_LONG)), (r, usize::MAX / 2)))
            }
            Ok(Some(c)) => {
                let read = read + c.len();
                Some((Ok(c), (r, read)))
            }
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e)), (r, read))),
        }
    });
    let broke = |what: &str, e: String| {
        if e.contains(TOO_LONG) {
            too_long()
        } else {
            SessionError::Unavailable {
                message: format!("{method}: the MCP server's {what} broke off: {e}"),
                retry_after: None,
            }
        }
    };
    if !is_stream {
        let mut out = Vec::new();
        let mut chunks = std::pin::pin!(chunks);
        while let Some(c) = chunks.next().await {
            out.extend_from_slice(&c.map_err(|e| broke("answer", e.to_string()))?);
        }
        return Ok(out);
    }
    let mut events = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(chunks));
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| broke("event stream", e.to_string()))?;
        let Some(data) = event.data else { continue };
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&data) else {
            continue;
        };
        // Requests and notifications of the server are skipped: this client offers nothing.
        if m.contains_key("method") || m.get("id").and_then(Value::as_u64) != Some(id) {
            continue;
        }
        return Ok(data.into_bytes());
    }
    Err(SessionError::Unavailable {
        message: format!("{method}: the MCP server's event stream ended without the answer"),
        retry_after: None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::retry_after;

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
        assert_eq!(retry_after(" 120 ", now), Some(Duration::from_secs(120)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO),
            "a date past is no wait"
        );
        assert_eq!(retry_after("soon", SystemTime::now()), None);
        assert_eq!(retry_after("-5", SystemTime::now()), None);
    }
}
