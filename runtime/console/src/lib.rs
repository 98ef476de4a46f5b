//! Escepine's console (`escepine console`): the evidence ledger in a browser.
//!
//! Server-rendered HTML (maud, every value escaped), no script: pages read without JavaScript,
//! and the pages' `Content-Security-Policy` allows none.
//!
//! - `/calls`: the calls, newest first, filtered by tool, principal, decision, result, flow and
//!   time, paged by cursor from the console's index ([`index`]), which folds only the entries
//!   appended since the last request; `/calls/<id>`: one call's entries, payload and output as
//!   recorded (scrubbed), the determining policies' text, hashes, attempts, egress, budget and
//!   approval, and its inclusion proof verified against the latest signed checkpoint
//!   ([`integrity::prove`]).
//! - `/runs`, `/runs/<id>`: an SOP run's state machine as SVG, the path taken highlighted and
//!   compensation marked ([`graph`]), beside its steps.
//! - `/approvals`: the calls waiting for an approver, with approve and reject forms that run
//!   the runtime's decision as the signed-in principal (Cedar decides; the requester is
//!   refused).
//! - `/policies`: shadow disagreements and a what-if replay of a candidate policy directory.
//! - Every page says whether the chain verifies and the latest checkpoint holds
//!   ([`integrity`]), checked on a schedule by the server.
//!
//! Who may look: any authenticated principal reads; every decision is the runtime's, through
//! Cedar. A browser signs in at `/login` with a development token or through the identity
//! provider ([`oidc`]) and gets a session cookie (HttpOnly, SameSite=Strict); each session has
//! a CSRF token every form carries ([`session`]). A script sends `Authorization: Bearer`
//! instead (its requests carry no cookie, so no CSRF token is asked of them).

#![deny(missing_docs)]

pub mod graph;
pub mod index;
pub mod integrity;
pub mod oidc;
mod pages;
mod routes;
pub mod session;

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
    runtime: Runtime,
    auth: Authenticator,
    config: ConsoleConfig,
    integrity: Integrity,
    index: Mutex<Index>,
    status: RwLock<Arc<Status>>,
    sessions: Sessions,
}

impl App {
    /// The index, with the entries appended since the last request folded in.
    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
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
    fn status(&self) -> Arc<Status> {
        Arc::clone(
            &self
                .status
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Verify the chain and the checkpoints again (blocking).
    fn recheck(&self) {
        let status = Arc::new(self.integrity.check());
        *self
            .status
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = status;
    }
}

/// A console over a runtime: its pages, its sessions, its checks.
#[derive(Clone)]
pub struct Console {
    app: Arc<App>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("ledger", &self.app.config.location.to_string())
            .finish_non_exhaustive()
    }
}

impl Console {
    /// A console over `runtime` (its ledger, registry and approvals), for callers known by
    /// `auth`. Nothing is read until [`Console::start`].
    pub fn new(runtime: Runtime, auth: Authenticator, config: ConsoleConfig) -> Self {
        let integrity = Integrity::new(
            config.location.clone(),
            config.checkpoints.clone(),
            config.key.clone(),
        );
        let sessions = Sessions::new(config.session_ttl);
        Self {
            app: Arc::new(App {
                runtime,
                auth,
                config,
                integrity,
                index: Mutex::new(Index::new()),
                status: RwLock::new(Arc::new(Status::unchecked())),
                sessions,
            }),
        }
    }

    /// Verify the ledger and fold it into the index once (blocking: call it before serving,
    /// outside the async runtime's workers).
    pub fn start_checks(&self) {
        self.app.recheck();
        drop(self.app.index());
    }

    /// Verify the ledger again every `verify_every`, in the background (on the current tokio
    /// runtime).
    pub fn spawn_rechecks(&self) {
        let app = Arc::clone(&self.app);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(app.config.verify_every);
            tick.tick().await;
            loop {
                tick.tick().await;
                let a = Arc::clone(&app);
                if tokio::task::spawn_blocking(move || a.recheck())
                    .await
                    .is_err()
                {
                    tracing::warn!("the console's integrity check panicked");
                }
            }
        });
    }

    /// A line for the start-up message: the ledger, how callers are known, the checkpoints.
    pub fn describe(&self) -> String {
        let c = &self.app.config;
        format!(
            "ledger {}, {}{}, {} checkpoint file(s), {} SOP(s)",
            c.location,
            self.app.auth.describe(),
            if c.oidc.is_some() {
                " with OIDC sign-in"
            } else {
                ""
            },
            c.checkpoints.len(),
            c.sops.len()
        )
    }

    /// The last integrity check.
    pub fn status(&self) -> Arc<Status> {
        self.app.status()
    }

    /// The console's routes.
    pub fn router(&self) -> axum::Router {
        routes::router(Arc::clone(&self.app))
    }

    /// Serve on `listener` until `stop` completes.
    ///
    /// # Errors
    /// The listener fails.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(listener, self.router())
            .with_graceful_shutdown(stop)
            .await
    }
}
