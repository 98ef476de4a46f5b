//! Budget uses in the PostgreSQL database: the `budget_uses` table beside `entries`, checked
//! and written in one transaction under the advisory lock [`BUDGET_LOCK`], so every runtime on
//! the database counts the same uses.

use std::sync::atomic::{AtomicBool, Ordering};

use deadpool_postgres::Pool;

use super::error::{pg, PgError};
use super::schema::LOCK_CLASS;
use crate::budget::{BudgetClaim, BudgetCount, Reservation};

/// The second key (in the ledger's two-key space) of the lock that serialises reservations
/// (held for one transaction).
pub const BUDGET_LOCK: i32 = 3;

/// The table of uses (see `runtime/LEDGER.md`): store state beside the chain, not evidence.
pub const BUDGET_TABLE: &str = "CREATE TABLE IF NOT EXISTS budget_uses (
    budget    TEXT    NOT NULL,
    call_id   TEXT    NOT NULL,
    start_ms  BIGINT  NOT NULL,
    expiry_ms BIGINT  NOT NULL,
    ended     BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (budget, call_id)
);
CREATE INDEX IF NOT EXISTS budget_uses_by_start ON budget_uses (budget, start_ms);
CREATE INDEX IF NOT EXISTS budget_uses_by_call ON budget_uses (call_id);
CREATE INDEX IF NOT EXISTS budget_uses_in_flight ON budget_uses (budget, expiry_ms) WHERE NOT ended";

const CALLS: &str = "SELECT COUNT(*) FROM budget_uses WHERE budget = $1 AND start_ms >= $2";
const IN_FLIGHT: &str =
    "SELECT COUNT(*) FROM budget_uses WHERE budget = $1 AND NOT ended AND expiry_ms > $2";
const INSERT: &str = "INSERT INTO budget_uses (budget, call_id, start_ms, expiry_ms, ended)
    VALUES ($1, $2, $3, $4, FALSE) ON CONFLICT (budget, call_id) DO NOTHING";
const RELEASE: &str = "UPDATE budget_uses SET ended = TRUE WHERE call_id = $1";

fn sql(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Whether this ledger has made sure the table exists.
#[derive(Debug, Default)]
pub(crate) struct Ready(AtomicBool);

/// See [`crate::store::Ledger::reserve_budgets`].
pub(crate) async fn reserve(
    pool: Pool,
    ready: std::sync::Arc<Ready>,
    claim: BudgetClaim,
) -> Result<Reservation, PgError> {
    let mut client = pool.get().await.map_err(|e| PgError::Pool(e.to_string()))?;
    let tx = client.transaction().await.map_err(pg("begin"))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &BUDGET_LOCK],
    )
    .await
    .map_err(pg("take the budget lock"))?;
    if !ready.0.load(Ordering::Acquire) {
        tx.batch_execute(BUDGET_TABLE)
            .await
            .map_err(pg("create the budget_uses table"))?;
    }
    let now = claim.start_ms;
    for limit in &claim.limits {
        // Only what the budget limits is counted.
        let mut count = BudgetCount::default();
        if limit.calls.is_some() {
            let row = tx
                .query_one(CALLS, &[&limit.budget, &sql(limit.counted_from(now))])
                .await
                .map_err(pg("count the budget uses"))?;
            count.calls = row.get::<_, i64>(0).max(0) as u64;
        }
        if limit.concurrent.is_some() {
            let row = tx
                .query_one(IN_FLIGHT, &[&limit.budget, &sql(now)])
                .await
                .map_err(pg("count the budget uses"))?;
            count.in_flight = row.get::<_, i64>(0).max(0) as u64;
        }
        if limit.refuses(count) {
            return Ok(Reservation::Exceeded(limit.budget.clone()));
        }
    }
    for limit in &claim.limits {
        tx.execute(
            INSERT,
            &[
                &limit.budget,
                &claim.call_id,
                &sql(claim.start_ms),
                &sql(claim.expiry_ms),
            ],
        )
        .await
        .map_err(pg("record the budget uses"))?;
    }
    tx.commit().await.map_err(pg("record the budget uses"))?;
    ready.0.store(true, Ordering::Release);
    Ok(Reservation::Granted)
}

/// See [`crate::store::Ledger::release_budgets`].
pub(crate) async fn release(pool: Pool, call_id: String) -> Result<(), PgError> {
    let client = pool.get().await.map_err(|e| PgError::Pool(e.to_string()))?;
    client
        .execute(RELEASE, &[&call_id])
        .await
        .map_err(pg("end the budget uses"))?;
    Ok(())
}

/// The second key of the lock under which the `approval_claims` table is created.
pub const APPROVAL_LOCK: i32 = 4;

/// The claims of decided waiting calls (see `runtime/LEDGER.md`).
pub const APPROVAL_CLAIMS_TABLE: &str = "CREATE TABLE IF NOT EXISTS approval_claims (
    call_id TEXT   PRIMARY KEY,
    at_ms   BIGINT NOT NULL
)";

/// See [`crate::store::Ledger::claim_approval`]: one row per call, the first claimer's.
pub(crate) async fn claim_approval(
    pool: Pool,
    ready: std::sync::Arc<Ready>,
    call_id: String,
) -> Result<bool, PgError> {
    let mut client = pool.get().await.map_err(|e| PgError::Pool(e.to_string()))?;
    if !ready.0.load(Ordering::Acquire) {
        let tx = client.transaction().await.map_err(pg("begin"))?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&LOCK_CLASS, &APPROVAL_LOCK],
        )
        .await
        .map_err(pg("take the approval lock"))?;
        tx.batch_execute(APPROVAL_CLAIMS_TABLE)
            .await
            .map_err(pg("create the approval_claims table"))?;
        tx.commit().await.map_err(pg("commit"))?;
        ready.0.store(true, Ordering::Release);
    }
    let n = client
        .execute(
            "INSERT INTO approval_claims (call_id, at_ms) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&call_id, &sql(crate::entry::now_ms())],
        )
        .await
        .map_err(pg("claim the approval"))?;
    Ok(n == 1)
}
