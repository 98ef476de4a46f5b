//! Who calls Escepine's HTTP edges (`escepine serve --mcp http`): an OAuth 2.1 resource server
//! (`--oauth FILE`), or, for development, a file of static bearer tokens (`--tokens FILE`,
//! [`tokens`]).
//!
//! - [`config`]: the file that names the resource, its issuers and how their tokens' claims map
//!   to Cedar principals, every rule checked at once.
//! - [`discovery`] and [`jwks`]: each issuer's metadata (RFC 8414, then OpenID Connect
//!   discovery) and signing keys, fetched over a bounded HTTP client, cached, refreshed on an
//!   unknown `kid` at most once per `jwks_min_refresh_s`, retried in the background while the
//!   issuer cannot be reached.
//! - [`verify`]: a JWT access token checked — algorithm allow-list (never `none`, never HMAC),
//!   exactly one configured issuer, its key, signature, audience (RFC 8707), expiry and
//!   not-before with a bounded leeway, required scopes — into an [`verify::Identity`]: the
//!   principal and its parents built from the claims ([`claims`]), the issuer and a digest of
//!   the `jti`; or a [`verify::Rejection`] saying why.
//! - [`metadata`] and [`challenge`]: the protected resource metadata (RFC 9728) and the
//!   `WWW-Authenticate` challenge of a refusal (RFC 6750).
//!
//! Nothing here answers HTTP: the edges map a rejection to their response once
//! ([`verify::Rejection::status`]).

#![deny(missing_docs)]

pub mod challenge;
pub mod claims;
pub mod config;
pub mod discovery;
mod fetch;
pub mod jwks;
pub mod metadata;
pub mod origin_rule;
pub mod tokens;
pub mod verify;
