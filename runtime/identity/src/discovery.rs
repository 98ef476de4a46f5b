//! An issuer's metadata: where its signing keys are. Tried in order: RFC 8414
//! (`/.well-known/oauth-authorization-server`, the issuer's path appended after it), then
//! OpenID Connect discovery (`<issuer>/.well-known/openid-configuration`). A document counts
//! only if its `issuer` is exactly the configured one (RFC 8414 §3.3) and its `jwks_uri` passes
//! the origin rule.

use url::Url;

use crate::fetch::{FetchError, Fetcher};

/// What the resource server needs of an issuer's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerMetadata {
    /// The issuer, as the document names it (equal to the configured one).
    pub issuer: String,
    /// Where its key set is.
    pub jwks_uri: Url,
}

/// Why no metadata of an issuer could be used.
#[derive(Debug, thiserror::Error)]
#[error("the metadata of `{issuer}` could not be used: {}", tried.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct DiscoveryError {
    /// The issuer.
    pub issuer: String,
    /// What each document answered, in the order tried.
    pub tried: Vec<DocumentError>,
}

/// Why one metadata document could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// It could not be fetched.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// It names another issuer.
    #[error("{url}: names the issuer `{named}`, not `{expected}` (RFC 8414 §3.3: they must be identical)")]
    OtherIssuer {
        /// The document.
        url: String,
        /// The issuer it names.
        named: String,
        /// The configured issuer.
        expected: String,
    },
    /// It has no usable `jwks_uri`.
    #[error("{url}: `jwks_uri` {why}")]
    JwksUri {
        /// The document.
        url: String,
        /// What is wrong with it.
        why: String,
    },
}

/// The metadata documents of `issuer`, in the order they are tried.
pub fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut origin = issuer.clone();
    origin.set_query(None);
    origin.set_fragment(None);
    let mut urls = Vec::with_capacity(2);
    let mut rfc8414 = origin.clone();
    rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    urls.push(rfc8414);
    let mut oidc = origin;
    oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
    urls.push(oidc);
    urls
}

/// Fetch the metadata of `issuer` (exactly as configured, `issuer_url` parsed).
///
/// # Errors
/// [`DiscoveryError`] with what every document answered.
pub(crate) async fn discover(
    fetcher: &Fetcher,
    issuer: &str,
    issuer_url: &Url,
) -> Result<IssuerMetadata, DiscoveryError> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer_url) {
        match document(fetcher, &url, issuer).await {
            Ok(m) => return Ok(m),
            Err(e) => tried.push(e),
        }
    }
    Err(DiscoveryError {
        issuer: issuer.to_string(),
        tried,
    })
}

async fn document(
    fetcher: &Fetcher,
    url: &Url,
    issuer: &str,
) -> Result<IssuerMetadata, DocumentError> {
    let doc = fetcher.json(url).await?;
    let named = doc.get("issuer").and_then(|v| v.as_str()).unwrap_or("");
    if named != issuer {
        return Err(DocumentError::OtherIssuer {
            url: url.to_string(),
            named: named.to_string(),
            expected: issuer.to_string(),
        });
    }
    let jwks = |why: String| DocumentError::JwksUri {
        url: url.to_string(),
        why,
    };
    let raw = doc
        .get("jwks_uri")
        .and_then(|v| v.as_str())
        .ok_or_else(|| jwks("is missing".into()))?;
    let jwks_uri = Url::parse(raw).map_err(|e| jwks(format!("`{raw}` is not a URL: {e}")))?;
    if let Some(why) = crate::origin_rule::problem(&jwks_uri) {
        return Err(jwks(format!("`{raw}`: {why}")));
    }
    Ok(IssuerMetadata {
        issuer: named.to_string(),
        jwks_uri,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(issuer: &str) -> Vec<String> {
        metadata_urls(&Url::parse(issuer).unwrap())
            .into_iter()
            .map(|u| u.to_string())
            .collect()
    }

    #[test]
    fn rfc8414_puts_the_path_after_the_well_known_oidc_before_it() {
        assert_eq!(
            urls("https://idp.example.com"),
            [
                "https://idp.example.com/.well-known/oauth-authorization-server",
                "https://idp.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            urls("https://idp.example.com/tenant/1/"),
            [
                "https://idp.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://idp.example.com/tenant/1/.well-known/openid-configuration"
            ]
        );
    }
}
