//! Signed-in browsers: a session per sign-in, named by a random cookie value (HttpOnly,
//! SameSite=Strict), holding the principal and the session's CSRF token.
//!
//! The store keeps only the SHA-256 of each cookie value, so a dump of the store names no
//! usable session. A session ends at its expiry (the console's session lifetime, or an access
//! token's `exp` when sooner) or at sign-out.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use escepine_ledger::entry::now_ms;
use escepine_mcp::auth::Authenticated;
use http::HeaderMap;
use rand::RngCore as _;
use sha2::{Digest, Sha256};

/// The session cookie.
pub const SESSION_COOKIE: &str = "escepine_session";
/// The sign-in form's cookie: binds the form (and an OIDC login) to the browser that opened it.
pub const LOGIN_COOKIE: &str = "escepine_login";

/// One signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    /// Who signed in.
    pub who: Authenticated,
    /// The CSRF token every form of the session carries.
    pub csrf: String,
    /// When it ends, Unix milliseconds.
    pub expires_ms: u64,
}

/// The sessions of one console.
#[derive(Debug)]
pub struct Sessions {
    ttl: Duration,
    by_digest: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// An empty store whose sessions last `ttl` at most.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            by_digest: Mutex::new(HashMap::new()),
        }
    }

    /// Open a session for `who`, ending at the sooner of the lifetime and `until_ms`; returns
    /// the cookie value.
    pub fn open(&self, who: Authenticated, until_ms: Option<u64>) -> String {
        let value = random_token();
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let expires_ms = now_ms()
            .saturating_add(ttl_ms)
            .min(until_ms.unwrap_or(u64::MAX));
        let session = Session {
            who,
            csrf: random_token(),
            expires_ms,
        };
        let mut map = self.lock();
        let now = now_ms();
        map.retain(|_, s| s.expires_ms > now);
        map.insert(digest(&value), session);
        value
    }

    /// The live session the cookie value names.
    pub fn get(&self, value: &str) -> Option<Session> {
        let mut map = self.lock();
        let key = digest(value);
        match map.get(&key) {
            Some(s) if s.expires_ms > now_ms() => Some(s.clone()),
            Some(_) => {
                map.remove(&key);
                None
            }
            None => None,
        }
    }

    /// End the session the cookie value names.
    pub fn close(&self, value: &str) {
        self.lock().remove(&digest(value));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the lock leaves the map consistent (every write is one call).
        self.by_digest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn digest(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))
}

/// 32 random bytes, base64url without padding.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether `given` equals `expected`, in time independent of where they differ.
pub fn same_token(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_string())
}

/// How far a cookie travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Only on requests the console's own pages start (the session).
    Strict,
    /// Also on top-level navigations from elsewhere (the sign-in cookie, which must come back
    /// with the identity provider's redirect to `/login/callback`).
    Lax,
}

/// The `Set-Cookie` value of cookie `name` = `value`: HttpOnly, path `/`, SameSite as `reach`
/// says, `Secure` when `secure`; removed when `max_age` is zero.
pub fn set_cookie(
    name: &str,
    value: &str,
    max_age: Duration,
    secure: bool,
    reach: Reach,
) -> String {
    let same_site = match reach {
        Reach::Strict => cookie::SameSite::Strict,
        Reach::Lax => cookie::SameSite::Lax,
    };
    let mut c = cookie::Cookie::build((name.to_string(), value.to_string()))
        .http_only(true)
        .same_site(same_site)
        .path("/")
        .secure(secure)
        .max_age(cookie::time::Duration::seconds(
            i64::try_from(max_age.as_secs()).unwrap_or(i64::MAX),
        ))
        .build();
    if max_age.is_zero() {
        c.make_removal();
    }
    c.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_found_by_its_cookie_only() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let who = Authenticated::named("Agent::\"ann\"".parse().unwrap());
        let value = sessions.open(who, None);
        assert!(sessions.get(&value).is_some());
        assert!(sessions.get(&random_token()).is_none());
        sessions.close(&value);
        assert!(sessions.get(&value).is_none());
    }

    #[test]
    fn a_session_ends_with_its_token() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let who = Authenticated::named("Agent::\"ann\"".parse().unwrap());
        let value = sessions.open(who, Some(now_ms() - 1));
        assert!(sessions.get(&value).is_none());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd"));
        assert!(!same_token("abc", "abcd"));
        assert!(!same_token("", "a"));
    }

    #[test]
    fn the_cookie_is_http_only_and_strict() {
        let c = set_cookie(
            SESSION_COOKIE,
            "v",
            Duration::from_secs(10),
            false,
            Reach::Strict,
        );
        assert!(c.contains("HttpOnly"), "{c}");
        assert!(c.contains("SameSite=Strict"), "{c}");
        assert!(!c.contains("Secure"), "{c}");
        let c = set_cookie(LOGIN_COOKIE, "v", Duration::from_secs(10), true, Reach::Lax);
        assert!(c.contains("SameSite=Lax") && c.contains("Secure"), "{c}");
        let mut h = HeaderMap::new();
        h.insert(
            http::header::COOKIE,
            "a=b; escepine_session=xyz".parse().unwrap(),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE).as_deref(), Some("xyz"));
    }
}
