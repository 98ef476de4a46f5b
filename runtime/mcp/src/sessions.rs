//! MCP sessions over HTTP, each bound to the principal that opened it.
//!
//! rmcp's streamable HTTP service gives every `initialize` a session (its id goes back in the
//! `Mcp-Session-Id` response header) and routes each later request that names the id — a
//! `POST` into the session, the `GET` of its event stream, the `DELETE` that ends it — into
//! that session, whoever sends it. [`SessionOwners`] records, when a response opens a session,
//! the principal whose bearer token opened it, and lets a request that names a session through
//! only for that principal ([`SessionOwners::admits`]). Another principal's session, a session
//! id never issued and a session that has ended are alike to the caller: `404 Not Found`, MCP's
//! answer for an unknown session, so the answer does not tell another principal's session from
//! none.
//!
//! A binding goes with its session: after any request naming a session that rmcp no longer
//! holds once it has answered (its owner deleted it, or it ended), and, for sessions rmcp
//! ended on its own (idle timeout, a failed handshake) that nobody names again, when the next
//! session opens (the bindings of every session rmcp no longer holds are dropped then).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use escepine_contract::Principal;
use http::HeaderMap;
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// Why a request's `Mcp-Session-Id` header was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionHeaderError {
    /// The header appears more than once.
    #[error("more than one Mcp-Session-Id header")]
    Repeated,
    /// The header's value is not visible ASCII.
    #[error("the Mcp-Session-Id header is not visible ASCII")]
    NotAscii,
}

/// The session a request names in its `Mcp-Session-Id` header, if any.
///
/// # Errors
/// [`SessionHeaderError`] when the header is repeated or not visible ASCII (rmcp would read
/// the first value only, or none).
pub fn named_session(headers: &HeaderMap) -> Result<Option<String>, SessionHeaderError> {
    let mut values = headers.get_all(HEADER_SESSION_ID).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(SessionHeaderError::Repeated);
    }
    first
        .to_str()
        .map(|id| Some(id.to_string()))
        .map_err(|_| SessionHeaderError::NotAscii)
}

/// The principal that opened each live session of one streamable HTTP service.
#[derive(Debug)]
pub struct SessionOwners {
    owners: Mutex<HashMap<String, Principal>>,
    manager: Arc<LocalSessionManager>,
}

impl SessionOwners {
    /// The owners of the sessions `manager` holds (none yet).
    pub fn new(manager: Arc<LocalSessionManager>) -> Self {
        Self {
            owners: Mutex::default(),
            manager,
        }
    }

    fn owners(&self) -> MutexGuard<'_, HashMap<String, Principal>> {
        // The map holds no invariant a panic could break halfway.
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a request of `principal` naming session `id` may reach it: only if `principal`
    /// opened it. A session without a binding (never issued, or ended) admits nobody.
    pub fn admits(&self, id: &str, principal: &Principal) -> bool {
        self.owners().get(id) == Some(principal)
    }

    /// The principal that opened session `id`, while it is bound.
    pub fn owner(&self, id: &str) -> Option<Principal> {
        self.owners().get(id).cloned()
    }

    /// How many sessions are bound.
    pub fn len(&self) -> usize {
        self.owners().len()
    }

    /// Whether no session is bound.
    pub fn is_empty(&self) -> bool {
        self.owners().is_empty()
    }

    /// Record what the answer to a request of `principal` did to sessions: a request naming
    /// no session whose answer carries `Mcp-Session-Id` opened that session, now bound to
    /// `principal`; a session the request named that rmcp no longer holds afterwards (deleted,
    /// or ended) loses its binding.
    pub async fn observe(&self, principal: &Principal, named: Option<&str>, response: &HeaderMap) {
        match named {
            Some(id) => {
                if !self.manager.sessions.read().await.contains_key(id) {
                    self.owners().remove(id);
                }
            }
            None => {
                let opened = response
                    .get(HEADER_SESSION_ID)
                    .and_then(|v| v.to_str().ok());
                if let Some(id) = opened {
                    self.prune().await;
                    self.owners()
                        .entry(id.to_string())
                        .or_insert_with(|| principal.clone());
                }
            }
        }
    }

    /// Drop the bindings of sessions the manager no longer holds.
    async fn prune(&self) {
        let live: HashSet<String> = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect();
        self.owners().retain(|id, _| live.contains(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use rmcp::transport::streamable_http_server::session::SessionManager;

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(HEADER_SESSION_ID, HeaderValue::from_bytes(v).unwrap());
        }
        h
    }

    #[test]
    fn the_named_session_is_one_visible_ascii_header() {
        assert_eq!(named_session(&headers(&[])), Ok(None));
        assert_eq!(
            named_session(&headers(&[b"abc"])),
            Ok(Some("abc".to_string()))
        );
        assert_eq!(
            named_session(&headers(&[b"abc", b"def"])),
            Err(SessionHeaderError::Repeated)
        );
        assert_eq!(
            named_session(&headers(&[b"ab\xffc"])),
            Err(SessionHeaderError::NotAscii)
        );
    }

    #[tokio::test]
    async fn a_session_admits_only_the_principal_that_opened_it_until_it_ends() {
        let manager = Arc::new(LocalSessionManager::default());
        let owners = SessionOwners::new(Arc::clone(&manager));
        let alice = Principal::agent("alice");
        let bob = Principal::agent("bob");
        // rmcp holds the session when its id goes back to the client.
        let (id, _transport) = manager.create_session().await.unwrap();
        let opened = headers(&[id.as_bytes()]);
        owners.observe(&alice, None, &opened).await;
        assert!(owners.admits(&id, &alice));
        assert!(!owners.admits(&id, &bob));
        assert!(!owners.admits("another-id", &alice));

        // A request naming a session never opens one, whatever its answer carries.
        owners.observe(&bob, Some(&id), &opened).await;
        assert_eq!(owners.owner(&id), Some(alice.clone()));

        // Once rmcp no longer holds the session (deleted, ended), its binding goes.
        manager.close_session(&id).await.unwrap();
        owners.observe(&alice, Some(&id), &HeaderMap::new()).await;
        assert!(owners.is_empty());
        assert!(!owners.admits(&id, &alice));
    }

    #[tokio::test]
    async fn bindings_of_sessions_that_ended_go_when_the_next_opens() {
        let manager = Arc::new(LocalSessionManager::default());
        let owners = SessionOwners::new(Arc::clone(&manager));
        let alice = Principal::agent("alice");
        let (first, _t1) = manager.create_session().await.unwrap();
        owners
            .observe(&alice, None, &headers(&[first.as_bytes()]))
            .await;
        // rmcp ends the session on its own (as on an idle timeout).
        manager.close_session(&first).await.unwrap();
        let (second, _t2) = manager.create_session().await.unwrap();
        owners
            .observe(&alice, None, &headers(&[second.as_bytes()]))
            .await;
        assert_eq!(owners.len(), 1);
        assert!(owners.admits(&second, &alice));
        assert!(!owners.admits(&first, &alice));
    }
}
