//! The PostgreSQL ledger: one chain in one database, appended by many processes on many
//! machines (feature `postgres`).
//!
//! The entries are the rows of LEDGER.md's `entries` table, created on first use under an
//! advisory lock ([`schema`]). Each process has one writer connection with group commit; appends
//! are sequenced by the database, which serialises writers with a transaction-scoped advisory
//! lock and re-reads the head in each transaction (`writer`). Reads go through a small pool.
//! Run leases are session advisory locks ([`lease`]). The store writes no entries of its own.
//!
//! Connections are unencrypted (`NoTls`): the store is for a database reached over a Unix socket,
//! loopback or a private network.

mod budgets;
mod error;
pub mod fence;
pub mod lease;
pub mod schema;
mod worker;
mod writer;

use std::str::FromStr;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{Config, NoTls, Row};

use error::pg;
pub use error::PgError;
use fence::SharedFences;
use worker::{block_on, Worker};
use writer::{connect, Connector, Job};

use crate::budget::{BudgetClaim, Reservation};
use crate::entry::{record_body, select_run, CallIndex, Committed, Entry, StoredRow};
use crate::error::LedgerError;
use crate::lease::RunLease;
use crate::record::Record;
use crate::store::{BoxFuture, Durability, Ledger};
use crate::verify::{verify_rows, VerifyError, VerifyReport};

/// How a [`PostgresLedger`] is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostgresOptions {
    /// `synchronous_commit` `on` (`Full`) or `off` (`Normal`).
    pub durability: Durability,
    /// The largest number of records committed in one transaction.
    pub max_batch: usize,
    /// The most reading connections held at once.
    pub readers: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            durability: Durability::Full,
            max_batch: 1024,
            readers: 4,
        }
    }
}

use crate::redact::redact;

/// The client configuration of `url`.
///
/// # Errors
/// [`PgError::Url`] naming the URL (password hidden) and what is wrong.
pub fn parse_url(url: &str) -> Result<Config, PgError> {
    Config::from_str(url).map_err(|source| PgError::Url {
        location: redact(url),
        source,
    })
}

/// The durable, hash-chained ledger in a PostgreSQL database.
pub struct PostgresLedger {
    location: String,
    config: Config,
    options: PostgresOptions,
    pool: Pool,
    jobs: Option<mpsc::UnboundedSender<Job>>,
    fences: SharedFences,
    budgets_ready: std::sync::Arc<budgets::Ready>,
    approvals_ready: std::sync::Arc<budgets::Ready>,
    writer_done: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    rows_read: std::sync::atomic::AtomicU64,
    // Last: dropping it stops the runtime the writer and the pool run on.
    worker: Worker,
}

impl std::fmt::Debug for PostgresLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresLedger")
            .field("location", &self.location)
            .field("options", &self.options)
            .finish()
    }
}

impl PostgresLedger {
    /// Open the ledger in the database `url` (`postgres://user:password@host:port/db`) with the
    /// given durability; the `entries` table is created if the database has none.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the URL is invalid, the database cannot be reached or
    /// written, or its `entries` table has another shape.
    pub fn open(url: &str, durability: Durability) -> Result<Self, LedgerError> {
        Self::open_with(
            url,
            PostgresOptions {
                durability,
                ..PostgresOptions::default()
            },
        )
    }

    /// Open the ledger in the database `url` with explicit options.
    pub fn open_with(url: &str, options: PostgresOptions) -> Result<Self, LedgerError> {
        let location = redact(url);
        let fail = |e: PgError| e.at(&location);
        let config = parse_url(url).map_err(LedgerError::caused_by)?;
        let worker = Worker::start().map_err(fail)?;
        let connector = Connector {
            config: config.clone(),
            durability: options.durability,
        };
        let opening = connector.clone();
        let client = worker
            .block(async move {
                let mut client = opening.connect().await?;
                schema::ensure(&mut client).await?;
                // Whether this role may write: a transaction that inserts nothing.
                client
                    .batch_execute(
                        "BEGIN; LOCK TABLE entries IN ROW EXCLUSIVE MODE NOWAIT; ROLLBACK",
                    )
                    .await
                    .map_err(pg("write the entries table"))?;
                Ok(client)
            })
            .map_err(fail)?;
        let pool = {
            let _entered = worker.handle().enter();
            let manager = Manager::from_config(
                config.clone(),
                NoTls,
                ManagerConfig {
                    recycling_method: RecyclingMethod::Fast,
                },
            );
            Pool::builder(manager)
                .max_size(options.readers.max(1))
                .build()
                .map_err(|e| fail(PgError::Pool(e.to_string())))?
        };
        let (jobs, queue) = mpsc::unbounded_channel();
        let (done, writer_done) = std::sync::mpsc::channel();
        let max_batch = options.max_batch.max(1);
        let writer_location = location.clone();
        worker.handle().spawn(async move {
            writer::run(connector, Some(client), queue, max_batch, writer_location).await;
            let _ = done.send(());
        });
        Ok(Self {
            location,
            config,
            options,
            pool,
            jobs: Some(jobs),
            fences: SharedFences::default(),
            budgets_ready: std::sync::Arc::default(),
            approvals_ready: std::sync::Arc::default(),
            writer_done: std::sync::Mutex::new(Some(writer_done)),
            rows_read: std::sync::atomic::AtomicU64::new(0),
            worker,
        })
    }

    /// The database URL, its password hidden.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The options it was opened with.
    pub fn options(&self) -> PostgresOptions {
        self.options
    }

    /// Count `n` rows read and decoded.
    fn count(&self, n: usize) {
        self.rows_read.fetch_add(
            u64::try_from(n).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Every stored row, unchecked, in `seq` order.
    pub fn rows(&self) -> Result<Vec<StoredRow>, LedgerError> {
        let pool = self.pool.clone();
        self.worker
            .block(async move {
                let client = pool.get().await.map_err(|e| PgError::Pool(e.to_string()))?;
                let rows = client
                    .query(schema::SELECT_ALL, &[])
                    .await
                    .map_err(pg("read the entries"))?;
                rows.iter().map(stored_row).collect()
            })
            .map_err(|e| e.at(&self.location))
    }
}

impl Drop for PostgresLedger {
    /// Closes the queue and waits for the writer to commit what was queued; then the worker
    /// stops, closing every connection.
    fn drop(&mut self) {
        drop(self.jobs.take());
        let done = self.writer_done.get_mut().ok().and_then(Option::take);
        if let Some(done) = done {
            let _ = done.recv();
        }
    }
}

fn writer_gone() -> LedgerError {
    LedgerError::unavailable("the ledger writer has stopped")
}

/// A row as stored; a column of another type than the table's (altered after the ledger was
/// opened) is an error, never a panic.
fn stored_row(r: &Row) -> Result<StoredRow, PgError> {
    let bad = |e: tokio_postgres::Error| PgError::Corrupt(format!("an entries row: {e}"));
    Ok(StoredRow {
        seq: r.try_get(0).map_err(bad)?,
        prev: r.try_get(1).map_err(bad)?,
        hash: r.try_get(2).map_err(bad)?,
        at_ms: r.try_get(3).map_err(bad)?,
        body: r.try_get(4).map_err(bad)?,
        call_id: if r.len() > 5 {
            CallIndex::Column(r.try_get(5).map_err(bad)?)
        } else {
            CallIndex::Absent
        },
    })
}

fn to_entries(rows: &[StoredRow]) -> Result<Vec<Entry>, LedgerError> {
    rows.iter().map(StoredRow::to_entry).collect()
}

impl Ledger for PostgresLedger {
    fn append(&self, record: Record) -> BoxFuture<'_, Result<Committed, LedgerError>> {
        let queued = record_body(&record).and_then(|body| {
            let (reply, answer) = oneshot::channel();
            let jobs = self.jobs.as_ref().ok_or_else(writer_gone)?;
            let fence = fence::lock(&self.fences).of(&record);
            let call_id = record.call_id().map(str::to_owned);
            jobs.send(Job {
                body,
                call_id,
                fence,
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
        let entries = to_entries(&self.rows()?)?;
        self.count(entries.len());
        Ok(entries)
    }

    /// The rows the `entries_by_call` index names for `call_id`: nothing else is read.
    fn entries_for_call(&self, call_id: &str) -> Result<Vec<Entry>, LedgerError> {
        let pool = self.pool.clone();
        let id = call_id.to_string();
        let rows = self
            .worker
            .block(async move {
                let client = pool.get().await.map_err(|e| PgError::Pool(e.to_string()))?;
                let rows = client
                    .query(schema::SELECT_CALL, &[&id])
                    .await
                    .map_err(pg("read the entries of a call"))?;
                rows.iter().map(stored_row).collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| e.at(&self.location))?;
        let entries = to_entries(&rows)?;
        self.count(entries.len());
        Ok(entries
            .into_iter()
            .filter(|e| e.record.call_id() == Some(call_id))
            .collect())
    }

    fn rows_read(&self) -> u64 {
        self.rows_read.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn entry(&self, seq: u64) -> Result<Option<Entry>, LedgerError> {
        let Ok(seq) = i64::try_from(seq) else {
            return Ok(None);
        };
        let pool = self.pool.clone();
        let row = self
            .worker
            .block(async move {
                let client = pool.get().await.map_err(|e| PgError::Pool(e.to_string()))?;
                let row = client
                    .query_opt(schema::SELECT_ONE, &[&seq])
                    .await
                    .map_err(pg("read an entry"))?;
                row.as_ref().map(stored_row).transpose()
            })
            .map_err(|e| e.at(&self.location))?;
        let entry = row.map(|r| r.to_entry()).transpose()?;
        self.count(usize::from(entry.is_some()));
        Ok(entry)
    }

    fn entries_after(&self, seq: u64) -> Result<Vec<Entry>, LedgerError> {
        let Ok(seq) = i64::try_from(seq) else {
            return Ok(Vec::new());
        };
        let pool = self.pool.clone();
        let rows = self
            .worker
            .block(async move {
                let client = pool.get().await.map_err(|e| PgError::Pool(e.to_string()))?;
                let rows = client
                    .query(schema::SELECT_AFTER, &[&seq])
                    .await
                    .map_err(pg("read the entries after a sequence number"))?;
                rows.iter().map(stored_row).collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| e.at(&self.location))?;
        let entries = to_entries(&rows)?;
        self.count(entries.len());
        Ok(entries)
    }

    fn entries_for_run(&self, run_id: &str) -> Result<Vec<Entry>, LedgerError> {
        Ok(select_run(&self.entries()?, run_id))
    }

    fn head(&self) -> Result<Option<Committed>, LedgerError> {
        let pool = self.pool.clone();
        let head = self
            .worker
            .block(async move {
                let client = pool.get().await.map_err(|e| PgError::Pool(e.to_string()))?;
                let row = client
                    .query_opt(schema::HEAD, &[])
                    .await
                    .map_err(pg("read the head"))?;
                let bad = |e: tokio_postgres::Error| PgError::Corrupt(format!("the head: {e}"));
                row.map(|r| {
                    Ok((
                        r.try_get::<_, i64>(0).map_err(bad)?,
                        r.try_get::<_, String>(1).map_err(bad)?,
                    ))
                })
                .transpose()
            })
            .map_err(|e| e.at(&self.location))?;
        head.map(|(seq, hash)| {
            let seq = u64::try_from(seq).map_err(|_| LedgerError::Corrupt {
                seq: 0,
                why: format!("seq {seq} is negative"),
            })?;
            Ok(Committed { seq, hash })
        })
        .transpose()
    }

    /// Leases are session advisory locks of the database, each on a connection of its own
    /// ([`lease`]): every runtime on the database sees them, and they end with their holder; the
    /// run's records from a holder that lost it are refused ([`fence`]).
    fn lease_run(&self, run_id: &str) -> Result<RunLease, LedgerError> {
        lease::acquire(
            self.worker.handle(),
            &self.config,
            &self.fences,
            run_id,
            &self.location,
        )
    }

    /// Uses live in the `budget_uses` table of the same database, checked and inserted in one
    /// transaction under the advisory lock `budgets::BUDGET_LOCK` (so every runtime on the
    /// database shares the counts).
    fn reserve_budgets(
        &self,
        claim: BudgetClaim,
    ) -> BoxFuture<'_, Result<Reservation, LedgerError>> {
        let running = self.worker.handle().spawn(budgets::reserve(
            self.pool.clone(),
            std::sync::Arc::clone(&self.budgets_ready),
            claim,
        ));
        Box::pin(async move {
            running
                .await
                .map_err(|e| LedgerError::failed("budget uses", e))?
                .map_err(|e| e.at(&self.location))
        })
    }

    /// Claims live in the `approval_claims` table of the same database (`ON CONFLICT DO
    /// NOTHING`: the first claimer's row).
    fn claim_approval(&self, call_id: &str) -> BoxFuture<'_, Result<bool, LedgerError>> {
        let running = self.worker.handle().spawn(budgets::claim_approval(
            self.pool.clone(),
            std::sync::Arc::clone(&self.approvals_ready),
            call_id.to_string(),
        ));
        Box::pin(async move {
            running
                .await
                .map_err(|e| LedgerError::failed("approval claims", e))?
                .map_err(|e| e.at(&self.location))
        })
    }

    fn release_budgets(&self, call_id: &str) -> BoxFuture<'_, Result<(), LedgerError>> {
        let running = self
            .worker
            .handle()
            .spawn(budgets::release(self.pool.clone(), call_id.to_string()));
        Box::pin(async move {
            running
                .await
                .map_err(|e| LedgerError::failed("budget uses", e))?
                .map_err(|e| e.at(&self.location))
        })
    }
}

/// Every stored row of the ledger in the database `url`, unchecked, in `seq` order. Reading
/// never creates the table.
///
/// # Errors
/// [`LedgerError::Unavailable`] when the URL is invalid, the database cannot be reached, or it
/// has no `entries` table (or one of another shape).
pub fn read_rows(url: &str) -> Result<Vec<StoredRow>, LedgerError> {
    let location = redact(url);
    let config = parse_url(url).map_err(LedgerError::caused_by)?;
    let worker = Worker::start().map_err(|e| e.at(&location))?;
    let rows = block_on(worker.handle(), async move {
        let client = connect(&config).await?;
        if !schema::exists(&client).await? {
            return Err(PgError::NoTable);
        }
        schema::check_shape(&client).await?;
        let select = if schema::has_call_id(&client).await? {
            schema::SELECT_ALL_INDEXED
        } else {
            schema::SELECT_ALL
        };
        let rows = client
            .query(select, &[])
            .await
            .map_err(pg("read the entries"))?;
        rows.iter().map(stored_row).collect()
    });
    rows.map_err(|e| e.at(&location))
}

/// The entries of call `call_id` in the ledger in the database `url`, read through the index
/// of call ids (a table no writer opened since the index was added: every row read, the call's
/// kept). Reading never creates the table.
///
/// # Errors
/// As [`read_rows`].
pub fn read_call(url: &str, call_id: &str) -> Result<Vec<Entry>, LedgerError> {
    let location = redact(url);
    let config = parse_url(url).map_err(LedgerError::caused_by)?;
    let worker = Worker::start().map_err(|e| e.at(&location))?;
    let id = call_id.to_string();
    let rows = block_on(worker.handle(), async move {
        let client = connect(&config).await?;
        if !schema::exists(&client).await? {
            return Err(PgError::NoTable);
        }
        schema::check_shape(&client).await?;
        let rows = if schema::has_call_id(&client).await? {
            client.query(schema::SELECT_CALL, &[&id]).await
        } else {
            client.query(schema::SELECT_ALL, &[]).await
        }
        .map_err(pg("read the entries of a call"))?;
        rows.iter().map(stored_row).collect::<Result<Vec<_>, _>>()
    })
    .map_err(|e| e.at(&location))?;
    Ok(to_entries(&rows)?
        .into_iter()
        .filter(|e| e.record.call_id() == Some(call_id))
        .collect())
}

/// Every entry of the ledger in the database `url`.
pub fn read_entries(url: &str) -> Result<Vec<Entry>, LedgerError> {
    to_entries(&read_rows(url)?)
}

/// Verify the ledger in the database `url`, optionally against a known head hash.
pub fn verify_url(url: &str, anchor: Option<&str>) -> Result<VerifyReport, VerifyError> {
    let rows = read_rows(url)?;
    Ok(verify_rows(&rows, anchor)?)
}
