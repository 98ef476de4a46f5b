//! The durable ledger: SQLite in WAL mode, written by one thread with group commit.
//!
//! [`SqliteLedger::append`] hands the record (already encoded by the caller's task) to a
//! dedicated writer thread that owns the read-write connection. The writer takes everything
//! queued, opens one `BEGIN IMMEDIATE` transaction, reads the head *inside* it, assigns
//! `seq`/`prev`/`hash` in order, inserts the batch, commits, and only then answers every caller.
//! So an append resolves after its entry is committed per the [`Durability`] mode, and many
//! concurrent callers share one `fsync`. A failed batch is rolled back and every caller in it gets
//! [`LedgerError::Unavailable`]; nothing is dropped silently, and because the head is re-read in
//! each transaction, the chain stays gap-free after a failure (and even if another process
//! appends to the same file).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use tokio::sync::oneshot;

use crate::budget::{BudgetClaim, Reservation};
use crate::entry::{
    entry_hash, is_hash, now_ms, record_body, select_run, Committed, Entry, GENESIS_PREV,
};
use crate::entry::{CallIndex, StoredRow};
use crate::error::LedgerError;
use crate::lease::{FileLeases, RunLease};
use crate::record::Record;
use crate::sqlite_budgets::SqliteBudgets;
use crate::store::{BoxFuture, Durability, Ledger};

/// The table every store of the chain holds (see `runtime/LEDGER.md`). `call_id` is the call
/// the entry's record names (`NULL` for a transition): an index, not evidence — it is not
/// hashed, and a read through it keeps only the entries whose record names the call.
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS entries (
    seq     INTEGER PRIMARY KEY,
    prev    TEXT    NOT NULL,
    hash    TEXT    NOT NULL,
    at_ms   INTEGER NOT NULL,
    body    TEXT    NOT NULL,
    call_id TEXT
)";

/// The index of the entries by call (see [`SCHEMA`]).
pub const CALL_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS entries_by_call ON entries (call_id) WHERE call_id IS NOT NULL";

/// Brings a table created before `call_id` existed to [`SCHEMA`]: the column added, and filled
/// from each body that is JSON with a text `call_id` (what [`Record::call_id`] reads).
const ADD_CALL_ID: &str = "ALTER TABLE entries ADD COLUMN call_id TEXT;
    UPDATE entries SET call_id = json_extract(body, '$.call_id')
    WHERE json_valid(body) AND json_type(body, '$.call_id') = 'text'";
const HAS_CALL_ID: &str =
    "SELECT COUNT(*) FROM pragma_table_info('entries') WHERE name = 'call_id'";

const INSERT: &str =
    "INSERT INTO entries (seq, prev, hash, at_ms, body, call_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const HEAD: &str = "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1";
const SELECT_ALL: &str = "SELECT seq, prev, hash, at_ms, body FROM entries ORDER BY seq";
const SELECT_ALL_INDEXED: &str =
    "SELECT seq, prev, hash, at_ms, body, call_id FROM entries ORDER BY seq";
const SELECT_ONE: &str = "SELECT seq, prev, hash, at_ms, body FROM entries WHERE seq = ?1";
const SELECT_AFTER: &str =
    "SELECT seq, prev, hash, at_ms, body FROM entries WHERE seq > ?1 ORDER BY seq";
const SELECT_CALL: &str =
    "SELECT seq, prev, hash, at_ms, body FROM entries WHERE call_id = ?1 ORDER BY seq";

/// How a [`SqliteLedger`] is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqliteOptions {
    /// `synchronous=FULL` or `NORMAL` (WAL mode either way).
    pub durability: Durability,
    /// How long a write waits for another connection's lock before the batch fails.
    pub busy_timeout: Duration,
    /// The largest number of records committed in one transaction.
    pub max_batch: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            durability: Durability::Full,
            busy_timeout: Duration::from_secs(5),
            max_batch: 1024,
        }
    }
}

impl SqliteOptions {
    /// The defaults with this durability mode.
    pub fn durability(durability: Durability) -> Self {
        Self {
            durability,
            ..Self::default()
        }
    }
}

/// A record on its way to the writer: its canonical body, the call it names, and who waits
/// for the commit.
struct Job {
    body: String,
    call_id: Option<String>,
    reply: oneshot::Sender<Result<Committed, LedgerError>>,
}

/// The durable, hash-chained ledger in one SQLite file.
pub struct SqliteLedger {
    path: PathBuf,
    options: SqliteOptions,
    jobs: Option<mpsc::Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    reader: Mutex<Option<Connection>>,
    rows_read: AtomicU64,
    leases: FileLeases,
    budgets: SqliteBudgets,
}

impl std::fmt::Debug for SqliteLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteLedger")
            .field("path", &self.path)
            .field("options", &self.options)
            .finish()
    }
}

/// Switch the database to WAL mode; the mode it is in afterwards. Several processes opening a
/// new ledger at once contend for the lock the switch needs, and SQLite reports that contention
/// as `SQLITE_BUSY` without waiting in its busy handler (to avoid a deadlock between readers), so
/// a busy answer is retried here until `limit` has passed.
fn enable_wal(conn: &Connection, limit: Duration) -> rusqlite::Result<String> {
    let until = std::time::Instant::now() + limit;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// The file at `path` could not be used for `what` because of `cause`.
fn unavailable(
    path: &Path,
    what: &str,
    cause: impl std::error::Error + Send + Sync + 'static,
) -> LedgerError {
    LedgerError::failed(format_args!("{}: {what}", path.display()), cause)
}

/// The file at `path` cannot be used for `what`, for a reason of this module (`why`).
fn refused(path: &Path, what: &str, why: impl std::fmt::Display) -> LedgerError {
    LedgerError::unavailable(format!("{}: {what}: {why}", path.display()))
}

impl SqliteLedger {
    /// Open (or create) the ledger at `path` with the given durability and default options.
    ///
    /// Fails with [`LedgerError::Unavailable`] when the file cannot be opened for writing, is not
    /// a SQLite database, cannot use WAL mode, or holds an `entries` table of another shape.
    /// An existing chain is continued from its last entry.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<Self, LedgerError> {
        Self::open_with(path, SqliteOptions::durability(durability))
    }

    /// Open (or create) the ledger at `path` with explicit options.
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, LedgerError> {
        let path = path.as_ref().to_path_buf();
        // The file as it was before SQLite opened it, to check that the leases lock that file.
        let existing = std::fs::metadata(&path).ok().map(|m| (m.dev(), m.ino()));
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| unavailable(&path, "cannot open", e))?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(|e| unavailable(&path, "busy_timeout", e))?;
        let mode = enable_wal(&conn, options.busy_timeout)
            .map_err(|e| unavailable(&path, "cannot enable WAL mode", e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(refused(
                &path,
                "cannot enable WAL mode",
                format!("journal_mode is {mode}"),
            ));
        }
        let sync = match options.durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", sync)
            .map_err(|e| unavailable(&path, "synchronous", e))?;
        if conn
            .is_readonly(rusqlite::MAIN_DB)
            .map_err(|e| unavailable(&path, "cannot open", e))?
        {
            return Err(refused(&path, "cannot write", "the database is read-only"));
        }
        conn.execute_batch(SCHEMA)
            .map_err(|e| unavailable(&path, "cannot create the entries table", e))?;
        // A table of another shape is refused before it is migrated.
        conn.prepare(SELECT_ALL)
            .map_err(|e| unavailable(&path, "the entries table has another shape", e))?;
        migrate(&conn).map_err(|e| unavailable(&path, "cannot index the entries by call", e))?;
        // The shape of an existing table, and the ability to take the write lock, are checked now
        // rather than at the first append.
        conn.prepare(INSERT)
            .map_err(|e| unavailable(&path, "the entries table has another shape", e))?;
        conn.execute_batch("BEGIN IMMEDIATE; COMMIT;")
            .map_err(|e| unavailable(&path, "cannot write", e))?;

        let leases = FileLeases::of_file(&path, existing)?;
        let reader = open_read_only(&path)?;
        reader
            .busy_timeout(options.busy_timeout)
            .map_err(|e| unavailable(&path, "busy_timeout", e))?;

        let (jobs, queue) = mpsc::channel::<Job>();
        let max_batch = options.max_batch.max(1);
        let writer = std::thread::Builder::new()
            .name("escepine-ledger".into())
            .spawn(move || writer_loop(conn, queue, max_batch))
            .map_err(|e| unavailable(&path, "cannot start the writer thread", e))?;
        let budgets = SqliteBudgets::new(&path, options.busy_timeout);
        Ok(Self {
            path,
            options,
            jobs: Some(jobs),
            writer: Some(writer),
            reader: Mutex::new(Some(reader)),
            rows_read: AtomicU64::new(0),
            budgets,
            leases,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options it was opened with.
    pub fn options(&self) -> SqliteOptions {
        self.options
    }

    /// Count `n` rows read and decoded.
    fn count(&self, n: usize) {
        self.rows_read
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Run `f` on the read-only connection.
    fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        let guard = self
            .reader
            .lock()
            .map_err(|_| LedgerError::unavailable("the ledger reader is poisoned"))?;
        let conn = guard
            .as_ref()
            .ok_or_else(|| LedgerError::unavailable("the ledger is closed"))?;
        f(conn)
    }
}

impl Drop for SqliteLedger {
    /// Closes the queue and waits for the writer to commit what was queued and close the file.
    ///
    /// The reader closes first, so the writer's connection is the last one: closing it
    /// checkpoints the WAL into the database file and removes the `-wal` file.
    fn drop(&mut self) {
        if let Ok(mut reader) = self.reader.lock() {
            drop(reader.take());
        }
        self.budgets.close();
        drop(self.jobs.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl Ledger for SqliteLedger {
    fn append(&self, record: Record) -> BoxFuture<'_, Result<Committed, LedgerError>> {
        // Encoding happens on the caller's task, so the writer only chains, hashes and writes.
        let queued = record_body(&record).and_then(|body| {
            let (reply, answer) = oneshot::channel();
            let jobs = self.jobs.as_ref().ok_or_else(writer_gone)?;
            let call_id = record.call_id().map(str::to_owned);
            jobs.send(Job {
                body,
                call_id,
                reply,
            })
            .map_err(|_| writer_gone())?;
            Ok(answer)
        });
        Box::pin(async move {
            let answer = queued?;
            answer.await.map_err(|_| writer_gone())?
        })
    }

    fn entries(&self) -> Result<Vec<Entry>, LedgerError> {
        let entries = self.read(read_entries_from)?;
        self.count(entries.len());
        Ok(entries)
    }

    /// The rows the `entries_by_call` index names for `call_id`: nothing else is read.
    fn entries_for_call(&self, call_id: &str) -> Result<Vec<Entry>, LedgerError> {
        let entries = self.read(|conn| read_call_from(conn, call_id))?;
        self.count(entries.len());
        Ok(entries
            .into_iter()
            .filter(|e| e.record.call_id() == Some(call_id))
            .collect())
    }

    fn rows_read(&self) -> u64 {
        self.rows_read.load(Ordering::Relaxed)
    }

    fn entry(&self, seq: u64) -> Result<Option<Entry>, LedgerError> {
        let Ok(seq) = i64::try_from(seq) else {
            return Ok(None);
        };
        self.read(|conn| {
            let read =
                |e: rusqlite::Error| LedgerError::failed(format!("cannot read entry {seq}"), e);
            let mut stmt = conn.prepare_cached(SELECT_ONE).map_err(read)?;
            let mut rows = stmt.query([seq]).map_err(read)?;
            let Some(r) = rows.next().map_err(read)? else {
                return Ok(None);
            };
            let entry = stored_row(r).map_err(read)?.to_entry()?;
            self.count(1);
            Ok(Some(entry))
        })
    }

    fn entries_after(&self, seq: u64) -> Result<Vec<Entry>, LedgerError> {
        let Ok(seq) = i64::try_from(seq) else {
            return Ok(Vec::new());
        };
        self.read(|conn| {
            let read = |e: rusqlite::Error| {
                LedgerError::failed(format!("cannot read the entries after {seq}"), e)
            };
            let mut stmt = conn.prepare_cached(SELECT_AFTER).map_err(read)?;
            let mut rows = stmt.query([seq]).map_err(read)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(read)? {
                out.push(stored_row(r).map_err(read)?.to_entry()?);
            }
            self.count(out.len());
            Ok(out)
        })
    }

    fn entries_for_run(&self, run_id: &str) -> Result<Vec<Entry>, LedgerError> {
        Ok(select_run(&self.entries()?, run_id))
    }

    fn head(&self) -> Result<Option<Committed>, LedgerError> {
        let head = self.read(|conn| read_head(conn).map_err(LedgerError::caused_by))?;
        Ok(head.map(|(seq, hash)| Committed { seq, hash }))
    }

    /// Leases are byte locks on the database file itself: every process driving runs of this
    /// ledger file sees them, and no file beside it is involved ([`FileLeases`]).
    fn lease_run(&self, run_id: &str) -> Result<RunLease, LedgerError> {
        self.leases.acquire(run_id)
    }

    /// Uses live in the `budget_uses` table of the same file, checked and inserted in one
    /// immediate transaction (so runtimes sharing the file share the counts).
    fn reserve_budgets(
        &self,
        claim: BudgetClaim,
    ) -> BoxFuture<'_, Result<Reservation, LedgerError>> {
        Box::pin(self.budgets.reserve(claim))
    }

    fn release_budgets(&self, call_id: &str) -> BoxFuture<'_, Result<(), LedgerError>> {
        Box::pin(self.budgets.release(call_id.to_string()))
    }

    /// Claims live in the `approval_claims` table of the same file (`INSERT OR IGNORE`).
    fn claim_approval(&self, call_id: &str) -> BoxFuture<'_, Result<bool, LedgerError>> {
        Box::pin(self.budgets.claim_approval(call_id.to_string()))
    }
}

fn writer_gone() -> LedgerError {
    LedgerError::unavailable("the ledger writer has stopped")
}

/// Why a batch failed (the message every caller of the batch receives).
#[derive(Debug, thiserror::Error)]
enum BatchError {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{0}")]
    Corrupt(String),
}

fn writer_loop(mut conn: Connection, queue: mpsc::Receiver<Job>, max_batch: usize) {
    let mut batch: Vec<Job> = Vec::with_capacity(max_batch.min(4096));
    while let Ok(first) = queue.recv() {
        batch.push(first);
        while batch.len() < max_batch {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        match commit_batch(&mut conn, &batch) {
            Ok(committed) => {
                for (job, c) in batch.drain(..).zip(committed) {
                    let _ = job.reply.send(Ok(c));
                }
            }
            Err(e) => {
                let why = LedgerError::failed("the batch was not committed", e);
                for job in batch.drain(..) {
                    let _ = job.reply.send(Err(why.clone()));
                }
            }
        }
    }
}

fn commit_batch(conn: &mut Connection, batch: &[Job]) -> Result<Vec<Committed>, BatchError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (mut seq, mut prev) = match read_head(&tx)? {
        Some(head) => head,
        None => (0, GENESIS_PREV.to_string()),
    };
    let at_ms = now_ms();
    let at = i64::try_from(at_ms)
        .map_err(|_| BatchError::Corrupt("the clock is out of range".into()))?;
    let mut committed = Vec::with_capacity(batch.len());
    {
        let mut insert = tx.prepare_cached(INSERT)?;
        for job in batch {
            seq += 1;
            let s = i64::try_from(seq).map_err(|_| BatchError::Corrupt("seq overflow".into()))?;
            let hash = entry_hash(seq, &prev, at_ms, &job.body);
            insert.execute(params![s, prev, hash, at, job.body, job.call_id])?;
            prev = hash;
            committed.push(Committed {
                seq,
                hash: prev.clone(),
            });
        }
    }
    tx.commit()?;
    Ok(committed)
}

/// The last entry's seq and hash, checked for shape (the chain itself is [`crate::verify`]'s job).
fn read_head(conn: &Connection) -> Result<Option<(u64, String)>, BatchError> {
    let row = conn
        .query_row(HEAD, [], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get_ref(1)?.as_str().map(str::to_owned).ok(),
            ))
        })
        .optional()?;
    match row {
        None => Ok(None),
        Some((seq, hash)) => {
            let seq = u64::try_from(seq)
                .ok()
                .filter(|s| *s > 0)
                .ok_or_else(|| BatchError::Corrupt(format!("the last entry has seq {seq}")))?;
            let hash = hash.filter(|h| is_hash(h)).ok_or_else(|| {
                BatchError::Corrupt(format!("entry {seq} has no well-formed hash"))
            })?;
            Ok(Some((seq, hash)))
        }
    }
}

/// Open the ledger at `path` read-only (it must exist).
pub(crate) fn open_read_only(path: &Path) -> Result<Connection, LedgerError> {
    if !path.is_file() {
        return Err(refused(path, "cannot open", "no such file"));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| unavailable(path, "cannot open", e))?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| unavailable(path, "cannot read", e))?;
    Ok(conn)
}

fn text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Text(t) => std::str::from_utf8(t).ok().map(str::to_owned),
        _ => None,
    }
}

/// Call `each` with every row in `seq` order until it returns `false`.
pub(crate) fn for_each_row(
    conn: &Connection,
    mut each: impl FnMut(StoredRow) -> bool,
) -> Result<(), LedgerError> {
    let read = |e: rusqlite::Error| LedgerError::failed("cannot read the entries", e);
    let select = if has_call_index(conn).map_err(read)? {
        SELECT_ALL_INDEXED
    } else {
        SELECT_ALL
    };
    let mut stmt = conn.prepare(select).map_err(read)?;
    let mut rows = stmt.query([]).map_err(read)?;
    while let Some(r) = rows.next().map_err(read)? {
        if !each(stored_row(r).map_err(read)?) {
            break;
        }
    }
    Ok(())
}

/// One row of `SELECT seq, prev, hash, at_ms, body[, call_id]`, unchecked.
fn stored_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRow> {
    Ok(StoredRow {
        seq: r.get(0)?,
        prev: text(r.get_ref(1)?),
        hash: text(r.get_ref(2)?),
        at_ms: match r.get_ref(3)? {
            ValueRef::Integer(i) => Some(i),
            _ => None,
        },
        body: text(r.get_ref(4)?),
        call_id: if r.as_ref().column_count() > 5 {
            CallIndex::Column(text(r.get_ref(5)?))
        } else {
            CallIndex::Absent
        },
    })
}

/// Add and fill the `call_id` column of a table created before it existed, then create its
/// index — in one immediate transaction, so that of several processes opening the file at
/// once one migrates and the others find it done.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let done = (|| {
        let has: i64 = conn.query_row(HAS_CALL_ID, [], |r| r.get(0))?;
        if has == 0 {
            conn.execute_batch(ADD_CALL_ID)?;
        }
        conn.execute_batch(CALL_INDEX)
    })();
    match done {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Whether the table has the `call_id` column (a file no writer opened since it was added
/// has none).
fn has_call_index(conn: &Connection) -> rusqlite::Result<bool> {
    Ok(conn.query_row(HAS_CALL_ID, [], |r| r.get::<_, i64>(0))? > 0)
}

/// The entries the index names for `call_id`, all of them decoded (a file without the index:
/// every entry); the caller keeps those whose record names the call.
fn read_call_from(conn: &Connection, call_id: &str) -> Result<Vec<Entry>, LedgerError> {
    let read = |e: rusqlite::Error| {
        LedgerError::failed(format!("cannot read the entries of call `{call_id}`"), e)
    };
    if !has_call_index(conn).map_err(read)? {
        return read_entries_from(conn);
    }
    let mut stmt = conn.prepare_cached(SELECT_CALL).map_err(read)?;
    let mut rows = stmt.query([call_id]).map_err(read)?;
    let mut entries = Vec::new();
    while let Some(r) = rows.next().map_err(read)? {
        entries.push(stored_row(r).map_err(read)?.to_entry()?);
    }
    Ok(entries)
}

/// The entries of call `call_id` in the ledger file at `path`, read through a read-only
/// connection and the index of call ids (see [`Ledger::entries_for_call`]).
pub fn read_call(path: &Path, call_id: &str) -> Result<Vec<Entry>, LedgerError> {
    Ok(read_call_from(&open_read_only(path)?, call_id)?
        .into_iter()
        .filter(|e| e.record.call_id() == Some(call_id))
        .collect())
}

fn read_entries_from(conn: &Connection) -> Result<Vec<Entry>, LedgerError> {
    let mut entries = Vec::new();
    let mut failure = None;
    for_each_row(conn, |row| match row.to_entry() {
        Ok(e) => {
            entries.push(e);
            true
        }
        Err(e) => {
            failure = Some(e);
            false
        }
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(entries),
    }
}

/// Every entry of the ledger file at `path`, read through a read-only connection.
pub fn read_entries(path: &Path) -> Result<Vec<Entry>, LedgerError> {
    read_entries_from(&open_read_only(path)?)
}

/// Every stored row of the ledger file at `path`, unchecked, in `seq` order.
pub fn read_rows(path: &Path) -> Result<Vec<StoredRow>, LedgerError> {
    let conn = open_read_only(path)?;
    let mut rows = Vec::new();
    for_each_row(&conn, |r| {
        rows.push(r);
        true
    })?;
    Ok(rows)
}
