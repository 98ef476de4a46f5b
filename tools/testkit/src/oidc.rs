//! A real authorization server for the tests: `oidc-provider` (npm, pinned in `.ci/node`),
//! started from `runtime/tests/fixtures/oauth/provider.mjs` on loopback, issuing JWT access
//! tokens for resource indicators through the client-credentials grant
//! ([`Provider::client_credentials`]) and authorization code with PKCE, whose login and consent
//! forms this module fills over HTTP ([`Provider::authorization_code`]), and exchanging an
//! access token of its own for one meant for another resource (RFC 8693,
//! [`Provider::token_exchange`], for the clients [`ProviderConfig::exchanger`] adds). It counts
//! the requests for its key set ([`Provider::jwks_fetches`]) and the tokens it issued by grant
//! ([`Provider::token_counts`]), and its signing keys are test-only PEM files
//! (`runtime/identity/tests/keys/`), so tests can forge tokens with them ([`Provider::forge`]).
//!
//! Every call blocks (plain HTTP, no runtime of its own): a tokio test makes its calls through
//! `tokio::task::spawn_blocking` or from a thread of its own. [`Provider`] is `Send` and `Sync`.
//!
//! The claims of its access tokens (oidc-provider's JWT format, header `typ: at+jwt` and the
//! `kid`): `iss`, `aud` (the resource), `sub` (the login; the client id for client credentials),
//! `client_id`, `scope` (the requested scopes the resource accepts; absent when none is left),
//! `jti`, `iat`, `exp`, and `groups` (the account's or the client's; `[]` when it has none).
//! An exchanged token has the subject token's `sub` and `groups`, the exchanging client as
//! `client_id`, and `act: {"sub": <that client>}`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::fixtures;

/// Which test-only key set an issuer signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// `test-only-a-rs256.pem`, kid `a-rs256`.
    A,
    /// `test-only-b-rs256.pem`, kid `b-rs256`.
    B,
}

impl Keys {
    /// The private key file.
    pub fn pem(self) -> PathBuf {
        crate::bins::workspace_root()
            .join("runtime/identity/tests/keys")
            .join(match self {
                Self::A => "test-only-a-rs256.pem",
                Self::B => "test-only-b-rs256.pem",
            })
    }

    /// The public key file (PEM).
    pub fn public_pem(self) -> PathBuf {
        self.pem().with_extension("pub.pem")
    }

    /// Its `kid`.
    pub fn kid(self) -> &'static str {
        match self {
            Self::A => "a-rs256",
            Self::B => "b-rs256",
        }
    }
}

/// The grant type of RFC 8693 token exchange.
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// What an authorization server is started with.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The key set it signs with.
    pub keys: Keys,
    /// The resources it issues tokens for, each with the scopes it accepts.
    pub resources: BTreeMap<String, String>,
    /// Its clients (oidc-provider client metadata).
    pub clients: Vec<Value>,
    /// The logins of the authorization-code flow, each with its groups.
    pub accounts: BTreeMap<String, Vec<String>>,
    /// The groups of each client's client-credentials tokens.
    pub client_groups: BTreeMap<String, Vec<String>>,
    /// The access tokens' lifetime, in seconds.
    pub access_token_ttl_s: u64,
}

impl ProviderConfig {
    /// A provider for `resource` (scope `mcp:tools`) signing with `keys`, no client yet.
    pub fn new(keys: Keys, resource: &str) -> Self {
        Self {
            keys,
            resources: BTreeMap::from([(resource.to_string(), "mcp:tools".to_string())]),
            clients: Vec::new(),
            accounts: BTreeMap::new(),
            client_groups: BTreeMap::new(),
            access_token_ttl_s: 300,
        }
    }

    /// Add a confidential client of the client-credentials grant whose tokens carry `groups`.
    pub fn client(mut self, id: &str, secret: &str, groups: &[&str]) -> Self {
        self.clients.push(json!({
            "client_id": id,
            "client_secret": secret,
            "grant_types": ["client_credentials"],
            "response_types": [],
            "redirect_uris": [],
            "scope": "mcp:tools",
            "token_endpoint_auth_method": "client_secret_basic",
        }));
        self.client_groups.insert(
            id.to_string(),
            groups.iter().map(|g| g.to_string()).collect(),
        );
        self
    }

    /// Add a resource (a remote server's) it issues tokens for, accepting `scopes`
    /// (space-separated).
    pub fn resource(mut self, uri: &str, scopes: &str) -> Self {
        self.resources.insert(uri.to_string(), scopes.to_string());
        self
    }

    /// Add a confidential client of the client-credentials grant that may ask for `scope`
    /// (space-separated; the scopes of other resources than the first), its tokens carrying
    /// no groups.
    pub fn service(mut self, id: &str, secret: &str, scope: &str) -> Self {
        self.clients.push(json!({
            "client_id": id,
            "client_secret": secret,
            "grant_types": ["client_credentials"],
            "response_types": [],
            "redirect_uris": [],
            "scope": scope,
            "token_endpoint_auth_method": "client_secret_basic",
        }));
        self
    }

    /// Add a confidential client allowed the token-exchange grant (RFC 8693) and no other, that
    /// may ask for `scope` (space-separated).
    pub fn exchanger(mut self, id: &str, secret: &str, scope: &str) -> Self {
        self.clients.push(json!({
            "client_id": id,
            "client_secret": secret,
            "grant_types": [TOKEN_EXCHANGE],
            "response_types": [],
            "redirect_uris": [],
            "scope": scope,
            "token_endpoint_auth_method": "client_secret_basic",
        }));
        self
    }

    /// Set the access tokens' lifetime.
    pub fn access_token_ttl_s(mut self, ttl: u64) -> Self {
        self.access_token_ttl_s = ttl;
        self
    }

    /// Add a public client of the authorization-code grant (PKCE) redirecting to
    /// `redirect_uri`.
    pub fn app(mut self, id: &str, redirect_uri: &str) -> Self {
        self.clients.push(json!({
            "client_id": id,
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "redirect_uris": [redirect_uri],
            "scope": "openid mcp:tools",
            "token_endpoint_auth_method": "none",
        }));
        self
    }

    /// Add a login of the authorization-code flow, member of `groups`.
    pub fn account(mut self, login: &str, groups: &[&str]) -> Self {
        self.accounts.insert(
            login.to_string(),
            groups.iter().map(|g| g.to_string()).collect(),
        );
        self
    }
}

/// A running authorization server (killed on drop).
#[derive(Debug)]
pub struct Provider {
    child: Child,
    /// Its issuer identifier, `http://127.0.0.1:PORT`.
    pub issuer: String,
    keys: Keys,
    _config: tempfile::NamedTempFile,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP agent that follows no redirect and reports every status as a response.
pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(20)))
            .build(),
    )
}

impl Provider {
    /// Start `config`'s server and wait for its issuer line.
    ///
    /// # Panics
    /// When `oidc-provider` is not installed (run `.ci/fixtures`) or it does not start.
    pub fn start(config: &ProviderConfig) -> Self {
        let modules = fixtures::node_modules().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            modules.join("oidc-provider").is_dir(),
            "oidc-provider is not installed in {} (run .ci/fixtures)",
            modules.display()
        );
        let mut file = tempfile::NamedTempFile::new().expect("a config file");
        let doc = json!({
            "port": 0,
            "keys": [{ "pem": config.keys.pem(), "kid": config.keys.kid(), "alg": "RS256" }],
            "resources": config.resources,
            "clients": config.clients,
            "accounts": config.accounts,
            "client_groups": config.client_groups,
            "access_token_ttl_s": config.access_token_ttl_s,
        });
        std::io::Write::write_all(&mut file, doc.to_string().as_bytes()).expect("write");
        let script =
            crate::bins::workspace_root().join("runtime/tests/fixtures/oauth/provider.mjs");
        let mut child = Command::new(fixtures::NODE)
            .env("NODE_PATH", &modules)
            .arg(script)
            .arg(file.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn node");
        // Its log, echoed (but its warnings), and kept for the message of a failed start.
        let watched = crate::child_log::ChildLog::watch(
            &mut child,
            "oidc-provider",
            |line| line.contains("WARNING"),
            |line| line.strip_prefix("issuer ").map(|i| i.trim().to_string()),
        );
        let issuer = watched.ready(
            &mut child,
            Duration::from_secs(30),
            "oidc-provider printed no issuer",
        );
        Self {
            child,
            issuer,
            keys: config.keys,
            _config: file,
        }
    }

    /// A JWT access token for `resource` by the client-credentials grant.
    ///
    /// # Panics
    /// When the server refuses (see [`Self::try_client_credentials`]).
    pub fn client_credentials(
        &self,
        id: &str,
        secret: &str,
        resource: &str,
        scope: &str,
    ) -> String {
        self.try_client_credentials(id, secret, resource, scope)
            .unwrap_or_else(|e| panic!("client credentials of {id}: {e}"))
    }

    /// A JWT access token for `resource` by the client-credentials grant, or the server's
    /// refusal (`status: body`).
    pub fn try_client_credentials(
        &self,
        id: &str,
        secret: &str,
        resource: &str,
        scope: &str,
    ) -> Result<String, String> {
        self.token_request(
            id,
            secret,
            &[
                ("grant_type", "client_credentials"),
                ("scope", scope),
                ("resource", resource),
            ],
        )
    }

    /// A JWT access token for `resource` by the authorization-code grant with PKCE (S256),
    /// `login` signing in and consenting through the development forms.
    ///
    /// # Panics
    /// When the server refuses (see [`Self::try_authorization_code`]).
    pub fn authorization_code(
        &self,
        client_id: &str,
        redirect_uri: &str,
        resource: &str,
        scope: &str,
        login: &str,
    ) -> String {
        self.try_authorization_code(client_id, redirect_uri, resource, scope, login)
            .unwrap_or_else(|e| panic!("authorization code of {client_id} for {login}: {e}"))
    }

    /// A JWT access token for `resource` by the authorization-code grant, or the server's
    /// refusal: the `error` and `error_description` of its redirect to `redirect_uri` (such as
    /// `access_denied` for a login not in the accounts table, `invalid_target` for an unknown
    /// resource), or the token endpoint's `status: body`. `GET /auth` → the login form (posted
    /// with `login` and any password) → the consent form (posted) → the redirect to
    /// `redirect_uri`, read from its `Location` (nothing connects there) → `POST /token` with
    /// the `code_verifier` and `resource`.
    ///
    /// # Panics
    /// When a step of the flow does not answer as oidc-provider does.
    pub fn try_authorization_code(
        &self,
        client_id: &str,
        redirect_uri: &str,
        resource: &str,
        scope: &str,
        login: &str,
    ) -> Result<String, String> {
        let verifier = {
            let bytes: [u8; 32] = rand::random();
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        };
        let challenge =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(&verifier));
        let agent = agent();
        let mut jar = Jar::default();
        let query = [
            ("client_id", client_id),
            ("response_type", "code"),
            ("redirect_uri", redirect_uri),
            ("scope", scope),
            ("resource", resource),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "escepine-test"),
        ];
        let mut request = agent.get(format!("{}/auth", self.issuer));
        for (k, v) in query {
            request = request.query(k, v);
        }
        let mut response = jar.call(request);
        let mut code = None;
        for _ in 0..12 {
            if let Some(location) = location(&response) {
                if location.starts_with(redirect_uri) {
                    if let Some(error) = query_param(&location, "error") {
                        let description =
                            query_param(&location, "error_description").unwrap_or_default();
                        return Err(format!("{error}: {description}"));
                    }
                    code = query_param(&location, "code");
                    break;
                }
                response = jar.call(agent.get(self.absolute(&location)));
                continue;
            }
            let page = response.body_mut().read_to_string().expect("a page");
            let action = attribute(&page, "action=\"")
                .unwrap_or_else(|| panic!("a form on the interaction page: {page}"));
            let prompt = attribute(&page, "name=\"prompt\" value=\"")
                .unwrap_or_else(|| panic!("the form's prompt: {page}"));
            let mut fields = vec![("prompt".to_string(), prompt.clone())];
            if prompt == "login" {
                fields.push(("login".into(), login.to_string()));
                fields.push(("password".into(), "any".into()));
            }
            response = jar.post_form(agent.post(self.absolute(&action)), &fields);
        }
        let code = code.expect("the flow ends at the redirect URI with a code");
        let response = agent
            .post(format!("{}/token", self.issuer))
            .send_form([
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", redirect_uri),
                ("client_id", client_id),
                ("code_verifier", verifier.as_str()),
                ("resource", resource),
            ])
            .expect("the token request");
        token_of(response).map_err(|e| format!("the code exchange: {e}"))
    }

    /// How many times its key set was requested (since it started, or since
    /// [`Self::reset_jwks_fetches`]).
    pub fn jwks_fetches(&self) -> u64 {
        let mut response = agent()
            .get(format!("{}/test/jwks-count", self.issuer))
            .call()
            .expect("jwks count");
        let body: Value = response.body_mut().read_json().expect("json");
        body["count"].as_u64().expect("a count")
    }

    /// The access tokens issued so far, by grant: `{"client_credentials": N,
    /// "token_exchange": N, "authorization_code": N}`.
    pub fn token_counts(&self) -> Value {
        let mut response = agent()
            .get(format!("{}/test/token-count", self.issuer))
            .call()
            .expect("token count");
        response.body_mut().read_json().expect("json")
    }

    /// Set the counts of [`Self::token_counts`] to 0.
    pub fn reset_token_counts(&self) {
        let response = agent()
            .post(format!("{}/test/token-count/reset", self.issuer))
            .send_empty()
            .expect("reset the token count");
        assert_eq!(response.status(), 200, "POST /test/token-count/reset");
    }

    /// An access token for `resource` exchanged (RFC 8693) for `subject_token` (an access
    /// token of this issuer) by the client `id`, allowed the grant ([`ProviderConfig::exchanger`]):
    /// `sub` the subject token's, `aud` `resource`, `client_id` `id`, `act: {"sub": id}`.
    ///
    /// # Panics
    /// When the server refuses (see [`Self::try_token_exchange`]).
    pub fn token_exchange(
        &self,
        id: &str,
        secret: &str,
        subject_token: &str,
        resource: &str,
        scope: &str,
    ) -> String {
        self.try_token_exchange(id, secret, subject_token, resource, scope)
            .unwrap_or_else(|e| panic!("token exchange of {id} for {resource}: {e}"))
    }

    /// An access token for `resource` exchanged (RFC 8693) for `subject_token` by the client
    /// `id` (`subject_token_type` `…:access_token`; `scope` "" asks for the default), or the
    /// server's refusal (`status: body`, the body an OAuth error such as `invalid_grant`,
    /// `invalid_target`, `invalid_scope` or `unauthorized_client`).
    pub fn try_token_exchange(
        &self,
        id: &str,
        secret: &str,
        subject_token: &str,
        resource: &str,
        scope: &str,
    ) -> Result<String, String> {
        self.token_request(
            id,
            secret,
            &[
                ("grant_type", TOKEN_EXCHANGE),
                ("subject_token", subject_token),
                (
                    "subject_token_type",
                    "urn:ietf:params:oauth:token-type:access_token",
                ),
                ("resource", resource),
                ("scope", scope),
            ],
        )
    }

    /// A token request of the confidential client `id` (HTTP Basic) with `form` (every
    /// parameter, `grant_type` too): the access token, or the server's refusal
    /// (`status: body`). For the requests the other helpers do not make, such as a token
    /// exchange naming its target by `audience`.
    pub fn try_token_request(
        &self,
        id: &str,
        secret: &str,
        form: &[(&str, &str)],
    ) -> Result<String, String> {
        self.token_request(id, secret, form)
    }

    /// A token request of the confidential client `id` (HTTP Basic) with `form`: the access
    /// token, or the server's refusal (`status: body`).
    fn token_request(
        &self,
        id: &str,
        secret: &str,
        form: &[(&str, &str)],
    ) -> Result<String, String> {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
        let response = agent()
            .post(format!("{}/token", self.issuer))
            .header("Authorization", format!("Basic {basic}"))
            .send_form(form.iter().copied())
            .map_err(|e| e.to_string())?;
        token_of(response)
    }

    /// Set the count of [`Self::jwks_fetches`] to 0.
    pub fn reset_jwks_fetches(&self) {
        let response = agent()
            .post(format!("{}/test/jwks-count/reset", self.issuer))
            .send_empty()
            .expect("reset the jwks count");
        assert_eq!(response.status(), 200, "POST /test/jwks-count/reset");
    }

    /// The PEM file of its signing key (PKCS#8, RS256), to forge hostile tokens.
    pub fn signing_key_pem(&self) -> PathBuf {
        self.keys.pem()
    }

    /// The `kid` of its signing key, in its key set and its tokens' header.
    pub fn signing_kid(&self) -> String {
        self.keys.kid().to_string()
    }

    /// A token with `header` fields over the default ones (`alg: RS256`, `kid` of its keys)
    /// and `claims`, signed with its private key (or `keys`' when given): to forge what the
    /// issuer itself never would.
    pub fn forge(&self, header: &Value, claims: &Value, keys: Option<Keys>) -> String {
        let keys = keys.unwrap_or(self.keys);
        let pem = std::fs::read(keys.pem()).expect("the key");
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(&pem).expect("an RSA key");
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        h.kid = Some(keys.kid().to_string());
        if let Some(kid) = header.get("kid") {
            h.kid = kid.as_str().map(str::to_string);
        }
        if let Some(typ) = header.get("typ").and_then(Value::as_str) {
            h.typ = Some(typ.to_string());
        }
        jsonwebtoken::encode(&h, claims, &key).expect("sign")
    }

    /// A token with `alg: none` and no signature: what no issuer should ever be trusted for.
    pub fn forge_unsigned(&self, claims: &Value) -> String {
        let b64 =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.",
            b64(&json!({"alg": "none", "typ": "at+jwt"})),
            b64(claims)
        )
    }

    /// A token signed HS256 with the issuer's *public* key (PEM) as the shared secret, under
    /// its `kid`: the algorithm-confusion attack.
    pub fn forge_hmac(&self, claims: &Value) -> String {
        let public = std::fs::read(self.keys.public_pem()).expect("the public key");
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        h.kid = Some(self.keys.kid().to_string());
        let key = jsonwebtoken::EncodingKey::from_secret(&public).expect("a secret");
        jsonwebtoken::encode(&h, claims, &key).expect("sign")
    }

    /// The signing key set.
    pub fn keys(&self) -> Keys {
        self.keys
    }

    fn absolute(&self, location: &str) -> String {
        if location.starts_with("http") {
            location.to_string()
        } else {
            format!("{}{location}", self.issuer)
        }
    }
}

/// The cookies of one browser session (names and values; paths are not needed here).
#[derive(Default)]
struct Jar(BTreeMap<String, String>);

impl Jar {
    fn header(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// `request` with the jar's cookies; the answer's cookies kept.
    fn call(
        &mut self,
        request: ureq::RequestBuilder<ureq::typestate::WithoutBody>,
    ) -> ureq::http::Response<ureq::Body> {
        let response = request
            .header("Cookie", self.header())
            .call()
            .expect("an answer");
        self.keep(&response);
        response
    }

    /// `request` posting `fields` as a form, with the jar's cookies; the answer's kept.
    fn post_form(
        &mut self,
        request: ureq::RequestBuilder<ureq::typestate::WithBody>,
        fields: &[(String, String)],
    ) -> ureq::http::Response<ureq::Body> {
        let response = request
            .header("Cookie", self.header())
            .send_form(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .expect("an answer");
        self.keep(&response);
        response
    }

    fn keep(&mut self, response: &ureq::http::Response<ureq::Body>) {
        for value in response.headers().get_all("set-cookie") {
            if let Some((name, rest)) = value.to_str().ok().and_then(|v| v.split_once('=')) {
                let value = rest.split(';').next().unwrap_or("");
                self.0.insert(name.trim().to_string(), value.to_string());
            }
        }
    }
}

fn location(response: &ureq::http::Response<ureq::Body>) -> Option<String> {
    response.status().is_redirection().then(|| {
        response
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .unwrap_or("")
            .to_string()
    })
}

/// The value of the query parameter `name` of `url`, form-decoded.
fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| form_decode(v))
    })
}

/// `+` as a space and `%XX` as its byte (a malformed escape is kept as it is).
fn form_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok());
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value after `prefix` up to the next `"` in `page`.
fn attribute(page: &str, prefix: &str) -> Option<String> {
    let start = page.find(prefix)? + prefix.len();
    let end = page[start..].find('"')?;
    Some(page[start..start + end].replace("&amp;", "&"))
}

fn token_of(mut response: ureq::http::Response<ureq::Body>) -> Result<String, String> {
    let status = response.status();
    let body = response
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{status}: {body}"));
    }
    let doc: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    doc["access_token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no access_token in {body}"))
}

/// The claims of a JWT, unverified (for assertions).
pub fn claims_of(token: &str) -> Value {
    part_of(token, 1)
}

/// The header of a JWT, unverified (for assertions).
pub fn header_of(token: &str) -> Value {
    part_of(token, 0)
}

/// Part `n` of a JWT (0: header, 1: claims), decoded.
fn part_of(token: &str, n: usize) -> Value {
    let part = token
        .split('.')
        .nth(n)
        .unwrap_or_else(|| panic!("a JWT has a part {n}: {token}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .unwrap_or_else(|e| panic!("part {n} of the JWT is base64url ({e}): {token}"));
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("part {n} of the JWT is JSON ({e}): {token}"))
}

/// A free port on 127.0.0.1 (bound, read, released: a server started right after can take
/// it; another process could too, which the tests accept).
pub fn free_loopback_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
