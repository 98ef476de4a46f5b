//! Access tokens for remote endpoints, obtained by the runtime and kept in its memory only.
//!
//! - Client credentials (RFC 6749 §4.4, `auth.oauth`): one token per (token endpoint, client,
//!   scopes, resource), reused until shortly before it expires ([`margin`]), fetched again once
//!   when the remote server refuses it (401).
//! - Token exchange (RFC 8693, `auth.token_exchange`): the caller's own access token
//!   (`subject_token`) exchanged for one meant for `audience`; cached per caller token (by its
//!   SHA-256, never the token), the same way.
//!
//! The client authenticates to the token endpoint with HTTP Basic (`client_secret_basic`). No
//! token is written anywhere: the cache is this process's memory, and what the ledger gets of
//! a token is the [`Issued::sub`] it names and a digest of the endpoint that issued it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use escepine_registry::remote::TokenGrant;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use super::http::request_line;
use crate::mcp::rpc::SessionError;

/// The grant type of RFC 8693.
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// The token type of an OAuth access token (RFC 8693 §3).
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// Largest token response read.
const MAX_RESPONSE: usize = 64 * 1024;

/// A token the runtime holds.
#[derive(Clone)]
pub struct Issued {
    /// The access token.
    pub(crate) token: Arc<str>,
    /// When it stops being used (shortly before it expires).
    pub(crate) refresh_at: Instant,
    /// The `sub` the token names (read from a JWT's payload, unverified: the remote server
    /// verifies it), for the record.
    pub sub: Option<String>,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("sub", &self.sub)
            .finish_non_exhaustive()
    }
}

/// How long before a token's expiry it stops being used: a tenth of its lifetime, at most 30
/// seconds.
pub fn margin(lifetime: Duration) -> Duration {
    (lifetime / 10).min(Duration::from_secs(30))
}

/// Which grant a token comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrantKind {
    /// `client_credentials`.
    ClientCredentials,
    /// RFC 8693 token exchange.
    TokenExchange,
}

impl GrantKind {
    /// The name the ledger records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClientCredentials => "client_credentials",
            Self::TokenExchange => "token_exchange",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    kind: GrantKind,
    endpoint: String,
    client_id: String,
    scopes: Vec<String>,
    target: Option<String>,
    /// SHA-256 of the caller's token (token exchange).
    subject: Option<String>,
}

/// The runtime's tokens, by what they were asked for.
#[derive(Default)]
pub struct TokenCache {
    entries: Mutex<HashMap<Key, Issued>>,
    fetches: AtomicU64,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache")
            .field("fetches", &self.fetches.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// What a token request needs besides its grant.
pub(crate) struct Ask<'a> {
    pub(crate) kind: GrantKind,
    pub(crate) grant: &'a TokenGrant,
    pub(crate) client_secret: &'a str,
    pub(crate) subject_token: Option<&'a str>,
    /// Fetch a new token even if one is cached (the server refused the cached one).
    pub(crate) fresh: bool,
}

impl TokenCache {
    /// Tokens fetched from token endpoints so far (not counting cache hits).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Tokens held now (each still usable when it was last fetched or stored).
    pub async fn held(&self) -> usize {
        self.entries.lock().await.len()
    }

    /// A token for `ask`: the cached one while it is fresh, else a new one from the token
    /// endpoint (one request at a time per cache, so concurrent calls share one fetch). Each
    /// request sent is pushed on `requests`.
    pub(crate) async fn get(
        &self,
        http: &reqwest::Client,
        ask: &Ask<'_>,
        requests: &mut Vec<String>,
    ) -> Result<Issued, SessionError> {
        let g = ask.grant;
        let key = Key {
            kind: ask.kind,
            endpoint: g.token_endpoint.to_string(),
            client_id: g.client_id.clone(),
            scopes: g.scopes.clone(),
            target: g.resource.clone().or_else(|| g.audience.clone()),
            subject: ask
                .subject_token
                .map(|t| hex::encode(Sha256::digest(t.as_bytes()))),
        };
        let mut entries = self.entries.lock().await;
        if !ask.fresh {
            if let Some(hit) = entries.get(&key).filter(|i| Instant::now() < i.refresh_at) {
                return Ok(hit.clone());
            }
        }
        requests.push(request_line("POST", &g.token_endpoint, ask.kind.as_str()));
        let issued = fetch(http, ask).await?;
        self.fetches.fetch_add(1, Ordering::Relaxed);
        // Tokens past their use are dropped as new ones come: a serve process exchanging the
        // tokens of many callers keeps only those still usable.
        let now = Instant::now();
        entries.retain(|_, i| now < i.refresh_at);
        entries.insert(key, issued.clone());
        Ok(issued)
    }
}

/// One token request.
async fn fetch(http: &reqwest::Client, ask: &Ask<'_>) -> Result<Issued, SessionError> {
    let g = ask.grant;
    let what = ask.kind.as_str();
    let mut form: Vec<(&str, String)> = Vec::new();
    match ask.kind {
        GrantKind::ClientCredentials => {
            form.push(("grant_type", "client_credentials".into()));
            if let Some(r) = &g.resource {
                form.push(("resource", r.clone()));
            }
        }
        GrantKind::TokenExchange => {
            let Some(subject) = ask.subject_token else {
                return Err(SessionError::Refused(
                    "token exchange needs the caller's own access token, and this call has \
                     none: a caller authenticated by `serve --oauth` brings one"
                        .into(),
                ));
            };
            form.push(("grant_type", TOKEN_EXCHANGE.into()));
            form.push(("subject_token", subject.to_string()));
            form.push(("subject_token_type", ACCESS_TOKEN_TYPE.into()));
            form.push(("requested_token_type", ACCESS_TOKEN_TYPE.into()));
            if let Some(a) = &g.audience {
                form.push(("audience", a.clone()));
                // oidc-provider and others read the target resource (RFC 8707) as well.
                form.push(("resource", a.clone()));
            }
        }
    }
    if !g.scopes.is_empty() {
        form.push(("scope", g.scopes.join(" ")));
    }
    let basic = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        form_encode(&g.client_id),
        form_encode(ask.client_secret)
    ));
    let sent = http
        .post(g.token_endpoint.url.clone())
        .header(reqwest::header::AUTHORIZATION, format!("Basic {basic}"))
        .header(reqwest::header::ACCEPT, "application/json")
        .form(&form)
        .send()
        .await
        .map_err(|e| SessionError::Unavailable {
            message: format!(
                "{what}: the token endpoint {} could not be reached: {e}",
                g.token_endpoint
            ),
            retry_after: None,
        })?;
    let status = sent.status();
    let body = read_bounded(sent).await;
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        return Err(SessionError::Unavailable {
            message: format!("{what}: the token endpoint answered {status}"),
            retry_after: None,
        });
    }
    if !status.is_success() {
        let (error, description) = parsed
            .as_ref()
            .map(|v| {
                (
                    v.get("error").and_then(Value::as_str).unwrap_or("?"),
                    v.get("error_description")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                )
            })
            .unwrap_or(("?", ""));
        return Err(SessionError::Refused(format!(
            "{what}: the token endpoint {} refused ({status}): {error} {description}",
            g.token_endpoint
        )));
    }
    let Some(v) = parsed else {
        return Err(SessionError::Protocol(format!(
            "{what}: the token endpoint's answer is not JSON"
        )));
    };
    let Some(token) = v
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    else {
        return Err(SessionError::Protocol(format!(
            "{what}: the token endpoint's answer has no access_token"
        )));
    };
    let claims = jwt_payload(token);
    let lifetime = v
        .get("expires_in")
        .and_then(Value::as_u64)
        .or_else(|| {
            let exp = claims.as_ref()?.get("exp")?.as_u64()?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?
                .as_secs();
            Some(exp.saturating_sub(now))
        })
        .map_or(Duration::from_secs(60), Duration::from_secs);
    Ok(Issued {
        token: Arc::from(token),
        refresh_at: Instant::now() + lifetime.saturating_sub(margin(lifetime)),
        sub: claims
            .as_ref()
            .and_then(|c| c.get("sub"))
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The body of a token response, at most [`MAX_RESPONSE`] bytes.
async fn read_bounded(mut response: reqwest::Response) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        if out.len() + chunk.len() > MAX_RESPONSE {
            break;
        }
        out.extend_from_slice(&chunk);
    }
    out
}

/// `application/x-www-form-urlencoded` of a client id or secret, as RFC 6749 §2.3.1 asks
/// before Basic encoding.
fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The payload of a JWT, unverified; `None` for a token that is not one.
pub fn jwt_payload(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_is_a_tenth_at_most_thirty_seconds() {
        assert_eq!(margin(Duration::from_secs(3)), Duration::from_millis(300));
        assert_eq!(margin(Duration::from_secs(3600)), Duration::from_secs(30));
    }

    #[test]
    fn a_jwt_payload_is_read_and_anything_else_is_none() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"sub":"ann"}"#);
        let token = format!("e30.{payload}.sig");
        assert_eq!(
            jwt_payload(&token)
                .and_then(|c| c["sub"].as_str().map(str::to_string))
                .as_deref(),
            Some("ann")
        );
        assert!(jwt_payload("opaque-token").is_none());
        assert!(jwt_payload("a.!!!.c").is_none());
    }
}
