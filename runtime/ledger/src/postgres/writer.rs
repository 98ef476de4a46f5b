//! The writer: one connection per process, group commit, appends sequenced by the database.
//!
//! The writer task takes everything queued (up to `max_batch` records) and, in one transaction,
//! takes the transaction-scoped advisory lock [`APPEND_LOCK`](super::schema::APPEND_LOCK) (every
//! process appending to the database waits for it there), reads the head, inserts the batch
//! chained after it, and commits with `synchronous_commit = on` (durability `Full`). Only then
//! does it answer the callers. A failed batch is rolled back and every caller in it gets
//! [`LedgerError::Unavailable`]; a lost connection is opened again for the next batch. Records
//! fenced by a run's lease ([`super::fence`]) are checked under the append lock; those whose
//! lease was lost are left out of the batch and refused with [`LedgerError::LeaseLost`].

use tokio::sync::{mpsc, oneshot};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::error::{pg, PgError};
use super::fence::{Fence, HELD};
use super::schema::{APPEND_LOCK, HEAD, INSERT, LOCK_CLASS};
use crate::entry::{entry_hash, is_hash, now_ms, Committed, GENESIS_PREV};
use crate::error::LedgerError;
use crate::store::Durability;

/// A record on its way to the writer: its canonical body, the call it names, and who waits for
/// the commit.
pub struct Job {
    /// The record's canonical JSON.
    pub body: String,
    /// The call the record names (the `call_id` column), if any.
    pub call_id: Option<String>,
    /// The run lease the record's append depends on, if any.
    pub fence: Option<Fence>,
    /// Where the commit (or its failure) is answered.
    pub reply: oneshot::Sender<Result<Committed, LedgerError>>,
}

/// How the writer connects.
#[derive(Debug, Clone)]
pub struct Connector {
    /// The database.
    pub config: Config,
    /// `synchronous_commit` `on` (`Full`) or `off` (`Normal`).
    pub durability: Durability,
}

impl Connector {
    /// A connection whose task runs on the current runtime, with the session settings of the
    /// durability mode.
    pub async fn connect(&self) -> Result<Client, PgError> {
        let client = connect(&self.config).await?;
        let sync = match self.durability {
            Durability::Full => "on",
            Durability::Normal => "off",
        };
        client
            .batch_execute(&format!("SET synchronous_commit = {sync}"))
            .await
            .map_err(pg("set synchronous_commit"))?;
        Ok(client)
    }
}

/// A connection to `config`'s database, its task spawned on the current runtime.
pub async fn connect(config: &Config) -> Result<Client, PgError> {
    let (client, connection) = config.connect(NoTls).await.map_err(pg("connect"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "a ledger connection ended");
        }
    });
    Ok(client)
}

/// The writer's connection and its statements, prepared once per connection so that each
/// transaction takes two round trips: `BEGIN`, the append lock, the fences and the head are sent
/// together; then the insert and `COMMIT`.
struct Session {
    client: Client,
    lock: Statement,
    held: Statement,
    head: Statement,
    insert: Statement,
}

impl Session {
    async fn prepare(client: Client) -> Result<Self, PgError> {
        let prepare = |sql: &'static str| client.prepare(sql);
        let (lock, held, head, insert) = tokio::join!(
            biased;
            prepare("SELECT pg_advisory_xact_lock($1, $2)"),
            prepare(HELD),
            prepare(HEAD),
            prepare(INSERT),
        );
        let why = pg("prepare the append statements");
        Ok(Self {
            lock: lock.map_err(&why)?,
            held: held.map_err(&why)?,
            head: head.map_err(&why)?,
            insert: insert.map_err(&why)?,
            client,
        })
    }
}

/// Commit what arrives on `queue` in batches until every sender is gone; `client` is the
/// connection opened (and checked) with the ledger.
pub async fn run(
    connector: Connector,
    client: Option<Client>,
    mut queue: mpsc::UnboundedReceiver<Job>,
    max_batch: usize,
    location: String,
) {
    let mut session = match client {
        Some(c) => Session::prepare(c).await.ok(),
        None => None,
    };
    let mut batch: Vec<Job> = Vec::with_capacity(max_batch.min(4096));
    while let Some(first) = queue.recv().await {
        batch.push(first);
        while batch.len() < max_batch {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        if session.as_ref().is_none_or(|s| s.client.is_closed()) {
            session = None;
        }
        let result = match session.as_ref() {
            Some(s) => commit_batch(s, &batch).await,
            None => match connector.connect().await {
                Ok(c) => match Session::prepare(c).await {
                    Ok(s) => commit_batch(session.insert(s), &batch).await,
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(committed) => {
                for (job, c) in batch.drain(..).zip(committed) {
                    let _ = job.reply.send(c);
                }
            }
            Err(e) => {
                // Whatever the transaction did is undone (a lost connection undoes it itself).
                if let Some(s) = session.as_ref().filter(|s| !s.client.is_closed()) {
                    if s.client.batch_execute("ROLLBACK").await.is_err() {
                        session = None;
                    }
                }
                let why =
                    LedgerError::failed(format_args!("{location}: the batch was not committed"), e);
                for job in batch.drain(..) {
                    let _ = job.reply.send(Err(why.clone()));
                }
            }
        }
    }
}

/// Commit `batch` in one transaction: each job's result, in order (a fenced record whose lease
/// was lost is refused; the others are committed). On an error the transaction may be open:
/// the caller rolls it back.
async fn commit_batch(
    session: &Session,
    batch: &[Job],
) -> Result<Vec<Result<Committed, LedgerError>>, PgError> {
    let c = &session.client;
    // The leases this batch depends on, each once. They are checked under the append lock: a new
    // holder waits for this lock right after taking a lease, so what passes here commits before
    // it reads the run.
    let mut fences: Vec<(i32, i64)> = batch
        .iter()
        .filter_map(|j| j.fence.as_ref().map(|f| (f.pid, f.key)))
        .collect();
    fences.sort_unstable();
    fences.dedup();
    let (pids, keys): (Vec<i32>, Vec<i64>) = fences.iter().copied().unzip();
    let lock_keys: &[&(dyn ToSql + Sync)] = &[&LOCK_CLASS, &APPEND_LOCK];
    let fence_keys: &[&(dyn ToSql + Sync)] = &[&pids, &keys];
    // One round trip: each request is sent when first polled, in this order (`biased`), and the
    // server runs them in order, the lock before the fences and the head.
    let (begin, lock, held, head) = tokio::join!(
        biased;
        c.batch_execute("BEGIN"),
        c.execute(&session.lock, lock_keys),
        c.query(&session.held, fence_keys),
        c.query_opt(&session.head, &[]),
    );
    begin.map_err(pg("begin"))?;
    lock.map_err(pg("take the append lock"))?;
    let mut still_held = std::collections::HashSet::new();
    for row in held.map_err(pg("check the runs' leases"))? {
        let pid: i32 = row.try_get(0).map_err(pg("check the runs' leases"))?;
        let key: i64 = row.try_get(1).map_err(pg("check the runs' leases"))?;
        still_held.insert((pid, key));
    }
    let head = head.map_err(pg("read the head"))?;
    let admitted = |job: &Job| {
        job.fence
            .as_ref()
            .is_none_or(|f| still_held.contains(&(f.pid, f.key)))
    };
    let (mut seq, mut prev) = match head {
        None => (0u64, GENESIS_PREV.to_string()),
        Some(row) => {
            let bad = |e: tokio_postgres::Error| PgError::Corrupt(format!("the head: {e}"));
            let seq: i64 = row.try_get(0).map_err(bad)?;
            let hash: String = row.try_get(1).map_err(bad)?;
            let seq = u64::try_from(seq)
                .ok()
                .filter(|s| *s > 0)
                .ok_or_else(|| PgError::Corrupt(format!("the last entry has seq {seq}")))?;
            if !is_hash(&hash) {
                return Err(PgError::Corrupt(format!(
                    "entry {seq} has no well-formed hash"
                )));
            }
            (seq, hash)
        }
    };
    // Taken under the lock, so the times of the chain follow its order across processes.
    let at_ms = now_ms();
    let at =
        i64::try_from(at_ms).map_err(|_| PgError::Corrupt("the clock is out of range".into()))?;
    let n = batch.iter().filter(|j| admitted(j)).count();
    let (mut seqs, mut prevs, mut hashes, mut bodies, mut calls) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::<Option<&str>>::with_capacity(n),
    );
    let mut committed = Vec::with_capacity(batch.len());
    for job in batch {
        if !admitted(job) {
            let run_id = job.fence.as_ref().map(|f| f.run_id.clone());
            committed.push(Err(LedgerError::LeaseLost(run_id.unwrap_or_default())));
            continue;
        }
        seq += 1;
        let s = i64::try_from(seq).map_err(|_| PgError::Corrupt("seq overflow".into()))?;
        let hash = entry_hash(seq, &prev, at_ms, &job.body);
        seqs.push(s);
        prevs.push(std::mem::replace(&mut prev, hash.clone()));
        hashes.push(hash.clone());
        bodies.push(job.body.as_str());
        calls.push(job.call_id.as_deref());
        committed.push(Ok(Committed { seq, hash }));
    }
    if n == 0 {
        c.batch_execute("COMMIT").await.map_err(pg("commit"))?;
        return Ok(committed);
    }
    // One round trip: an insert that fails aborts the transaction, and its `COMMIT` then ends it
    // as a rollback.
    let ats = vec![at; n];
    let columns: &[&(dyn ToSql + Sync)] = &[&seqs, &prevs, &hashes, &ats, &bodies, &calls];
    let (inserted, commit) = tokio::join!(
        biased;
        c.execute(&session.insert, columns),
        c.batch_execute("COMMIT"),
    );
    inserted.map_err(pg("insert the entries"))?;
    commit.map_err(pg("commit"))?;
    Ok(committed)
}
