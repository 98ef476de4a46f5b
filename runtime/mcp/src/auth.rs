//! Who calls `escepine serve --mcp http`: every request's `Authorization: Bearer` token, checked
//! before rmcp sees the request, against one of two [`Authenticator`]s.
//!
//! - [`Authenticator::Tokens`] (`--tokens FILE`, for development): a file maps each token to a
//!   principal ([`Tokens`]).
//! - [`Authenticator::OAuth`] (`--oauth FILE`): an OAuth 2.1 resource server. The token is a
//!   JWT access token of a configured issuer, verified against its JWKS
//!   ([`escepine_identity::verify::Verifier`]); the principal and its parents are built from
//!   the token's claims and travel with every call as its [`Attestation`] (the issuer, a digest
//!   of the `jti`, the parents), which the runtime authorizes with and records. The protected
//!   resource metadata (RFC 9728) is served at `/.well-known/oauth-protected-resource` and at
//!   its path-suffixed form, without a token.
//!
//! A refusal is answered here, once, from the one classification of why
//! ([`escepine_identity::verify::Rejection`]): `401` with
//! `WWW-Authenticate: Bearer resource_metadata="…"` when no token was sent (no `error`), `401`
//! with `error="invalid_token"` for a token that does not verify, `403` with
//! `error="insufficient_scope"` and the `scope` needed, `503` while an issuer's keys cannot be
//! fetched, `400` with `error="invalid_request"` for an `Authorization` header that is not a
//! bearer token. The body is `{"error", "error_description"}` (RFC 6750). Nothing of a refused
//! request reaches rmcp or the runtime, so nothing is run or recorded.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use escepine_contract::{Attestation, Principal};
use escepine_identity::config::OAuthConfig;
use escepine_identity::verify::{Identity, Rejection, Verifier};
use escepine_identity::{challenge, metadata};
use escepine_runtime::approval::Decider;
use escepine_runtime::executor::CallerToken;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde_json::json;

use escepine_identity::tokens::Tokens;

/// The caller of one HTTP request (a request extension set by the authentication layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The principal calls are made for.
    pub principal: Principal,
    /// What the identity provider vouched for (none for a development token).
    pub attestation: Option<Attestation>,
    /// The caller's access token, kept for the call it makes (a remote endpoint that exchanges
    /// it, RFC 8693), never recorded; none for a development token.
    pub token: Option<CallerToken>,
}

impl Authenticated {
    /// A principal named without a token's claims (stdio's `--principal`, a development token).
    pub fn named(principal: Principal) -> Self {
        Self {
            principal,
            attestation: None,
            token: None,
        }
    }

    /// The caller as a decider on waiting calls.
    pub fn decider(&self) -> Decider<'_> {
        Decider {
            principal: &self.principal,
            attestation: self.attestation.as_ref(),
        }
    }

    /// The entities the identity provider vouched the principal is a member of.
    pub fn parents(&self) -> &[Principal] {
        self.attestation
            .as_ref()
            .map_or(&[], |a| a.parents.as_slice())
    }
}

impl From<Identity> for Authenticated {
    fn from(id: Identity) -> Self {
        Self {
            principal: id.principal,
            attestation: Some(Attestation {
                issuer: id.issuer,
                jti_sha256: id.jti_sha256,
                parents: id.parents,
            }),
            token: None,
        }
    }
}

/// An OAuth 2.1 resource server: its configuration and the verifier of its issuers' tokens.
#[derive(Clone)]
pub struct OAuth {
    config: Arc<OAuthConfig>,
    verifier: Verifier,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("resource", &self.config.resource.as_str())
            .field("issuers", &self.config.issuers.len())
            .finish()
    }
}

impl OAuth {
    /// The resource server of `config`, verifying with `verifier` (built from the same
    /// configuration).
    pub fn new(config: OAuthConfig, verifier: Verifier) -> Self {
        Self {
            config: Arc::new(config),
            verifier,
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }
}

/// How the callers of the HTTP transport are known.
#[derive(Debug, Clone)]
pub enum Authenticator {
    /// Static bearer tokens from a file (development).
    Tokens(Arc<Tokens>),
    /// OAuth 2.1 access tokens of configured issuers.
    OAuth(OAuth),
}

impl Authenticator {
    /// The caller of a request with `headers`, or the response that refuses it.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Authenticated, Response> {
        let token = match authorization(headers) {
            Ok(Some(token)) => token,
            Ok(None) => return Err(self.refuse(&Rejection::Missing)),
            Err(rejection) => return Err(self.refuse(&rejection)),
        };
        match self {
            Self::Tokens(tokens) => tokens
                .principal(token)
                .map(|p| Authenticated::named(p.clone()))
                .ok_or_else(|| {
                    self.refuse(&Rejection::InvalidToken(
                        "the bearer token is not one of the server's tokens".into(),
                    ))
                }),
            Self::OAuth(oauth) => match oauth.verifier.verify(token).await {
                Ok(identity) => Ok(Authenticated {
                    token: Some(CallerToken::new(token)),
                    ..identity.into()
                }),
                Err(rejection) => {
                    tracing::info!(
                        status = rejection.status().as_u16(),
                        "bearer token refused: {rejection}"
                    );
                    Err(self.refuse(&rejection))
                }
            },
        }
    }

    /// The response refusing a request for `rejection`: its status, the `WWW-Authenticate`
    /// challenge and an RFC 6750 error body.
    pub fn refuse(&self, rejection: &Rejection) -> Response {
        let challenge = match self {
            Self::Tokens(_) => tokens_challenge(rejection),
            Self::OAuth(oauth) => challenge::www_authenticate(&oauth.config, rejection),
        };
        let mut body = serde_json::Map::new();
        if let Some(code) = rejection.error_code() {
            body.insert("error".into(), json!(code));
        } else {
            body.insert("error".into(), json!("unauthorized"));
        }
        body.insert("error_description".into(), json!(rejection.to_string()));
        let mut response = (
            rejection.status(),
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::Value::Object(body).to_string(),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        if rejection.status() == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        response
    }

    /// The protected resource metadata paths and document (OAuth only).
    pub fn metadata(&self) -> Option<(Vec<String>, serde_json::Value)> {
        match self {
            Self::Tokens(_) => None,
            Self::OAuth(oauth) => Some((
                metadata::metadata_paths(&oauth.config),
                metadata::metadata_document(&oauth.config),
            )),
        }
    }

    /// A short description for the start-up line.
    pub fn describe(&self) -> String {
        match self {
            Self::Tokens(tokens) => format!("{} development token(s)", tokens.len()),
            Self::OAuth(oauth) => format!(
                "OAuth 2.1 resource {} ({} issuer(s))",
                oauth.config.resource,
                oauth.config.issuers.len()
            ),
        }
    }
}

/// The bearer token of a request's `Authorization` header: `None` when there is no header;
/// a malformed header (repeated, not visible ASCII, another scheme) is refused.
fn authorization(headers: &HeaderMap) -> Result<Option<&str>, Rejection> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Rejection::Malformed(
            "more than one Authorization header".into(),
        ));
    }
    let value = first.to_str().map_err(|_| {
        Rejection::Malformed("the Authorization header is not visible ASCII".into())
    })?;
    challenge::bearer_token(Some(value))
}

/// The development tokens' challenge: `Bearer realm="escepine"`, with `error="invalid_token"`
/// when a token was sent.
fn tokens_challenge(rejection: &Rejection) -> String {
    match rejection.error_code() {
        Some(code) => format!("Bearer realm=\"escepine\", error=\"{code}\""),
        None => "Bearer realm=\"escepine\"".to_string(),
    }
}
