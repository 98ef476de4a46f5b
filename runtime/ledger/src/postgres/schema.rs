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
/// is returned byte for byte as written. `call_id` is the call the record names (`NULL` for a
/// transition): an index, not evidence (it is not hashed).
pub const TABLE: &str = "CREATE TABLE IF NOT EXISTS entries (
    seq     BIGINT   PRIMARY KEY CHECK (seq >= 1),
    prev    CHAR(64) NOT NULL,
    hash    CHAR(64) NOT NULL UNIQUE,
    at_ms   BIGINT   NOT NULL CHECK (at_ms >= 0),
    body    TEXT     NOT NULL,
    call_id TEXT
)";

/// The index of the entries by call.
pub const CALL_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS entries_by_call ON entries (call_id) WHERE call_id IS NOT NULL";

/// Inserts one group commit: the columns as six arrays of one length.
pub const INSERT: &str = "INSERT INTO entries (seq, prev, hash, at_ms, body, call_id)
    SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::int8[], $5::text[], $6::text[])";

/// The entries of one call, through [`CALL_INDEX`].
pub const SELECT_CALL: &str =
    "SELECT seq, prev, hash, at_ms, body FROM entries WHERE call_id = $1 ORDER BY seq";

/// The last entry.
pub const HEAD: &str = "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1";

/// Every row, in chain order.
pub const SELECT_ALL: &str = "SELECT seq, prev, hash, at_ms, body FROM entries ORDER BY seq";
/// Every row with its `call_id` column, in chain order (for verification, which checks it).
pub const SELECT_ALL_INDEXED: &str =
    "SELECT seq, prev, hash, at_ms, body, call_id FROM entries ORDER BY seq";
/// The entries after a sequence number, in chain order.
pub const SELECT_AFTER: &str =
    "SELECT seq, prev, hash, at_ms, body FROM entries WHERE seq > $1 ORDER BY seq";

/// One entry, by its position.
pub const SELECT_ONE: &str = "SELECT seq, prev, hash, at_ms, body FROM entries WHERE seq = $1";

/// Whether the `entries` table exists (in the connection's search path).
const EXISTS: &str = "SELECT to_regclass('entries') IS NOT NULL";

/// The column names and types the store reads and writes, in table order.
const COLUMNS: &str = "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod)
    FROM pg_attribute a
    WHERE a.attrelid = to_regclass('entries') AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attnum";

/// The shape [`TABLE`] gives, as `format_type` names it; a table created before the call index
/// existed has the first five columns only (until a writer opens it: [`ensure`]).
const SHAPE: [(&str, &str); 6] = [
    ("seq", "bigint"),
    ("prev", "character(64)"),
    ("hash", "character(64)"),
    ("at_ms", "bigint"),
    ("body", "text"),
    ("call_id", "text"),
];

/// Whether the index of call ids exists.
const INDEX_EXISTS: &str = "SELECT to_regclass('entries_by_call') IS NOT NULL";

/// The rows of a table without `call_id` yet, to fill it.
const UNINDEXED: &str = "SELECT seq, body FROM entries ORDER BY seq";
/// Adds the `call_id` column to a table created before it existed.
const ADD_CALL_ID: &str = "ALTER TABLE entries ADD COLUMN call_id TEXT";
/// Fills `call_id` for a batch of entries: their seqs and call ids as two arrays.
const FILL_CALL_ID: &str = "UPDATE entries SET call_id = c.call_id
    FROM unnest($1::int8[], $2::text[]) AS c(seq, call_id) WHERE entries.seq = c.seq";

/// Create the table unless it exists, under [`SCHEMA_LOCK`] (several runtimes may start at
/// once); bring a table created before the call index existed to [`TABLE`] (the `call_id`
/// column added and filled from each body, the index created); then check that it has the
/// shape of [`TABLE`].
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
    if !has_call_id(&tx).await? {
        tx.batch_execute(ADD_CALL_ID)
            .await
            .map_err(pg("add the call_id column"))?;
        let rows = tx
            .query(UNINDEXED, &[])
            .await
            .map_err(pg("read the entries to index"))?;
        let (mut seqs, mut calls) = (Vec::new(), Vec::new());
        for row in &rows {
            let (Ok(seq), Ok(body)) = (row.try_get::<_, i64>(0), row.try_get::<_, &str>(1)) else {
                continue;
            };
            if let Some(call_id) = body_call_id(body) {
                seqs.push(seq);
                calls.push(call_id);
            }
        }
        tx.execute(FILL_CALL_ID, &[&seqs, &calls])
            .await
            .map_err(pg("fill the call_id column"))?;
    }
    // Created once: `CREATE INDEX` waits for the appends in flight and holds off new ones, so
    // runtimes opening the ledger later do not take its lock again.
    let indexed: bool = tx
        .query_one(INDEX_EXISTS, &[])
        .await
        .map_err(pg("look for the index of call ids"))?
        .get(0);
    if !indexed {
        tx.batch_execute(CALL_INDEX)
            .await
            .map_err(pg("create the index of call ids"))?;
    }
    tx.commit().await.map_err(pg("create the entries table"))?;
    check_shape(client).await
}

/// The call id a stored body names (what [`crate::record::Record::call_id`] reads), without
/// decoding the whole record; `None` for a transition or a body that is not a JSON object.
fn body_call_id(body: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        call_id: Option<String>,
    }
    serde_json::from_str::<Named>(body).ok()?.call_id
}

/// Whether the `entries` table has the `call_id` column.
pub async fn has_call_id(client: &impl tokio_postgres::GenericClient) -> Result<bool, PgError> {
    let rows = client
        .query(COLUMNS, &[])
        .await
        .map_err(pg("read the shape of the entries table"))?;
    Ok(rows
        .iter()
        .any(|r| r.try_get::<_, &str>(0).is_ok_and(|n| n == "call_id")))
}

/// Whether the table exists; without it there is nothing to read.
pub async fn exists(client: &Client) -> Result<bool, PgError> {
    let row = client
        .query_one(EXISTS, &[])
        .await
        .map_err(pg("look for the entries table"))?;
    Ok(row.get(0))
}

/// Fail unless the `entries` table has exactly the columns of [`TABLE`] (or its first five, for a
/// table no writer opened since the call index was added).
pub async fn check_shape(client: &Client) -> Result<(), PgError> {
    let rows = client
        .query(COLUMNS, &[])
        .await
        .map_err(pg("read the shape of the entries table"))?;
    let found: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let fits = (found.len() == SHAPE.len() || found.len() == SHAPE.len() - 1)
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
