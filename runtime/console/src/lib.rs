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

mod app;
pub mod graph;
pub mod index;
pub mod integrity;
pub mod oidc;
mod pages;
mod routes;
pub mod session;

use std::sync::{Arc, Mutex, RwLock};

use escepine_mcp::auth::Authenticator;
use escepine_runtime::Runtime;

use crate::app::App;
use crate::index::Index;
use crate::integrity::{Integrity, Status};
use crate::session::Sessions;

pub use crate::app::{ConsoleConfig, WhatIf};

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
