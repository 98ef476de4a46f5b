//! The SQL of the PostgreSQL store: the `entries` table of `runtime/LEDGER.md`, created on first
//! use under an advisory lock, and the statements that append and read it.

use tokio_postgres::Client;

use super::error::{pg, PgError};

/// The two-key advisory lock space of the ledger (`pg_advisory_xact_lock(LOCK_CLASS, …)`). Run
/// leases use the one-key (`bigint`) space, which PostgreSQL keeps apart from this one.
pub const LOCK_CLASS: i32 = 0x4573_6365; // "Esce"

/// The second key of the lock that serialises appends (held for one transaction).
pub const APPEND_LOCK: i32 = 1;

/// The second key of the lock under which the table is created.
pub const SCHEMA_LOCK: i32 = 2;

/// The table every store of the chain holds (LEDGER.md, "PostgreSQL"): `body` is `TEXT`, so it
/// is returned byte for byte as written.
pub const TABLE: &str = "CREATE TABLE IF NOT EXISTS entries (
    seq   BIGINT   PRIMARY KEY CHECK (seq >= 1),
    prev  CHAR(64) NOT NULL,
    hash  CHAR(64) NOT NULL UNIQUE,
    at_ms BIGINT   NOT NULL CHECK (at_ms >= 0),
    body  TEXT     NOT NULL
)";

/// Inserts one group commit: the columns as five arrays of one length.
pub const INSERT: &str = "INSERT INTO entries (seq, prev, hash, at_ms, body)
    SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::int8[], $5::text[])";

/// The last entry.
pub const HEAD: &str = "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1";

/// Every row, in chain order.
pub const SELECT_ALL: &str = "SELECT seq, prev, hash, at_ms, body FROM entries ORDER BY seq";
/// One entry, by its position.
pub const SELECT_ONE: &str = "SELECT seq, prev, hash, at_ms, body FROM entries WHERE seq = $1";

/// Whether the `entries` table exists (in the connection's search path).
const EXISTS: &str = "SELECT to_regclass('entries') IS NOT NULL";

/// The column names and types the store reads and writes, in table order.
const COLUMNS: &str = "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod)
    FROM pg_attribute a
    WHERE a.attrelid = to_regclass('entries') AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attnum";

/// The shape [`TABLE`] gives, as `format_type` names it.
const SHAPE: [(&str, &str); 5] = [
    ("seq", "bigint"),
    ("prev", "character(64)"),
    ("hash", "character(64)"),
    ("at_ms", "bigint"),
    ("body", "text"),
];

/// Create the table unless it exists, under [`SCHEMA_LOCK`] (several runtimes may start at
/// once), then check that it has the shape of [`TABLE`].
pub async fn ensure(client: &mut Client) -> Result<(), PgError> {
    let tx = client.transaction().await.map_err(pg("begin"))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &SCHEMA_LOCK],
    )
    .await
    .map_err(pg("take the schema lock"))?;
    tx.batch_execute(TABLE)
        .await
        .map_err(pg("create the entries table"))?;
    tx.commit().await.map_err(pg("create the entries table"))?;
    check_shape(client).await
}

/// Whether the table exists; without it there is nothing to read.
pub async fn exists(client: &Client) -> Result<bool, PgError> {
    let row = client
        .query_one(EXISTS, &[])
        .await
        .map_err(pg("look for the entries table"))?;
    Ok(row.get(0))
}

/// Fail unless the `entries` table has exactly the columns of [`TABLE`].
pub async fn check_shape(client: &Client) -> Result<(), PgError> {
    let rows = client
        .query(COLUMNS, &[])
        .await
        .map_err(pg("read the shape of the entries table"))?;
    let found: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let fits = found.len() == SHAPE.len()
        && found
            .iter()
            .zip(SHAPE)
            .all(|((n, t), (en, et))| n == en && t == et);
    if fits {
        Ok(())
    } else {
        let found: Vec<String> = found.iter().map(|(n, t)| format!("{n} {t}")).collect();
        Err(PgError::Shape(found.join(", ")))
    }
}
