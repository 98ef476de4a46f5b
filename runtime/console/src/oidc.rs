//! Signing in through an identity provider: the authorization-code grant with PKCE (RFC 7636,
//! `S256`), for the console as an OAuth client of one of the issuers `--oauth` trusts.
//!
//! The client file (`--oidc-client FILE`, strict JSON):
//!
//! ```json
//! {"issuer": "https://id.example.com", "client_id": "escepine-console",
//!  "client_secret": "CONSOLE_CLIENT_SECRET", "redirect_uri": "https://console.example.com/login/callback",
//!  "scope": "openid escepine"}
//! ```
//!
//! `client_secret` names a secret (read from the environment or the `--secrets` file), never
//! the value; without it the console is a public client (PKCE alone). `scope` defaults to
//! `openid`. The issuer's endpoints come from its metadata (RFC 8414, then OpenID discovery),
//! fetched at the first sign-in. The access token the provider returns is verified as any
//! bearer token is (`--oauth`): the session's principal is the token's.
//!
//! A login is bound to the browser that started it: its `state` is single use, expires after
//! ten minutes, and must come back with the same sign-in cookie.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use escepine_ledger::entry::now_ms;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use url::Url;

use crate::session::random_token;

/// How long a started login may take.
const LOGIN_TTL_MS: u64 = 10 * 60 * 1000;
/// The most logins pending at once (older ones are dropped first).
const MAX_PENDING: usize = 1024;

/// The client file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientFile {
    issuer: Url,
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    redirect_uri: Url,
    #[serde(default)]
    scope: Option<String>,
}

/// Why the client file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OidcConfigError {
    /// Unreadable, not strict JSON, or not the documented shape.
    #[error("{file}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// What is wrong, with its JSON pointer where known.
        message: String,
    },
    /// The named client secret has no value.
    #[error("{file}: /client_secret: the secret `{name}` has no value (set it in the environment or the --secrets file)")]
    MissingSecret {
        /// The file.
        file: String,
        /// The secret's name.
        name: String,
    },
}

/// The console as an OAuth client.
#[derive(Debug, Clone)]
pub struct OidcClient {
    /// The issuer.
    pub issuer: Url,
    /// The client id.
    pub client_id: String,
    /// The client secret's value (a confidential client), none for a public one.
    client_secret: Option<String>,
    /// Where the provider sends the browser back (`…/login/callback`).
    pub redirect_uri: Url,
    /// The scopes asked for.
    pub scope: String,
}

impl OidcClient {
    /// Read the client file; `secret` gives the value of the secret `client_secret` names.
    ///
    /// # Errors
    /// The file cannot be read, is not strict JSON or not the documented shape (named with its
    /// pointer), the redirect URI's path is not `/login/callback`, or the secret has no value.
    pub fn load(
        path: &Path,
        secret: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, OidcConfigError> {
        let file = path.display().to_string();
        let invalid = |message: String| OidcConfigError::Invalid {
            file: file.clone(),
            message,
        };
        let value =
            escepine_contract::strict_json::read_file(path).map_err(|e| invalid(e.to_string()))?;
        let parsed: ClientFile =
            serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        if parsed.redirect_uri.path() != "/login/callback" {
            return Err(invalid(format!(
                "/redirect_uri: `{}` must end in the console's /login/callback",
                parsed.redirect_uri
            )));
        }
        if parsed.client_id.is_empty() {
            return Err(invalid("/client_id: must not be empty".into()));
        }
        let client_secret = match &parsed.client_secret {
            None => None,
            Some(name) => Some(secret(name).ok_or_else(|| OidcConfigError::MissingSecret {
                file: file.clone(),
                name: name.clone(),
            })?),
        };
        Ok(Self {
            issuer: parsed.issuer,
            client_id: parsed.client_id,
            client_secret,
            redirect_uri: parsed.redirect_uri,
            scope: parsed.scope.unwrap_or_else(|| "openid".into()),
        })
    }
}

/// Why a login did not complete.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The issuer's metadata could not be fetched or used.
    #[error("the identity provider's metadata: {0}")]
    Metadata(String),
    /// The `state` is unknown, used, expired, or came back in another browser.
    #[error("this sign-in was not started here, was already used or has expired: start again")]
    UnknownState,
    /// The provider refused (its `error` and description).
    #[error("the identity provider refused the sign-in: {0}")]
    Refused(String),
    /// The code could not be exchanged for a token.
    #[error("the code could not be exchanged for a token: {0}")]
    Exchange(String),
}

/// The endpoints of the issuer's metadata.
#[derive(Debug, Clone, Deserialize)]
struct Endpoints {
    issuer: String,
    authorization_endpoint: Url,
    token_endpoint: Url,
}

/// A login waiting for the provider's redirect.
#[derive(Debug)]
struct Pending {
    verifier: String,
    browser: String,
    started_ms: u64,
}

/// The logins of one console.
#[derive(Debug)]
pub struct Oidc {
    client: OidcClient,
    resource: String,
    http: reqwest::Client,
    endpoints: OnceCell<Endpoints>,
    pending: Mutex<HashMap<String, Pending>>,
}

impl Oidc {
    /// Logins of `client` for tokens meant for `resource` (the `--oauth` resource).
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(client: OidcClient, resource: &str) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self {
            client,
            resource: resource.to_string(),
            http,
            endpoints: OnceCell::new(),
            pending: Mutex::new(HashMap::new()),
        })
    }

    /// The issuer, for the sign-in page.
    pub fn issuer(&self) -> &Url {
        &self.client.issuer
    }

    async fn endpoints(&self) -> Result<&Endpoints, LoginError> {
        self.endpoints
            .get_or_try_init(|| async {
                let mut tried = Vec::new();
                for url in escepine_identity::discovery::metadata_urls(&self.client.issuer) {
                    match self.fetch_metadata(&url).await {
                        Ok(e) => return Ok(e),
                        Err(why) => tried.push(format!("{url}: {why}")),
                    }
                }
                Err(LoginError::Metadata(tried.join("; ")))
            })
            .await
    }

    async fn fetch_metadata(&self, url: &Url) -> Result<Endpoints, String> {
        let response = self
            .http
            .get(url.clone())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("answered {}", response.status()));
        }
        let endpoints: Endpoints = response.json().await.map_err(|e| e.to_string())?;
        if endpoints.issuer != self.client.issuer.as_str()
            && endpoints.issuer != self.client.issuer.as_str().trim_end_matches('/')
        {
            return Err(format!(
                "names the issuer `{}`, not `{}`",
                endpoints.issuer, self.client.issuer
            ));
        }
        Ok(endpoints)
    }

    /// Start a login for the browser whose sign-in cookie is `browser`: the URL to send it to.
    ///
    /// # Errors
    /// The issuer's metadata cannot be used.
    pub async fn start(&self, browser: &str) -> Result<Url, LoginError> {
        let endpoints = self.endpoints().await?;
        let state = random_token();
        let verifier = random_token();
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(verifier.as_bytes()));
        {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = now_ms();
            pending.retain(|_, p| now.saturating_sub(p.started_ms) < LOGIN_TTL_MS);
            if pending.len() >= MAX_PENDING {
                if let Some(oldest) = pending
                    .iter()
                    .min_by_key(|(_, p)| p.started_ms)
                    .map(|(k, _)| k.clone())
                {
                    pending.remove(&oldest);
                }
            }
            pending.insert(
                state.clone(),
                Pending {
                    verifier,
                    browser: browser.to_string(),
                    started_ms: now,
                },
            );
        }
        let mut url = endpoints.authorization_endpoint.clone();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client.client_id)
            .append_pair("redirect_uri", self.client.redirect_uri.as_str())
            .append_pair("scope", &self.client.scope)
            .append_pair("state", &state)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &self.resource);
        Ok(url)
    }

    /// Finish the login `state` for the browser `browser` with the provider's `code`: the
    /// access token.
    ///
    /// # Errors
    /// An unknown, used, expired or foreign `state`; a refused exchange.
    pub async fn finish(
        &self,
        state: &str,
        code: &str,
        browser: &str,
    ) -> Result<String, LoginError> {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(state)
            .filter(|p| {
                now_ms().saturating_sub(p.started_ms) < LOGIN_TTL_MS
                    && crate::session::same_token(browser, &p.browser)
            })
            .ok_or(LoginError::UnknownState)?;
        let endpoints = self.endpoints().await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.client.redirect_uri.as_str()),
            ("code_verifier", pending.verifier.as_str()),
            ("client_id", self.client.client_id.as_str()),
            ("resource", self.resource.as_str()),
        ];
        if let Some(secret) = &self.client.client_secret {
            form.push(("client_secret", secret.as_str()));
        }
        let response = self
            .http
            .post(endpoints.token_endpoint.clone())
            .form(&form)
            .send()
            .await
            .map_err(|e| LoginError::Exchange(e.to_string()))?;
        let status = response.status();
        let body: serde_json::Value = response
            .json()
            .await
            .map_err(|e| LoginError::Exchange(e.to_string()))?;
        if !status.is_success() {
            return Err(LoginError::Exchange(format!(
                "{status}: {}",
                body.get("error_description")
                    .or_else(|| body.get("error"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("no error given")
            )));
        }
        body.get("access_token")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| LoginError::Exchange("the answer has no access_token".into()))
    }
}

/// The `exp` of a JWT already verified (Unix milliseconds), so a session ends with its token.
pub fn token_expiry_ms(token: &str) -> Option<u64> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("exp")?.as_u64()?.checked_mul(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oidc() -> Oidc {
        let client = OidcClient {
            issuer: "http://127.0.0.1:9/".parse().unwrap(),
            client_id: "console".into(),
            client_secret: None,
            redirect_uri: "http://127.0.0.1:8790/login/callback".parse().unwrap(),
            scope: "openid".into(),
        };
        Oidc::new(client, "http://127.0.0.1:8790/").unwrap()
    }

    fn pending(o: &Oidc, state: &str, browser: &str, age_ms: u64) {
        o.pending.lock().unwrap().insert(
            state.into(),
            Pending {
                verifier: "v".into(),
                browser: browser.into(),
                started_ms: now_ms() - age_ms,
            },
        );
    }

    #[tokio::test]
    async fn a_state_is_single_use_bound_to_its_browser_and_expires() {
        let o = oidc();
        // Refused before any request to the provider: unknown, foreign, expired.
        let unknown = o.finish("nope", "code", "browser").await;
        assert!(matches!(unknown, Err(LoginError::UnknownState)));
        pending(&o, "s1", "browser-a", 0);
        let foreign = o.finish("s1", "code", "browser-b").await;
        assert!(matches!(foreign, Err(LoginError::UnknownState)));
        let again = o.finish("s1", "code", "browser-a").await;
        assert!(
            matches!(again, Err(LoginError::UnknownState)),
            "a refused state is spent too"
        );
        pending(&o, "s2", "browser-a", LOGIN_TTL_MS + 1);
        let expired = o.finish("s2", "code", "browser-a").await;
        assert!(matches!(expired, Err(LoginError::UnknownState)));
    }

    #[test]
    fn the_client_file_names_its_secret_and_its_callback() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.json");
        let write = |v: serde_json::Value| std::fs::write(&path, v.to_string()).unwrap();
        write(
            serde_json::json!({"issuer": "http://127.0.0.1:9", "client_id": "c",
            "client_secret": "CONSOLE_SECRET", "redirect_uri": "http://127.0.0.1:1/login/callback"}),
        );
        let e = OidcClient::load(&path, &|_| None).unwrap_err().to_string();
        assert!(
            e.contains("/client_secret") && e.contains("CONSOLE_SECRET"),
            "{e}"
        );
        let c =
            OidcClient::load(&path, &|n| (n == "CONSOLE_SECRET").then(|| "s3cret".into())).unwrap();
        assert_eq!(c.client_secret.as_deref(), Some("s3cret"));
        write(
            serde_json::json!({"issuer": "http://127.0.0.1:9", "client_id": "c",
            "redirect_uri": "http://127.0.0.1:1/elsewhere"}),
        );
        let e = OidcClient::load(&path, &|_| None).unwrap_err().to_string();
        assert!(e.contains("/redirect_uri"), "{e}");
        write(
            serde_json::json!({"issuer": "http://127.0.0.1:9", "client_id": "c",
            "redirect_uri": "http://127.0.0.1:1/login/callback", "extra": 1}),
        );
        let e = OidcClient::load(&path, &|_| None).unwrap_err().to_string();
        assert!(e.contains("extra"), "{e}");
    }
}
