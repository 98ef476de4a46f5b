//! Verifying an access token: [`Verifier::verify`], in this order, each refusal a
//! [`Rejection`] that names why and never the token:
//!
//! 1. The token is a compact JWS of at most [`MAX_TOKEN_LEN`] bytes; its header is read first,
//!    unverified, only to refuse `alg: none` and `crit` (no extension is understood) by name.
//! 2. Its unverified `iss` picks exactly one configured issuer; any other is refused.
//! 3. Its `alg` is on that issuer's allow-list (never `none`, never HMAC: the configuration
//!    refuses both, so an HMAC token signed with a public key as its secret is refused here).
//! 4. The key: by `kid` from the issuer's cached key set, which is fetched again on an unknown
//!    `kid` at most once per `jwks_min_refresh_s` ([`crate::jwks::IssuerKeys`]); the key must
//!    fit the algorithm (type, curve, its own `alg`). An issuer whose keys could never be
//!    fetched yet answers [`Rejection::IssuerUnavailable`].
//! 5. The signature, then `iss` (exactly), `aud` (contains the issuer's audience), `exp`
//!    (required) and `nbf` (if present), with the issuer's leeway.
//! 6. Every scope the issuer requires ([`Rejection::InsufficientScope`] otherwise).
//! 7. The principal and parents from the claims ([`crate::claims`]).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use escepine_contract::Principal;

use crate::claims;
use crate::config::{IssuerConfig, OAuthConfig};
use crate::fetch::Fetcher;
use crate::jwks::{IssuerKeys, KeyMiss};

/// The longest token read, in bytes.
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

/// Who a verified token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The principal, from the issuer's principal claim.
    pub principal: Principal,
    /// The entities the principal is a member of, from the issuer's parents claims.
    pub parents: Vec<Principal>,
    /// The token's issuer.
    pub issuer: String,
    /// The token's `sub`, if it is a string.
    pub subject: Option<String>,
    /// Hex SHA-256 of the token's `jti`, when it has one (never the `jti` or the token).
    pub jti_sha256: Option<String>,
    /// The token's scopes.
    pub scopes: Vec<String>,
    /// Its `exp`, Unix seconds.
    pub expires_at: u64,
}

/// Why a request's token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// No token was sent.
    #[error("a bearer token is required (Authorization: Bearer <token>)")]
    Missing,
    /// The `Authorization` header is not a bearer token.
    #[error("the Authorization header is not a bearer token: {0}")]
    Malformed(String),
    /// The token does not verify.
    #[error("the bearer token is not valid: {0}")]
    InvalidToken(String),
    /// The token verifies but lacks a scope the issuer requires.
    #[error("the token lacks the scope(s) {}", required.join(" "))]
    InsufficientScope {
        /// Every scope required.
        required: Vec<String>,
    },
    /// The token's issuer is configured, but its keys could not be fetched yet.
    #[error("the token cannot be checked now: {0}")]
    IssuerUnavailable(String),
}

impl Rejection {
    /// The HTTP status that answers it: `401`, `401`, `401`, `403`, `503`.
    pub fn status(&self) -> http::StatusCode {
        match self {
            Self::Missing | Self::Malformed(_) | Self::InvalidToken(_) => {
                http::StatusCode::UNAUTHORIZED
            }
            Self::InsufficientScope { .. } => http::StatusCode::FORBIDDEN,
            Self::IssuerUnavailable(_) => http::StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The OAuth error code of the challenge (RFC 6750 §3.1; none when no token was sent).
    pub fn error_code(&self) -> Option<&'static str> {
        match self {
            Self::Missing => None,
            Self::Malformed(_) => Some("invalid_request"),
            Self::InvalidToken(_) => Some("invalid_token"),
            Self::InsufficientScope { .. } => Some("insufficient_scope"),
            Self::IssuerUnavailable(_) => Some("temporarily_unavailable"),
        }
    }
}

/// Why a verifier could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the HTTP client for the issuers' keys: {0}")]
pub struct VerifierError(#[from] reqwest::Error);

/// Verifies access tokens for one configuration. Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Verifier {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    issuers: Vec<(IssuerConfig, IssuerKeys)>,
    fetcher: Fetcher,
}

impl Verifier {
    /// The verifier of `config`'s issuers; no key is fetched until [`Self::start`] or the first
    /// token.
    ///
    /// # Errors
    /// [`VerifierError`] when the HTTP client cannot be built.
    pub fn new(config: OAuthConfig) -> Result<Self, VerifierError> {
        let fetcher = Fetcher::new()?;
        let issuers = config
            .issuers
            .into_iter()
            .map(|i| {
                let keys = IssuerKeys::new(&i);
                (i, keys)
            })
            .collect();
        Ok(Self {
            inner: Arc::new(Inner { issuers, fetcher }),
        })
    }

    /// Fetch every issuer's keys in the background (on the current tokio runtime): an issuer
    /// that cannot be reached is retried, 1 s after the first failure, doubling up to 60 s,
    /// until its keys are in; it is never fatal.
    pub fn start(&self) {
        for n in 0..self.inner.issuers.len() {
            let inner = Arc::clone(&self.inner);
            tokio::spawn(async move {
                let mut wait = Duration::from_secs(1);
                loop {
                    let (config, keys) = &inner.issuers[n];
                    if keys.current().is_some() || keys.fetch_now(&inner.fetcher).await {
                        tracing::info!(issuer = %config.issuer, "signing keys fetched");
                        return;
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(60));
                }
            });
        }
    }

    /// Whether the keys of `issuer` are held (`None` for an issuer not configured): a
    /// readiness check.
    pub fn has_keys(&self, issuer: &str) -> Option<bool> {
        self.inner
            .issuers
            .iter()
            .find(|(c, _)| c.issuer == issuer)
            .map(|(_, k)| k.current().is_some())
    }

    /// How many times the key set of `issuer` was fetched.
    pub fn jwks_fetches(&self, issuer: &str) -> Option<u64> {
        self.inner
            .issuers
            .iter()
            .find(|(c, _)| c.issuer == issuer)
            .map(|(_, k)| k.fetches())
    }

    /// Verify `token` (the bearer token of a request).
    ///
    /// # Errors
    /// A [`Rejection`] saying why the token is refused.
    pub async fn verify(&self, token: &str) -> Result<Identity, Rejection> {
        let invalid = |why: &str| Rejection::InvalidToken(why.to_string());
        if token.len() > MAX_TOKEN_LEN {
            return Err(invalid("the token is longer than 16 KiB"));
        }
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid(
                "not a JWT (three base64url parts separated by dots)",
            ));
        };
        let header = segment(header).ok_or_else(|| invalid("the header is not base64url JSON"))?;
        let alg_name = header.get("alg").and_then(Value::as_str).unwrap_or("");
        if alg_name.eq_ignore_ascii_case("none") {
            return Err(invalid("`alg: none` (an unsigned token) is never accepted"));
        }
        if header.contains_key("crit") {
            return Err(invalid(
                "the header names `crit` extensions, which are not understood",
            ));
        }
        let unverified =
            segment(payload).ok_or_else(|| invalid("the claims are not base64url JSON"))?;
        let iss = unverified.get("iss").and_then(Value::as_str).unwrap_or("");
        let Some((issuer, keys)) = self.inner.issuers.iter().find(|(c, _)| c.issuer == iss) else {
            return Err(Rejection::InvalidToken(format!(
                "the issuer `{}` is not one this server trusts",
                shorten(iss)
            )));
        };
        let alg = crate::config::allowed_algorithm(alg_name)
            .ok()
            .filter(|a| issuer.algorithms.contains(a))
            .ok_or_else(|| {
                Rejection::InvalidToken(format!(
                    "the algorithm `{}` is not accepted for `{}`",
                    shorten(alg_name),
                    issuer.issuer
                ))
            })?;
        let kid = header.get("kid").and_then(Value::as_str);
        let key = self.key(issuer, keys, kid, alg).await?;
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation(issuer, alg))
                .map_err(|e| Rejection::InvalidToken(decode_error(e.kind()).to_string()))?;
        let claims = data.claims;
        let scopes = claims::scopes(&claims);
        if issuer.scopes.iter().any(|s| !scopes.contains(s)) {
            return Err(Rejection::InsufficientScope {
                required: issuer.scopes.clone(),
            });
        }
        let principal = claims::principal(&claims, issuer).map_err(Rejection::InvalidToken)?;
        let parents = claims::parents(&claims, issuer).map_err(Rejection::InvalidToken)?;
        let jti_sha256 = claims
            .get("jti")
            .and_then(Value::as_str)
            .map(|jti| hex::encode(Sha256::digest(jti.as_bytes())));
        Ok(Identity {
            principal,
            parents,
            issuer: issuer.issuer.clone(),
            subject: claims
                .get("sub")
                .and_then(Value::as_str)
                .map(str::to_string),
            jti_sha256,
            scopes,
            expires_at: claims.get("exp").and_then(Value::as_u64).unwrap_or(0),
        })
    }

    /// The key for a token of `issuer` naming `kid`, fetching the key set again on an unknown
    /// `kid` (rate-limited) or when none is held yet.
    async fn key(
        &self,
        issuer: &IssuerConfig,
        keys: &IssuerKeys,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<jsonwebtoken::DecodingKey, Rejection> {
        let fetcher = &self.inner.fetcher;
        let set = match keys.current() {
            Some(set) => set,
            None => keys.refresh(fetcher, kid).await.ok_or_else(|| {
                Rejection::IssuerUnavailable(format!(
                    "the signing keys of `{}` could not be fetched yet ({})",
                    issuer.issuer,
                    keys.last_error().unwrap_or_else(|| "not tried yet".into())
                ))
            })?,
        };
        match set.find(kid, alg) {
            Ok(k) => Ok(k.decoding.clone()),
            Err(KeyMiss::UnknownKid(k)) => {
                let refreshed = keys.refresh(fetcher, Some(&k)).await;
                refreshed
                    .as_ref()
                    .and_then(|s| s.find(kid, alg).ok())
                    .map(|k| k.decoding.clone())
                    .ok_or_else(|| {
                        Rejection::InvalidToken(format!(
                            "no key of `{}` has the kid `{}`",
                            issuer.issuer,
                            shorten(&k)
                        ))
                    })
            }
            Err(miss) => Err(Rejection::InvalidToken(miss.to_string())),
        }
    }
}

/// The checks of [`jsonwebtoken::decode`] for `issuer`'s tokens signed with `alg`.
fn validation(issuer: &IssuerConfig, alg: Algorithm) -> Validation {
    let mut v = Validation::new(alg);
    v.leeway = issuer.leeway_s;
    v.validate_exp = true;
    v.validate_nbf = true;
    v.validate_aud = true;
    v.set_audience(&[issuer.audience.as_str()]);
    v.set_issuer(&[issuer.issuer.as_str()]);
    v.set_required_spec_claims(&["exp", "iss", "aud"]);
    v
}

/// A rejection's reason for a failed [`jsonwebtoken::decode`].
fn decode_error(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
        ErrorKind::InvalidAudience => "the token is not meant for this resource (aud)",
        ErrorKind::InvalidIssuer => "the token's issuer does not match (iss)",
        ErrorKind::InvalidSignature => "the signature does not verify",
        ErrorKind::MissingRequiredClaim(c) if c == "exp" => "the token has no expiry (exp)",
        ErrorKind::MissingRequiredClaim(c) if c == "aud" => "the token names no audience (aud)",
        ErrorKind::MissingRequiredClaim(_) => "the token lacks a required claim",
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            "the algorithm does not match the key"
        }
        ErrorKind::InvalidKeyFormat | ErrorKind::InvalidRsaKey(_) | ErrorKind::InvalidEcdsaKey => {
            "the issuer's key cannot check this token"
        }
        _ => "the token is malformed",
    }
}

/// A base64url segment holding a JSON object.
fn segment(text: &str) -> Option<Map<String, Value>> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// A claim value quoted in a reason: at most 80 characters, no control characters.
fn shorten(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(80).collect()
}
