//! Budget uses in the SQLite ledger's file: the `budget_uses` table, checked and written in one
//! `BEGIN IMMEDIATE` transaction, so every runtime on the file counts the same uses; and, on the
//! same connection, the `approval_claims` of decided waiting calls.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};

use crate::budget::{BudgetClaim, BudgetCount, Reservation};
use crate::error::LedgerError;

/// The table of uses (see `runtime/LEDGER.md`): store state beside the chain, not evidence.
pub const BUDGET_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS budget_uses (
    budget    TEXT    NOT NULL,
    call_id   TEXT    NOT NULL,
    start_ms  INTEGER NOT NULL,
    expiry_ms INTEGER NOT NULL,
    ended     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (budget, call_id)
);
CREATE INDEX IF NOT EXISTS budget_uses_by_start ON budget_uses (budget, start_ms);
CREATE INDEX IF NOT EXISTS budget_uses_by_call ON budget_uses (call_id);
CREATE INDEX IF NOT EXISTS budget_uses_in_flight ON budget_uses (budget, expiry_ms) WHERE ended = 0";

/// The claims of decided waiting calls (see `runtime/LEDGER.md`): one row per call, the first
/// decider's.
pub const APPROVAL_CLAIMS_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS approval_claims (
    call_id TEXT    PRIMARY KEY,
    at_ms   INTEGER NOT NULL
)";
const CLAIM: &str = "INSERT OR IGNORE INTO approval_claims (call_id, at_ms) VALUES (?1, ?2)";

const CALLS: &str = "SELECT COUNT(*) FROM budget_uses WHERE budget = ?1 AND start_ms >= ?2";
const IN_FLIGHT: &str =
    "SELECT COUNT(*) FROM budget_uses WHERE budget = ?1 AND ended = 0 AND expiry_ms > ?2";
const INSERT: &str =
    "INSERT OR REPLACE INTO budget_uses (budget, call_id, start_ms, expiry_ms, ended)
    VALUES (?1, ?2, ?3, ?4, 0)";
const RELEASE: &str = "UPDATE budget_uses SET ended = 1 WHERE call_id = ?1";

/// The connection budget uses are read and written on, opened at the first use.
#[derive(Debug)]
pub(crate) struct SqliteBudgets {
    path: PathBuf,
    busy_timeout: Duration,
    conn: Arc<Mutex<Option<Connection>>>,
}

/// The budget uses beside the ledger at `path` failed because of `cause`.
fn unavailable(path: &Path, cause: impl std::error::Error + Send + Sync + 'static) -> LedgerError {
    LedgerError::failed(format_args!("{}: budget uses", path.display()), cause)
}

/// The budget uses beside the ledger at `path` cannot be used, for a reason of this module.
fn refused(path: &Path, why: &str) -> LedgerError {
    LedgerError::unavailable(format!("{}: budget uses: {why}", path.display()))
}

impl SqliteBudgets {
    /// Uses in the file at `path` (nothing is opened yet).
    pub(crate) fn new(path: &Path, busy_timeout: Duration) -> Self {
        Self {
            path: path.to_path_buf(),
            busy_timeout,
            conn: Arc::default(),
        }
    }

    /// Close the connection (before the ledger's writer closes its own).
    pub(crate) fn close(&self) {
        if let Ok(mut conn) = self.conn.lock() {
            drop(conn.take());
        }
    }

    /// Run `f` on the connection, on a blocking thread.
    pub(crate) async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, LedgerError> {
        let (shared, path, timeout) =
            (Arc::clone(&self.conn), self.path.clone(), self.busy_timeout);
        tokio::task::spawn_blocking(move || {
            let mut guard = shared
                .lock()
                .map_err(|_| refused(&path, "the connection is poisoned"))?;
            if guard.is_none() {
                *guard = Some(open(&path, timeout).map_err(|e| unavailable(&path, e))?);
            }
            let conn = guard
                .as_mut()
                .ok_or_else(|| refused(&path, "the connection is closed"))?;
            f(conn).map_err(|e| unavailable(&path, e))
        })
        .await
        .map_err(|e| LedgerError::failed("budget uses", e))?
    }

    /// See [`crate::store::Ledger::reserve_budgets`].
    pub(crate) async fn reserve(&self, claim: BudgetClaim) -> Result<Reservation, LedgerError> {
        self.with(move |conn| reserve(conn, &claim)).await
    }

    /// See [`crate::store::Ledger::claim_approval`].
    pub(crate) async fn claim_approval(&self, call_id: String) -> Result<bool, LedgerError> {
        let at = sql_u64(crate::entry::now_ms());
        self.with(move |conn| conn.execute(CLAIM, params![call_id, at]).map(|n| n == 1))
            .await
    }

    /// See [`crate::store::Ledger::release_budgets`].
    pub(crate) async fn release(&self, call_id: String) -> Result<(), LedgerError> {
        self.with(move |conn| conn.execute(RELEASE, params![call_id]).map(drop))
            .await
    }
}

fn open(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(busy_timeout)?;
    conn.execute_batch(BUDGET_SCHEMA)?;
    conn.execute_batch(APPROVAL_CLAIMS_SCHEMA)?;
    Ok(conn)
}

fn sql_u64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn reserve(conn: &mut Connection, claim: &BudgetClaim) -> rusqlite::Result<Reservation> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = claim.start_ms;
    for limit in &claim.limits {
        // Only what the budget limits is counted.
        let mut count = BudgetCount::default();
        if limit.calls.is_some() {
            let from = sql_u64(limit.counted_from(now));
            let n: i64 = tx.query_row(CALLS, params![limit.budget, from], |r| r.get(0))?;
            count.calls = n.max(0) as u64;
        }
        if limit.concurrent.is_some() {
            let n: i64 =
                tx.query_row(IN_FLIGHT, params![limit.budget, sql_u64(now)], |r| r.get(0))?;
            count.in_flight = n.max(0) as u64;
        }
        if limit.refuses(count) {
            return Ok(Reservation::Exceeded(limit.budget.clone()));
        }
    }
    for limit in &claim.limits {
        tx.execute(
            INSERT,
            params![
                limit.budget,
                claim.call_id,
                sql_u64(claim.start_ms),
                sql_u64(claim.expiry_ms)
            ],
        )?;
    }
    tx.commit()?;
    Ok(Reservation::Granted)
}
