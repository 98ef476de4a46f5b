//! An issuer's signing keys: the key set as published ([`KeySet::parse`]), and the cache the
//! verifier reads it from ([`IssuerKeys`]).
//!
//! A key counts only if it can verify: a public RSA, EC (P-256, P-384) or OKP (Ed25519) key whose
//! `use`, when given, is `sig`. Symmetric (`oct`) keys, other key types and curves, and malformed
//! keys are skipped (and logged); a `kid` given to two keys is *ambiguous* — a token naming it is
//! refused rather than checked against whichever key came first.
//!
//! The cache holds the last key set fetched. A token naming a `kid` the set does not hold makes
//! the cache fetch the set again — at most once per `jwks_min_refresh_s` per issuer, and one
//! fetch for all the tokens waiting on it (single flight) — so an issuer's key rotation is
//! followed within a request, and a stream of tokens with made-up `kid`s costs the issuer one
//! request per period.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde_json::Value;
use url::Url;

use crate::config::IssuerConfig;
use crate::discovery;
use crate::fetch::Fetcher;

/// A key that can verify signatures.
#[derive(Clone)]
pub struct Key {
    /// Its `kid`, if it has one.
    pub kid: Option<String>,
    /// The key.
    pub decoding: DecodingKey,
    /// Its algorithm family.
    pub family: AlgorithmFamily,
    /// Its curve, for EC and OKP keys.
    pub curve: Option<EllipticCurve>,
    /// The algorithm it is published for (its `alg`), if any.
    pub alg: Option<Algorithm>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("family", &self.family)
            .field("curve", &self.curve)
            .field("alg", &self.alg)
            .finish()
    }
}

impl Key {
    /// Whether this key can check a signature of `alg`: the same family, the curve the
    /// algorithm names, and the key's own `alg` (if published) equal to it.
    pub fn fits(&self, alg: Algorithm) -> bool {
        let curve = match alg {
            Algorithm::ES256 => Some(EllipticCurve::P256),
            Algorithm::ES384 => Some(EllipticCurve::P384),
            Algorithm::EdDSA => Some(EllipticCurve::Ed25519),
            _ => None,
        };
        self.family == alg.family() && self.curve == curve && self.alg.is_none_or(|a| a == alg)
    }
}

/// Why no key was found for a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyMiss {
    /// No key has the token's `kid`.
    UnknownKid(String),
    /// Two keys of the set have the token's `kid`.
    Ambiguous(String),
    /// The key with the token's `kid` cannot check its algorithm.
    Unfit(String),
    /// The token names no `kid` and not exactly one key fits its algorithm.
    NoKid,
}

impl std::fmt::Display for KeyMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownKid(k) => write!(f, "no key of the issuer has the kid `{k}`"),
            Self::Ambiguous(k) => write!(f, "the issuer publishes two keys with the kid `{k}`"),
            Self::Unfit(k) => write!(
                f,
                "the key `{k}` cannot check this algorithm (another key type, curve or alg)"
            ),
            Self::NoKid => f.write_str(
                "the token names no kid and not exactly one of the issuer's keys fits its \
                 algorithm",
            ),
        }
    }
}

/// The keys of one published key set.
#[derive(Debug, Default, Clone)]
pub struct KeySet {
    by_kid: HashMap<String, Key>,
    ambiguous: HashSet<String>,
    all: Vec<Key>,
}

impl KeySet {
    /// The usable keys of a JWKS document (`{"keys": [...]}`), and a line per key skipped.
    pub fn parse(doc: &Value) -> (Self, Vec<String>) {
        let mut set = Self::default();
        let mut skipped = Vec::new();
        let Some(keys) = doc.get("keys").and_then(Value::as_array) else {
            skipped.push("the document has no `keys` list".to_string());
            return (set, skipped);
        };
        for (n, raw) in keys.iter().enumerate() {
            match key(raw) {
                Ok(k) => {
                    if let Some(kid) = &k.kid {
                        if set.by_kid.insert(kid.clone(), k.clone()).is_some() {
                            set.ambiguous.insert(kid.clone());
                        }
                    }
                    set.all.push(k);
                }
                Err(why) => skipped.push(format!("key {n}: {why}")),
            }
        }
        for kid in &set.ambiguous {
            set.by_kid.remove(kid);
        }
        (set, skipped)
    }

    /// How many keys can verify.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Whether no key can verify.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// Whether the set holds a key with this `kid` (an ambiguous one counts: refetching will
    /// not change what the issuer publishes).
    pub fn knows(&self, kid: &str) -> bool {
        self.by_kid.contains_key(kid) || self.ambiguous.contains(kid)
    }

    /// The key for a token with `kid` (if any) signed with `alg`.
    ///
    /// # Errors
    /// [`KeyMiss`] saying why none.
    pub fn find(&self, kid: Option<&str>, alg: Algorithm) -> Result<&Key, KeyMiss> {
        match kid {
            Some(kid) if self.ambiguous.contains(kid) => Err(KeyMiss::Ambiguous(kid.to_string())),
            Some(kid) => match self.by_kid.get(kid) {
                None => Err(KeyMiss::UnknownKid(kid.to_string())),
                Some(k) if k.fits(alg) => Ok(k),
                Some(_) => Err(KeyMiss::Unfit(kid.to_string())),
            },
            None => {
                let mut fitting = self.all.iter().filter(|k| k.fits(alg));
                match (fitting.next(), fitting.next()) {
                    (Some(k), None) => Ok(k),
                    _ => Err(KeyMiss::NoKid),
                }
            }
        }
    }
}

/// One JWK, if it can verify.
fn key(raw: &Value) -> Result<Key, String> {
    let jwk: Jwk = serde_json::from_value(raw.clone()).map_err(|e| format!("not a JWK: {e}"))?;
    if let Some(u) = &jwk.common.public_key_use {
        if *u != PublicKeyUse::Signature {
            return Err("its `use` is not `sig`".into());
        }
    }
    let (family, curve) = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => (AlgorithmFamily::Rsa, None),
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 | EllipticCurve::P384 => {
                (AlgorithmFamily::Ec, Some(p.curve.clone()))
            }
            _ => return Err(format!("the EC curve {:?} is not supported", p.curve)),
        },
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            (AlgorithmFamily::Ed, Some(EllipticCurve::Ed25519))
        }
        AlgorithmParameters::OctetKeyPair(p) => {
            return Err(format!("the OKP curve {:?} is not supported", p.curve))
        }
        AlgorithmParameters::OctetKey(_) => {
            return Err("a symmetric (`oct`) key never verifies an access token here".into())
        }
        _ => return Err("an unsupported key type".into()),
    };
    let alg = match jwk.common.key_algorithm {
        None => None,
        Some(a) => Some(
            a.to_string()
                .parse::<Algorithm>()
                .map_err(|_| format!("its `alg` {a} is not a signature algorithm"))?,
        ),
    };
    let decoding = DecodingKey::from_jwk(&jwk).map_err(|e| format!("unusable: {e}"))?;
    Ok(Key {
        kid: jwk.common.key_id.clone(),
        decoding,
        family,
        curve,
        alg,
    })
}

/// Why an issuer's keys could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// Its metadata could not be used.
    #[error(transparent)]
    Discovery(#[from] discovery::DiscoveryError),
    /// Its key set could not be fetched.
    #[error("the key set of `{issuer}`: {source}")]
    Fetch {
        /// The issuer.
        issuer: String,
        /// Why.
        #[source]
        source: crate::fetch::FetchError,
    },
    /// Its key set holds no usable key.
    #[error("the key set of `{issuer}` at {url} holds no key that can verify ({})", skipped.join("; "))]
    Empty {
        /// The issuer.
        issuer: String,
        /// The key set.
        url: String,
        /// Why each key was skipped.
        skipped: Vec<String>,
    },
}

/// The cached keys of one issuer.
#[derive(Debug)]
pub struct IssuerKeys {
    issuer: String,
    issuer_url: Url,
    min_refresh: Duration,
    keys: RwLock<Option<Arc<KeySet>>>,
    jwks_uri: RwLock<Option<Url>>,
    /// When a token last made the cache fetch (an unknown `kid`, or no keys yet): such
    /// fetches happen at most once per `min_refresh`. The start-up fetch and its retries do not
    /// count.
    last_refresh: Mutex<Option<Instant>>,
    last_error: RwLock<Option<String>>,
    /// One fetch at a time; those waiting re-check the cache when it is their turn.
    flight: tokio::sync::Mutex<()>,
    fetches: AtomicU64,
}

impl IssuerKeys {
    /// The empty cache of `issuer`.
    pub fn new(issuer: &IssuerConfig) -> Self {
        Self {
            issuer: issuer.issuer.clone(),
            issuer_url: issuer.issuer_url.clone(),
            min_refresh: issuer.jwks_min_refresh,
            keys: RwLock::new(None),
            jwks_uri: RwLock::new(None),
            last_refresh: Mutex::new(None),
            last_error: RwLock::new(None),
            flight: tokio::sync::Mutex::new(()),
            fetches: AtomicU64::new(0),
        }
    }

    /// The key set held now (none before the first fetch succeeded).
    pub fn current(&self) -> Option<Arc<KeySet>> {
        self.keys.read().map_or(None, |k| k.clone())
    }

    /// Why the last fetch failed, if it did.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.read().map_or(None, |e| e.clone())
    }

    /// How many key set fetches were attempted.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Fetch the key set for a token — unless a token made it fetch within `min_refresh`, or
    /// `wanted`, a `kid`, is held by the time it is this caller's turn. Returns the set held
    /// afterwards.
    pub(crate) async fn refresh(
        &self,
        fetcher: &Fetcher,
        wanted: Option<&str>,
    ) -> Option<Arc<KeySet>> {
        let _turn = self.flight.lock().await;
        let held = self.current();
        if let (Some(set), Some(kid)) = (&held, wanted) {
            if set.knows(kid) {
                return held;
            }
        }
        {
            let Ok(mut last) = self.last_refresh.lock() else {
                return held;
            };
            if last.is_some_and(|at| at.elapsed() < self.min_refresh) {
                return held;
            }
            *last = Some(Instant::now());
        }
        self.fetch(fetcher).await;
        self.current()
    }

    /// Fetch now, whatever the time since the last fetch (start-up and its retries).
    pub(crate) async fn fetch_now(&self, fetcher: &Fetcher) -> bool {
        let _turn = self.flight.lock().await;
        self.fetch(fetcher).await
    }

    async fn fetch(&self, fetcher: &Fetcher) -> bool {
        match self.load(fetcher).await {
            Ok(set) => {
                if let Ok(mut k) = self.keys.write() {
                    *k = Some(Arc::new(set));
                }
                if let Ok(mut e) = self.last_error.write() {
                    *e = None;
                }
                true
            }
            Err(e) => {
                tracing::warn!(issuer = %self.issuer, "signing keys not fetched: {e}");
                if let Ok(mut last) = self.last_error.write() {
                    *last = Some(e.to_string());
                }
                false
            }
        }
    }

    async fn load(&self, fetcher: &Fetcher) -> Result<KeySet, KeysError> {
        let known = self.jwks_uri.read().map_or(None, |u| u.clone());
        let jwks_uri = match known {
            Some(u) => u,
            None => {
                let meta = discovery::discover(fetcher, &self.issuer, &self.issuer_url).await?;
                if let Ok(mut u) = self.jwks_uri.write() {
                    *u = Some(meta.jwks_uri.clone());
                }
                meta.jwks_uri
            }
        };
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let doc = fetcher
            .json(&jwks_uri)
            .await
            .map_err(|source| KeysError::Fetch {
                issuer: self.issuer.clone(),
                source,
            })?;
        let (set, skipped) = KeySet::parse(&doc);
        for s in &skipped {
            tracing::info!(issuer = %self.issuer, "a published key is not used: {s}");
        }
        if set.is_empty() {
            return Err(KeysError::Empty {
                issuer: self.issuer.clone(),
                url: jwks_uri.to_string(),
                skipped,
            });
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // A P-256 public key (test only), and an RSA modulus of a 2048-bit test key.
    const X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
    const Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";

    fn ec(kid: &str) -> Value {
        json!({"kty": "EC", "crv": "P-256", "x": X, "y": Y, "kid": kid, "use": "sig"})
    }

    #[test]
    fn only_signing_keys_are_kept_and_a_repeated_kid_is_ambiguous() {
        let doc = json!({"keys": [
            ec("a"),
            ec("b"),
            ec("b"),
            {"kty": "EC", "crv": "P-256", "x": X, "y": Y, "kid": "enc", "use": "enc"},
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "XYZ", "kid": "odd"},
            "not an object",
        ]});
        let (set, skipped) = KeySet::parse(&doc);
        assert_eq!(set.len(), 3);
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(set.find(Some("a"), Algorithm::ES256).is_ok());
        assert_eq!(
            set.find(Some("b"), Algorithm::ES256).unwrap_err(),
            KeyMiss::Ambiguous("b".into())
        );
        assert!(set.knows("b"));
        assert_eq!(
            set.find(Some("hmac"), Algorithm::ES256).unwrap_err(),
            KeyMiss::UnknownKid("hmac".into())
        );
        assert_eq!(
            set.find(Some("a"), Algorithm::RS256).unwrap_err(),
            KeyMiss::Unfit("a".into())
        );
        assert_eq!(
            set.find(Some("a"), Algorithm::ES384).unwrap_err(),
            KeyMiss::Unfit("a".into()),
            "a P-256 key never checks ES384"
        );
        // Without a kid: three EC keys fit ES256, so none is chosen.
        assert_eq!(
            set.find(None, Algorithm::ES256).unwrap_err(),
            KeyMiss::NoKid
        );
        let (one, _) = KeySet::parse(&json!({"keys": [ec("only")]}));
        assert!(one.find(None, Algorithm::ES256).is_ok());
    }

    #[test]
    fn a_key_published_for_another_alg_does_not_fit() {
        let mut k = ec("a");
        k["alg"] = json!("ES384");
        let (set, _) = KeySet::parse(&json!({"keys": [k]}));
        assert_eq!(
            set.find(Some("a"), Algorithm::ES256).unwrap_err(),
            KeyMiss::Unfit("a".into())
        );
    }
}
