//! Remote endpoints (feature `mcp-http`): MCP servers over streamable HTTP, called by the
//! runtime's own MCP client on the governed path, with credentials the agent never holds.
//!
//! An `mcp-http` record runs no local code, so there is no sandbox: [`RemoteExecutor`] is the
//! executor of those records, whatever executor the runtime has for the others. One attempt:
//!
//! 1. every origin it will connect to (the server's, the token endpoint's) must be admitted by
//!    the call's egress grant (the record's profile, within the envelope) — else the attempt
//!    fails before any request;
//! 2. the credential: the declared secret as a bearer token, or an access token of the
//!    client-credentials grant or of a token exchange of the caller's own token (see
//!    [`tokens`]), from this runtime's memory while it is fresh;
//! 3. a session ([`http`]): 2026-07-28 when the server speaks it (remembered per URL for the
//!    next attempts), else a 2025-11-25 `initialize` session;
//! 4. `tools/list`, the tool chosen by its exact name (`endpoint.tool`), its definition
//!    compared with the pin (`endpoint.definition_sha256`): a change sends no `tools/call`;
//! 5. `tools/call`, and the output read as for `mcp-stdio` ([`crate::mcp::transport`]).
//!
//! A 401 from the server with an OAuth token fetches a new token once and starts over. HTTP
//! 429 and 503 and connection failures are transient (with the server's `Retry-After`); a
//! JSON-RPC error, a redirect, a TLS certificate that does not verify are permanent.
//!
//! Tokens and secrets go into the `Authorization` header of the requests and nowhere else:
//! the output and every message are scrubbed of them, and the attempt's evidence names the
//! requests (`POST host:port/path (method)`) and the credential's grant, the digest of its
//! token endpoint and the `sub` it names ([`escepine_ledger::record::CredentialUse`]).

pub mod http;
pub mod tokens;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use escepine_contract::EgressGrant;
use escepine_ledger::record::CredentialUse;
use escepine_ledger::store::BoxFuture;
use escepine_registry::remote::{RemoteAuth, RemoteUrl};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use self::http::{Era, HttpSession};
use self::tokens::{Ask, GrantKind, TokenCache};
use crate::executor::group::DEFAULT_STDOUT_LIMIT;
use crate::executor::seam::{Attempted, Egress, ExecError, Execution, Executor, Invocation};
use crate::mcp::rpc::{list_tools, SessionError};
use crate::mcp::transport::{call_listed, classify, Choose};
use crate::scrub::Scrubber;

/// Why the remote executor could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// A CA file of the envelope could not be read or holds no certificate.
    #[error("the CA file {path} (the envelope's `remote_ca_files`): {why}")]
    CaFile {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The HTTP client could not be built.
    #[error("the HTTP client of remote endpoints: {0}")]
    Client(#[source] reqwest::Error),
}

/// The executor of `mcp-http` records: one HTTP client (TLS verified with the system roots
/// and the envelope's CA files, no redirects, no proxy), this runtime's tokens, and the
/// revision each server was found to speak.
pub struct RemoteExecutor {
    http: reqwest::Client,
    tokens: TokenCache,
    eras: std::sync::Mutex<HashMap<String, Era>>,
    max_bytes: usize,
}

impl std::fmt::Debug for RemoteExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteExecutor")
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl RemoteExecutor {
    /// An executor trusting the system's roots and the certificates of `ca_files`.
    ///
    /// # Errors
    /// [`RemoteError`].
    pub fn new(ca_files: &[impl AsRef<Path>]) -> Result<Self, RemoteError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("escepine/", env!("CARGO_PKG_VERSION")));
        for path in ca_files {
            let path = path.as_ref();
            let shown = path.display().to_string();
            let pem = std::fs::read(path).map_err(|e| RemoteError::CaFile {
                path: shown.clone(),
                why: e.to_string(),
            })?;
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| RemoteError::CaFile {
                    path: shown.clone(),
                    why: e.to_string(),
                })?;
            if certs.is_empty() {
                return Err(RemoteError::CaFile {
                    path: shown,
                    why: "it holds no PEM certificate".into(),
                });
            }
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        Ok(Self {
            http: builder.build().map_err(RemoteError::Client)?,
            tokens: TokenCache::default(),
            eras: std::sync::Mutex::default(),
            max_bytes: DEFAULT_STDOUT_LIMIT,
        })
    }

    /// This runtime's tokens (how many were fetched: [`TokenCache::fetches`]).
    pub fn tokens(&self) -> &TokenCache {
        &self.tokens
    }

    /// The revision the server at `url` was last found to speak.
    fn era(&self, url: &RemoteUrl) -> Option<Era> {
        self.eras
            .lock()
            .ok()
            .and_then(|m| m.get(url.url.as_str()).cloned())
    }

    fn remember(&self, url: &RemoteUrl, era: Option<Era>) {
        if let Ok(mut m) = self.eras.lock() {
            match era {
                Some(e) => m.insert(url.url.to_string(), e),
                None => m.remove(url.url.as_str()),
            };
        }
    }

    async fn run(&self, inv: &Invocation<'_>, egress: &mut Egress) -> Result<Execution, ExecError> {
        let tool = inv.tool.tool_id();
        let Some(remote) = &inv.tool.endpoint().remote else {
            return Err(ExecError::Spawn(format!(
                "tool `{tool}` is not a remote endpoint (`mcp-http`)"
            )));
        };
        for url in remote.urls() {
            if !admitted(inv.egress, url) {
                let refusal = format!(
                    "refused POST {}{}: the origin is not in the call's egress (the record's \
                     profile, within the deployment envelope)",
                    url.authority(),
                    url.url.path()
                );
                egress.refusals.push(refusal.clone());
                return Err(ExecError::Permanent {
                    message: format!("`{tool}`: {refusal}; nothing was sent"),
                    stderr: String::new(),
                });
            }
        }
        let mut scrub_values: Vec<Arc<str>> = Vec::new();
        if let Some(t) = inv.caller_token {
            scrub_values.push(Arc::from(t.expose()));
        }
        let mut outcome = Err(SessionError::Refused("no attempt".into()));
        for round in 0..2 {
            let bearer = match self
                .credential(
                    &remote.auth,
                    inv.secrets,
                    inv.caller_token.map(|t| t.expose()),
                    round > 0,
                    egress,
                    &mut scrub_values,
                )
                .await
            {
                Ok(b) => b,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            };
            let known = self.era(&remote.url);
            let (mut session, opened) = match HttpSession::open(
                self.http.clone(),
                remote.url.clone(),
                bearer,
                inv.trace.cloned(),
                known.clone(),
                self.max_bytes,
            )
            .await
            {
                Ok(s) => (s, Ok(())),
                Err((s, e)) => (s, Err(e)),
            };
            outcome = match opened {
                Ok(()) => {
                    if known.is_none() {
                        self.remember(&remote.url, Some(session.era().clone()));
                    }
                    call_listed(
                        &mut session,
                        inv.tool,
                        Choose::Exactly(&remote.tool),
                        inv.payload,
                        inv.trace,
                    )
                    .await
                }
                Err(e) => Err(e),
            };
            // A server that stopped speaking the remembered revision is asked again next time.
            if matches!(
                outcome,
                Err(SessionError::Refused(_)) | Err(SessionError::Protocol(_))
            ) && known.is_some()
                && !session.unauthorized
            {
                self.remember(&remote.url, None);
            }
            let unauthorized = session.unauthorized;
            egress.requests.append(&mut session.requests);
            session.close();
            let oauth = remote.auth.grant().is_some();
            if !(unauthorized && oauth && round == 0) {
                break;
            }
        }
        let scrubber = scrubber_of(inv, &scrub_values);
        match classify(tool, outcome, None, String::new(), &scrubber) {
            Ok(mut e) => {
                scrubber.value(&mut e.output);
                Ok(e)
            }
            Err(e) => Err(scrub_error(e, &scrubber)),
        }
    }

    /// The bearer token of an attempt, and what the evidence keeps of it.
    async fn credential(
        &self,
        auth: &RemoteAuth,
        secrets: &BTreeMap<String, String>,
        caller_token: Option<&str>,
        fresh: bool,
        egress: &mut Egress,
        scrub_values: &mut Vec<Arc<str>>,
    ) -> Result<Option<Arc<str>>, SessionError> {
        let secret = |name: &str| {
            secrets.get(name).cloned().ok_or_else(|| {
                SessionError::Refused(format!(
                    "the secret `{name}` the endpoint's `auth` names has no value"
                ))
            })
        };
        let (kind, grant) = match auth {
            RemoteAuth::None => return Ok(None),
            RemoteAuth::Bearer { secret: name } => {
                egress.credential = Some(CredentialUse {
                    grant: "bearer".into(),
                    token_endpoint_sha256: None,
                    sub: None,
                });
                return Ok(Some(Arc::from(secret(name)?)));
            }
            RemoteAuth::ClientCredentials(g) => (GrantKind::ClientCredentials, g),
            RemoteAuth::TokenExchange(g) => (GrantKind::TokenExchange, g),
        };
        let client_secret = secret(&grant.client_secret)?;
        let ask = Ask {
            kind,
            grant,
            client_secret: &client_secret,
            subject_token: caller_token,
            fresh,
        };
        let issued = self
            .tokens
            .get(&self.http, &ask, &mut egress.requests)
            .await?;
        scrub_values.push(issued.token.clone());
        egress.credential = Some(CredentialUse {
            grant: kind.as_str().into(),
            token_endpoint_sha256: Some(hex::encode(Sha256::digest(
                grant.token_endpoint.url.as_str().as_bytes(),
            ))),
            sub: issued.sub.clone(),
        });
        Ok(Some(issued.token))
    }

    /// Every tool a remote server lists, with what it says of itself: what `escepine import
    /// mcp --url` drafts records from. The session authenticates as `auth` says, with the
    /// values of `secrets`; nothing is recorded.
    ///
    /// # Errors
    /// [`SessionError`]; tokens and secrets are scrubbed from its message.
    pub async fn list(
        &self,
        url: &RemoteUrl,
        auth: &RemoteAuth,
        secrets: &BTreeMap<String, String>,
    ) -> Result<Listing, SessionError> {
        let mut egress = Egress::default();
        let mut tokens = Vec::new();
        let listed = async {
            let bearer = self
                .credential(auth, secrets, None, false, &mut egress, &mut tokens)
                .await?;
            let mut session = HttpSession::open(
                self.http.clone(),
                url.clone(),
                bearer,
                None,
                None,
                self.max_bytes,
            )
            .await
            .map_err(|(_, e)| e)?;
            let tools = list_tools(&mut session).await;
            let info = session.server_info.take();
            session.close();
            Ok(Listing {
                tools: tools?,
                server_info: info,
            })
        }
        .await;
        listed.map_err(|e: SessionError| {
            let scrubber = Scrubber::new(
                secrets
                    .values()
                    .map(String::as_str)
                    .chain(tokens.iter().map(|t| &**t)),
            );
            SessionError::Refused(scrubber.text(&e.to_string()))
        })
    }
}

/// What a remote server lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// Its tools, as it wrote them.
    pub tools: Vec<serde_json::Value>,
    /// Its `serverInfo` (`name`, `version`), when it gave one.
    pub server_info: Option<serde_json::Value>,
}

/// Whether the call's grant admits the origin of `url` (its static entries, or the origins its
/// authorization allowed).
fn admitted(grant: &EgressGrant, url: &RemoteUrl) -> bool {
    url.admitted_by(&grant.entries)
        || grant.origins.iter().any(|o| {
            o.scheme == url.scheme
                && o.port == url.port
                && o.host
                    .to_string()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    == url.host
        })
}

/// The call's scrubber with the attempt's tokens added.
fn scrubber_of(inv: &Invocation<'_>, tokens: &[Arc<str>]) -> Scrubber {
    if tokens.is_empty() {
        return inv.scrubber();
    }
    Scrubber::new(
        inv.secrets
            .values()
            .map(String::as_str)
            .chain(tokens.iter().map(|t| &**t)),
    )
}

/// `e` with its texts scrubbed.
fn scrub_error(e: ExecError, s: &Scrubber) -> ExecError {
    match e {
        ExecError::Transient { message, stderr } => ExecError::Transient {
            message: s.text(&message),
            stderr: s.text(&stderr),
        },
        ExecError::Permanent { message, stderr } => ExecError::Permanent {
            message: s.text(&message),
            stderr: s.text(&stderr),
        },
        ExecError::Unavailable {
            message,
            retry_after,
        } => ExecError::Unavailable {
            message: s.text(&message),
            retry_after,
        },
        ExecError::Protocol(m) => ExecError::Protocol(s.text(&m)),
        ExecError::Spawn(m) => ExecError::Spawn(s.text(&m)),
        t @ ExecError::TimedOut(_) => t,
    }
}

impl Executor for RemoteExecutor {
    fn execute<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Result<Execution, ExecError>> {
        Box::pin(async move { self.attempt(inv).await.result })
    }

    fn attempt<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Attempted> {
        Box::pin(async move {
            let mut egress = Egress::default();
            let deadline = Instant::now() + inv.timeout;
            let result = if inv.files.is_empty() {
                match tokio::time::timeout_at(deadline, self.run(&inv, &mut egress)).await {
                    Ok(r) => r,
                    Err(_) => Err(ExecError::TimedOut(inv.timeout)),
                }
            } else {
                Err(ExecError::Spawn(format!(
                    "tool `{}` is a remote endpoint, which takes no workspace files",
                    inv.tool.tool_id()
                )))
            };
            Attempted { result, egress }
        })
    }
}
