//! A real authorization server's publishing side, on loopback: an axum server the tests start,
//! serving discovery documents and a key set they control, counting every key set fetch; and
//! the test-only keys that sign its tokens.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

/// A test-only signing key and its `kid`.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    pub encoding: EncodingKey,
    pub jwk: Value,
    /// The public key in PEM (the HMAC-confusion test signs with it as a secret).
    pub public_pem: Vec<u8>,
}

fn keys_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/keys")
}

impl SigningKey {
    /// The test-only key `name` (`a-rs256`, `a-es256`, `a-eddsa`, `b-rs256`) as `kid`.
    pub fn load(name: &str, kid: &str) -> Self {
        let pem = std::fs::read(keys_dir().join(format!("test-only-{name}.pem"))).expect("key");
        let public_pem =
            std::fs::read(keys_dir().join(format!("test-only-{name}.pub.pem"))).expect("pub");
        let (alg, encoding) = if name.ends_with("rs256") {
            (
                Algorithm::RS256,
                EncodingKey::from_rsa_pem(&pem).expect("rsa"),
            )
        } else if name.ends_with("es256") {
            (
                Algorithm::ES256,
                EncodingKey::from_ec_pem(&pem).expect("ec"),
            )
        } else {
            (
                Algorithm::EdDSA,
                EncodingKey::from_ed_pem(&pem).expect("ed"),
            )
        };
        let mut jwk = Jwk::from_encoding_key(&encoding, alg).expect("jwk");
        jwk.common.key_id = Some(kid.to_string());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        Self {
            kid: kid.to_string(),
            alg,
            encoding,
            jwk: serde_json::to_value(&jwk).expect("jwk json"),
            public_pem,
        }
    }

    /// A token with `claims`, signed by this key, its header naming its `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }

    /// The same, with the header's `kid` replaced (or removed with `None`).
    pub fn sign_as(&self, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = kid.map(str::to_string);
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }
}

/// What the server answers, changeable while it runs.
pub struct Published {
    /// The key set document.
    pub jwks: Value,
    /// The discovery document's `issuer` (the server's own URL unless changed).
    pub issuer: Option<String>,
    /// The discovery document's `jwks_uri` (`<url>/jwks` unless changed).
    pub jwks_uri: Option<String>,
    /// Whether the RFC 8414 document exists (else only OIDC discovery answers).
    pub rfc8414: bool,
}

/// The issuer server.
pub struct Issuer {
    pub url: String,
    pub published: Arc<Mutex<Published>>,
    fetches: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

#[derive(Clone)]
struct AppState {
    url: String,
    published: Arc<Mutex<Published>>,
    fetches: Arc<AtomicU64>,
}

impl Issuer {
    /// Serve `keys` on 127.0.0.1 (a free port, or `port`).
    pub async fn start(keys: &[&SigningKey], port: u16) -> Self {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let published = Arc::new(Mutex::new(Published {
            jwks: json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() }),
            issuer: None,
            jwks_uri: None,
            rfc8414: true,
        }));
        let fetches = Arc::new(AtomicU64::new(0));
        let state = AppState {
            url: url.clone(),
            published: Arc::clone(&published),
            fetches: Arc::clone(&fetches),
        };
        let app = axum::Router::new()
            .route("/.well-known/oauth-authorization-server", get(rfc8414))
            .route("/.well-known/openid-configuration", get(oidc))
            .route("/jwks", get(jwks))
            .route("/moved", get(moved))
            .route("/huge", get(huge))
            .with_state(state);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Self {
            url,
            published,
            fetches,
            stop: Some(stop),
        }
    }

    /// How many times the key set was fetched.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::SeqCst)
    }

    /// Publish `keys` as the key set from now on.
    pub fn publish(&self, keys: &[&SigningKey]) {
        self.published.lock().expect("lock").jwks =
            json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() });
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port")
    }

    /// Stop serving (its port closes).
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn metadata(s: &AppState) -> Value {
    let p = s.published.lock().expect("lock");
    json!({
        "issuer": p.issuer.clone().unwrap_or_else(|| s.url.clone()),
        "jwks_uri": p.jwks_uri.clone().unwrap_or_else(|| format!("{}/jwks", s.url)),
        "token_endpoint": format!("{}/token", s.url),
    })
}

async fn rfc8414(State(s): State<AppState>) -> Response {
    if !s.published.lock().expect("lock").rfc8414 {
        return StatusCode::NOT_FOUND.into_response();
    }
    axum::Json(metadata(&s)).into_response()
}

async fn oidc(State(s): State<AppState>) -> Response {
    axum::Json(metadata(&s)).into_response()
}

async fn jwks(State(s): State<AppState>) -> Response {
    s.fetches.fetch_add(1, Ordering::SeqCst);
    let doc = s.published.lock().expect("lock").jwks.clone();
    axum::Json(doc).into_response()
}

async fn moved(State(s): State<AppState>) -> Response {
    s.fetches.fetch_add(1, Ordering::SeqCst);
    (
        StatusCode::FOUND,
        [(header::LOCATION, format!("{}/jwks", s.url))],
    )
        .into_response()
}

async fn huge(State(s): State<AppState>) -> Response {
    s.fetches.fetch_add(1, Ordering::SeqCst);
    // Valid JSON, larger than the 1 MiB the verifier reads.
    let pad = "x".repeat(2 << 20);
    (
        [(header::CONTENT_TYPE, "application/json")],
        format!("{{\"keys\": [], \"pad\": \"{pad}\"}}"),
    )
        .into_response()
}
