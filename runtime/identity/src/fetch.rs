//! The one HTTP client of the resource server: `GET` a JSON document from an issuer, after the
//! URL passed the origin rule (so a refused URL is never connected to), following no redirect,
//! within a timeout, reading at most [`MAX_BODY`] bytes whatever `Content-Length` claims.

use std::time::Duration;

use serde_json::Value;
use url::Url;

/// The largest document read.
pub(crate) const MAX_BODY: usize = 1 << 20;
/// The whole request's time limit.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// Why a document could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL breaks the origin rule: nothing was sent.
    #[error("{url}: refused before any connection: {why}")]
    Refused {
        /// The URL.
        url: String,
        /// The rule broken.
        why: String,
    },
    /// The server answered a redirect, which is not followed.
    #[error("{url}: answered {status} (a redirect to {location}), which is not followed")]
    Redirect {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
        /// Where it pointed.
        location: String,
    },
    /// The server answered another status than `200`.
    #[error("{url}: answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// The body is larger than [`MAX_BODY`].
    #[error("{url}: the document is larger than {MAX_BODY} bytes")]
    TooLarge {
        /// The URL.
        url: String,
    },
    /// The body is not one JSON object (or repeats a key).
    #[error("{url}: not a JSON object: {why}")]
    Json {
        /// The URL.
        url: String,
        /// Why.
        why: String,
    },
    /// The connection or the transfer failed.
    #[error("{url}: {source}")]
    Transport {
        /// The URL.
        url: String,
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
}

/// The bounded client.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
}

impl Fetcher {
    /// A client that follows no redirect and gives up after [`TIMEOUT`].
    pub(crate) fn new() -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .user_agent(concat!("escepine/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client })
    }

    /// The JSON object at `url`.
    pub(crate) async fn json(&self, url: &Url) -> Result<Value, FetchError> {
        let shown = url.to_string();
        if let Some(why) = crate::origin_rule::problem(url) {
            return Err(FetchError::Refused { url: shown, why });
        }
        let transport = |source| FetchError::Transport {
            url: url.to_string(),
            source,
        };
        let mut response = self
            .client
            .get(url.clone())
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .unwrap_or("")
                .to_string();
            return Err(FetchError::Redirect {
                url: shown,
                status: status.as_u16(),
                location,
            });
        }
        if status != http::StatusCode::OK {
            return Err(FetchError::Status {
                url: shown,
                status: status.as_u16(),
            });
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_BODY as u64)
        {
            return Err(FetchError::TooLarge { url: shown });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(FetchError::TooLarge { url: shown });
            }
            body.extend_from_slice(&chunk);
        }
        match escepine_contract::strict_json::from_slice(&body) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(FetchError::Json {
                url: shown,
                why: "the document is not an object".into(),
            }),
            Err(e) => Err(FetchError::Json {
                url: shown,
                why: e.to_string(),
            }),
        }
    }
}
