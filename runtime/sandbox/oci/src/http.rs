//! The registry's side of a fetch: the two GETs of the OCI distribution API a pinned image
//! needs (a manifest, a blob, each by digest), anonymous, over one `reqwest` client whose every
//! request goes only to an origin the image's [`Access`] admits.
//!
//! The first request goes to the registry's own origin (`https://host:port`, or `http://` with
//! [`Access::plain_http`]). A redirect is followed only to an admitted origin — the registry's
//! own, or one of [`Access::blob_hosts`] — each hop checked by the client's redirect policy
//! before it is requested, at most [`MAX_REDIRECTS`] hops; a hop refused is an
//! [`OciError::Refused`] and nothing is sent there. A `401` with a `Bearer` challenge is
//! answered once with an anonymous token from the challenge's `realm`, which must be an admitted
//! origin as well; the token goes only to the registry (`reqwest` drops `Authorization` on a
//! redirect to another origin). Bodies are read chunk by chunk, never more than the caller
//! bounds.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::header::{HeaderMap, ACCEPT, WWW_AUTHENTICATE};
use reqwest::{Response, StatusCode};
use url::Url;

use crate::error::{OciError, Refusal, RegistryError};
use crate::types::{Access, BlobHost};

/// How long a connection to a registry may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a registry may stay silent in the middle of a response.
const READ_TIMEOUT: Duration = Duration::from_secs(120);
/// The most redirects followed for one request.
pub const MAX_REDIRECTS: usize = 5;
/// The most read of an error answer (for the message) or of a token answer.
const SMALL_BODY: usize = 64 << 10;

/// The origins one image's requests may go to.
#[derive(Debug)]
struct Admission {
    /// The registry's own origin, and its text.
    registry: (url::Origin, String),
    /// The blob hosts listed for it.
    hosts: Vec<(url::Origin, String)>,
}

/// `scheme://authority/` for an authority that must be nothing else.
fn origin_url(scheme: &str, authority: &str) -> Result<Url, String> {
    let url = Url::parse(&format!("{scheme}://{authority}/"))
        .map_err(|e| format!("`{authority}` is not `host[:port]`: {e}"))?;
    let plain = url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.host_str().is_some_and(|h| !h.is_empty())
        && !authority.contains(['/', '@', '?', '#']);
    if plain {
        Ok(url)
    } else {
        Err(format!(
            "`{authority}` is not `host[:port]` (no path, user or query)"
        ))
    }
}

/// Whether `url`'s host is a loopback address or `localhost`.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// A URL as errors show it: without user information, query or fragment (a signed blob URL's
/// query is a credential).
pub fn shown(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

impl Admission {
    fn new(registry: &str, access: &Access) -> Result<Self, String> {
        let scheme = |plain: bool| if plain { "http" } else { "https" };
        let own = origin_url(scheme(access.plain_http), registry)?;
        if access.plain_http && !is_loopback(&own) {
            return Err(format!(
                "plain HTTP is spoken only to a loopback registry, not `{registry}`"
            ));
        }
        let mut hosts = Vec::with_capacity(access.blob_hosts.len());
        for BlobHost {
            authority,
            plain_http,
        } in &access.blob_hosts
        {
            let url = origin_url(scheme(*plain_http), authority)
                .map_err(|e| format!("blob host: {e}"))?;
            if *plain_http && !is_loopback(&url) {
                return Err(format!(
                    "plain HTTP is spoken only to a loopback blob host, not `{authority}`"
                ));
            }
            hosts.push((url.origin(), url.origin().ascii_serialization()));
        }
        Ok(Self {
            registry: (own.origin(), own.origin().ascii_serialization()),
            hosts,
        })
    }

    /// Whether a request may go to `url`.
    fn check(&self, url: &Url) -> Result<(), Refusal> {
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::UserInfo { url: shown(url) });
        }
        let origin = url.origin();
        if origin == self.registry.0 || self.hosts.iter().any(|(o, _)| *o == origin) {
            return Ok(());
        }
        Err(Refusal::NotAdmitted {
            url: shown(url),
            origin: origin.ascii_serialization(),
            admitted: std::iter::once(&self.registry.1)
                .chain(self.hosts.iter().map(|(_, s)| s))
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

/// The [`Refusal`] a failed request carries (a redirect hop the policy refused), if any.
fn refusal_of(e: &reqwest::Error) -> Option<Refusal> {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<Refusal>() {
            return Some(r.clone());
        }
        cause = c.source();
    }
    None
}

/// The anonymous client of one image's registry.
pub struct RegistryClient {
    http: reqwest::Client,
    admission: Arc<Admission>,
    /// `scheme://registry/`.
    base: Url,
    repository: String,
    /// `HTTPS` or `plain HTTP`, for errors.
    pub scheme: &'static str,
    /// The bearer token of the registry's challenge, once fetched.
    token: Mutex<Option<String>>,
}

/// One GET: what it is for (errors name it), its URL and `Accept`.
pub struct Get<'a> {
    /// The image reference.
    pub image: &'a str,
    /// `manifest sha256:…`, `blob sha256:…`.
    pub what: &'a str,
    /// `manifests/<digest>` or `blobs/<digest>`.
    pub path: String,
    /// The `Accept` header, if any.
    pub accept: Option<String>,
}

impl RegistryClient {
    /// The client of `registry`/`repository` under `access`.
    ///
    /// # Errors
    /// [`OciError::BadAccess`] when `access` names an origin that cannot be admitted;
    /// [`OciError::Registry`] when the HTTP client cannot be built.
    pub fn new(
        image: &str,
        registry: &str,
        repository: &str,
        access: &Access,
    ) -> Result<Self, OciError> {
        let scheme = if access.plain_http {
            "plain HTTP"
        } else {
            "HTTPS"
        };
        let admission =
            Arc::new(
                Admission::new(registry, access).map_err(|reason| OciError::BadAccess {
                    image: image.to_string(),
                    reason,
                })?,
            );
        let base = origin_url(if access.plain_http { "http" } else { "https" }, registry).map_err(
            |reason| OciError::BadAccess {
                image: image.to_string(),
                reason,
            },
        )?;
        let policy = {
            let admission = Arc::clone(&admission);
            reqwest::redirect::Policy::custom(move |attempt| {
                // `previous` holds every URL requested so far: the first, then each hop.
                if attempt.previous().len() > MAX_REDIRECTS {
                    let url = shown(attempt.url());
                    return attempt.error(Refusal::TooManyRedirects {
                        url,
                        max: MAX_REDIRECTS,
                    });
                }
                match admission.check(attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(refusal) => attempt.error(refusal),
                }
            })
        };
        let http = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("escepine/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                OciError::registry(
                    image,
                    "nothing (the HTTP client could not be built)".into(),
                    scheme,
                    RegistryError::Http(e),
                )
            })?;
        Ok(Self {
            http,
            admission,
            base,
            repository: repository.to_string(),
            scheme,
            token: Mutex::new(None),
        })
    }

    fn transfer(&self, get: &Get<'_>, source: RegistryError) -> OciError {
        OciError::registry(get.image, get.what.to_string(), self.scheme, source)
    }

    /// A failed `send`: a refused redirect hop, or a transfer error.
    fn failed(&self, get: &Get<'_>, e: reqwest::Error) -> OciError {
        match refusal_of(&e) {
            Some(reason) => OciError::Refused {
                image: get.image.to_string(),
                what: get.what.to_string(),
                via: "the registry redirected to",
                reason: Box::new(reason),
            },
            None => self.transfer(get, RegistryError::Http(e)),
        }
    }

    /// GET `/v2/<repository>/<path>`, answering a `Bearer` challenge once; a success status.
    ///
    /// # Errors
    /// [`OciError::Refused`] for a redirect hop or token service not admitted,
    /// [`OciError::Registry`] for a transfer error or an error status.
    pub async fn get(&self, get: &Get<'_>) -> Result<Response, OciError> {
        let url = self
            .base
            .join(&format!("v2/{}/{}", self.repository, get.path))
            .map_err(|e| OciError::BadAccess {
                image: get.image.to_string(),
                reason: format!("no request URL can be formed for `{}`: {e}", get.path),
            })?;
        let mut challenged = false;
        loop {
            let mut request = self.http.get(url.clone());
            if let Some(accept) = &get.accept {
                request = request.header(ACCEPT, accept);
            }
            let token = self
                .token
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let response = request.send().await.map_err(|e| self.failed(get, e))?;
            let status = response.status();
            if status == StatusCode::UNAUTHORIZED && !challenged {
                if let Some(challenge) = bearer_challenge(response.headers()) {
                    challenged = true;
                    let token = self.fetch_token(get, &challenge).await?;
                    *self.token.lock().unwrap_or_else(PoisonError::into_inner) = Some(token);
                    continue;
                }
            }
            if !status.is_success() {
                let url = shown(response.url());
                let body = read_small(response).await;
                return Err(self.transfer(
                    get,
                    RegistryError::Status {
                        url,
                        status: status.as_u16(),
                        body,
                    },
                ));
            }
            return Ok(response);
        }
    }

    /// An anonymous token from the challenge's `realm` (which must be an admitted origin).
    async fn fetch_token(&self, get: &Get<'_>, challenge: &Challenge) -> Result<String, OciError> {
        let refused = |reason| OciError::Refused {
            image: get.image.to_string(),
            what: get.what.to_string(),
            via: "the registry's challenge names the token service",
            reason: Box::new(reason),
        };
        let mut realm = Url::parse(&challenge.realm).map_err(|e| {
            refused(Refusal::NotUrl {
                url: challenge.realm.clone(),
                reason: e.to_string(),
            })
        })?;
        self.admission.check(&realm).map_err(refused)?;
        {
            let mut query = realm.query_pairs_mut();
            if let Some(service) = &challenge.service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{}:pull", self.repository));
        }
        let shown_realm = shown(&realm);
        let token_error = |reason: String| {
            self.transfer(
                get,
                RegistryError::Token {
                    url: shown_realm.clone(),
                    reason,
                },
            )
        };
        let response = self
            .http
            .get(realm)
            .send()
            .await
            .map_err(|e| self.failed(get, e))?;
        let status = response.status();
        let body = read_small(response).await;
        if !status.is_success() {
            return Err(token_error(format!("answered {status}: {body}")));
        }
        let value: serde_json::Value = serde_json::from_str(&body)
            .map_err(|e| token_error(format!("the answer is not JSON: {e}")))?;
        ["token", "access_token"]
            .iter()
            .find_map(|k| value.get(*k)?.as_str().filter(|t| !t.is_empty()))
            .map(str::to_string)
            .ok_or_else(|| token_error("the answer has no string `token`".into()))
    }

    /// The next chunk of `response`'s body (`None` at its end).
    ///
    /// # Errors
    /// [`OciError::Registry`] when the transfer breaks.
    pub async fn chunk(
        &self,
        get: &Get<'_>,
        response: &mut Response,
    ) -> Result<Option<impl std::ops::Deref<Target = [u8]>>, OciError> {
        response
            .chunk()
            .await
            .map_err(|e| self.transfer(get, RegistryError::Http(e)))
    }
}

/// The start of an answer's body, as text (at most [`SMALL_BODY`] bytes read).
async fn read_small(mut response: Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < SMALL_BODY {
        match response.chunk().await {
            Ok(Some(c)) => bytes.extend_from_slice(&c),
            _ => break,
        }
    }
    bytes.truncate(SMALL_BODY);
    let text = String::from_utf8_lossy(&bytes);
    text.trim().chars().take(400).collect()
}

/// A `Bearer` challenge's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Challenge {
    realm: String,
    service: Option<String>,
}

/// The first `Bearer` challenge with a `realm` among `WWW-Authenticate`.
fn bearer_challenge(headers: &HeaderMap) -> Option<Challenge> {
    for value in headers.get_all(WWW_AUTHENTICATE) {
        let Ok(text) = value.to_str() else { continue };
        for challenge in http_auth::parser::ChallengeParser::new(text).flatten() {
            if !challenge.scheme.eq_ignore_ascii_case("Bearer") {
                continue;
            }
            let param = |name: &str| {
                challenge
                    .params
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.to_unescaped())
            };
            if let Some(realm) = param("realm") {
                return Some(Challenge {
                    realm,
                    service: param("service"),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(access: &Access) -> Admission {
        Admission::new("127.0.0.1:5000", access).expect("admitted")
    }

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    #[test]
    fn only_the_registry_and_its_listed_hosts_are_admitted_each_with_its_scheme() {
        let access = Access {
            plain_http: true,
            blob_hosts: vec![
                BlobHost::http("127.0.0.1:5001"),
                BlobHost::https("blobs.example.com"),
            ],
            ..Access::default()
        };
        let a = admission(&access);
        for ok in [
            "http://127.0.0.1:5000/v2/x/blobs/sha256:0",
            "http://127.0.0.1:5001/any?sig=1",
            "https://blobs.example.com/b",
            "https://BLOBS.example.com:443/b",
        ] {
            assert_eq!(a.check(&url(ok)), Ok(()), "{ok}");
        }
        for refused in [
            // The registry's host over another scheme or port.
            "https://127.0.0.1:5000/v2/",
            "http://127.0.0.1:5002/",
            // A listed HTTPS host over plain HTTP.
            "http://blobs.example.com/b",
            "http://127.0.0.2:5001/",
            "http://localhost:5000/",
        ] {
            let err = a.check(&url(refused)).expect_err(refused);
            assert!(
                matches!(err, Refusal::NotAdmitted { .. }),
                "{refused}: {err}"
            );
        }
        let err = a
            .check(&url("http://user:pw@127.0.0.1:5001/?secret=1"))
            .expect_err("user information");
        assert_eq!(
            err,
            Refusal::UserInfo {
                url: "http://127.0.0.1:5001/".into()
            }
        );
    }

    #[test]
    fn plain_http_is_refused_off_loopback_for_the_registry_and_its_hosts() {
        let registry = Admission::new(
            "registry.example.com",
            &Access {
                plain_http: true,
                ..Access::default()
            },
        )
        .expect_err("plain HTTP off loopback");
        assert!(registry.contains("loopback"), "{registry}");
        let host = Admission::new(
            "127.0.0.1:5000",
            &Access {
                blob_hosts: vec![BlobHost::http("blobs.example.com")],
                ..Access::default()
            },
        )
        .expect_err("plain HTTP blob host off loopback");
        assert!(host.contains("blob host"), "{host}");
        let path = Admission::new(
            "127.0.0.1:5000",
            &Access {
                blob_hosts: vec![BlobHost::https("blobs.example.com/path")],
                ..Access::default()
            },
        )
        .expect_err("not an authority");
        assert!(path.contains("host[:port]"), "{path}");
    }

    #[test]
    fn a_bearer_challenge_gives_its_realm_and_service() {
        let mut h = HeaderMap::new();
        h.append(
            WWW_AUTHENTICATE,
            "Basic realm=\"x\", Bearer realm=\"https://auth.example.com/token\",service=\"registry.example.com\",scope=\"repository:a:pull\""
                .parse()
                .expect("header"),
        );
        assert_eq!(
            bearer_challenge(&h),
            Some(Challenge {
                realm: "https://auth.example.com/token".into(),
                service: Some("registry.example.com".into()),
            })
        );
        assert_eq!(bearer_challenge(&HeaderMap::new()), None);
    }
}
