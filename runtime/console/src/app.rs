//! The console's state: how it is set up ([`ConsoleConfig`]) and what every request handler
//! reads ([`App`]: the runtime, the authenticator, the index, the last integrity check, the
//! sessions).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use escepine_ledger::location::LedgerLocation;
use escepine_mcp::auth::Authenticator;
use escepine_policy::authorize::Authorizer;
use escepine_registry::sop::model::Sop;
use escepine_runtime::Runtime;

use crate::index::Index;
use crate::integrity::{Integrity, Status};
use crate::oidc::Oidc;
use crate::session::Sessions;

/// A candidate policy set the `/policies` page replays the ledger against.
#[derive(Debug)]
pub struct WhatIf {
    /// Its directory (shown on the page).
    pub dir: PathBuf,
    /// The authorizer of its policies over the registry's records.
    pub authorizer: Authorizer,
}

/// How a console is set up (besides its runtime and authenticator).
#[derive(Debug)]
pub struct ConsoleConfig {
    /// The ledger (read for verification and proofs, as `ledger verify` reads it).
    pub location: LedgerLocation,
    /// Signed checkpoint files; the one of the largest tree is the latest.
    pub checkpoints: Vec<PathBuf>,
    /// The key the checkpoints are signed with.
    pub key: Option<escepine_ledger::checkpoint::VerifierKey>,
    /// The SOPs whose runs are drawn (a run of another SOP is drawn from its path alone).
    pub sops: Vec<Sop>,
    /// The candidate policies of the what-if replay.
    pub what_if: Option<WhatIf>,
    /// How often the whole chain is verified again.
    pub verify_every: Duration,
    /// The identity provider login, when configured.
    pub oidc: Option<Oidc>,
    /// Whether cookies are marked `Secure` (the console is served over TLS).
    pub secure_cookies: bool,
    /// How long a session lasts at most.
    pub session_ttl: Duration,
}

impl ConsoleConfig {
    /// A console of the ledger at `location`: no checkpoint, SOP or what-if replay, the chain
    /// verified every 30 seconds, sessions of at most 8 hours, cookies without `Secure`, no
    /// identity provider sign-in.
    pub fn new(location: LedgerLocation) -> Self {
        Self {
            location,
            checkpoints: Vec::new(),
            key: None,
            sops: Vec::new(),
            what_if: None,
            verify_every: Duration::from_secs(30),
            oidc: None,
            secure_cookies: false,
            session_ttl: Duration::from_secs(8 * 3600),
        }
    }
}

/// Everything a request handler reads.
pub(crate) struct App {
    pub(crate) runtime: Runtime,
    pub(crate) auth: Authenticator,
    pub(crate) config: ConsoleConfig,
    pub(crate) integrity: Integrity,
    pub(crate) index: Mutex<Index>,
    pub(crate) status: RwLock<Arc<Status>>,
    pub(crate) sessions: Sessions,
}

impl App {
    /// The index, with the entries appended since the last request folded in.
    pub(crate) fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        let mut index = self
            .index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = index.refresh(&**self.runtime.ledger()) {
            tracing::warn!("the console's index could not read the ledger: {e}");
        }
        index
    }

    /// The last integrity check.
    pub(crate) fn status(&self) -> Arc<Status> {
        Arc::clone(
            &self
                .status
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Verify the chain and the checkpoints again (blocking).
    pub(crate) fn recheck(&self) {
        let status = Arc::new(self.integrity.check());
        *self
            .status
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = status;
    }
}
