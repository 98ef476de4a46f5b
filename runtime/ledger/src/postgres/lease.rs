//! Run leases held in the database: a session advisory lock per run, on a connection of its own.
//!
//! The lease of run `r` is `pg_try_advisory_lock(k)` with `k` the first 8 bytes of
//! SHA-256(`r`) as a big-endian signed integer, taken on a connection opened for this lease
//! alone and held until the lease is dropped (then `pg_advisory_unlock(k)` and the connection
//! closes). Every runtime on the database, on any machine, sees it. When the holder's process
//! dies or its connection is lost, the server ends the session and the lock with it, so another
//! runtime can resume the run; a holder that lives on is fenced ([`super::fence`]).
//!
//! Right after taking the lock, the new holder waits once for the append lock, so that an append
//! of the previous holder that passed its fence has committed before this holder reads the run.

use sha2::{Digest, Sha256};
use tokio::runtime::Handle;
use tokio_postgres::{Client, Config};

use super::error::pg;
use super::fence::{self, SharedFences};
use super::schema::{APPEND_LOCK, LOCK_CLASS};
use super::worker::block_on;
use super::writer::connect;
use crate::error::LedgerError;
use crate::lease::{Hold, RunLease};

/// The advisory lock key of `run_id`'s lease (in the one-key space; the ledger's own locks use
/// the two-key space).
pub fn lease_key(run_id: &str) -> i64 {
    let digest = Sha256::digest(run_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// Take the lease of `run_id` on a new connection run by `handle`'s runtime, and fence this
/// store's records of the run by it.
pub fn acquire(
    handle: &Handle,
    config: &Config,
    fences: &SharedFences,
    run_id: &str,
    location: &str,
) -> Result<RunLease, LedgerError> {
    let key = lease_key(run_id);
    let config = config.clone();
    let taken = block_on(handle, async move {
        let mut client = connect(&config).await?;
        let row = client
            .query_one("SELECT pg_try_advisory_lock($1), pg_backend_pid()", &[&key])
            .await
            .map_err(pg("take the run's lease"))?;
        let got: bool = row.try_get(0).map_err(pg("take the run's lease"))?;
        let pid: i32 = row.try_get(1).map_err(pg("take the run's lease"))?;
        if !got {
            return Ok(None);
        }
        // Every append that passed a fence of the previous holder commits before this returns.
        let tx = client
            .transaction()
            .await
            .map_err(pg("wait for the appends in flight"))?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&LOCK_CLASS, &APPEND_LOCK],
        )
        .await
        .map_err(pg("wait for the appends in flight"))?;
        tx.commit()
            .await
            .map_err(pg("wait for the appends in flight"))?;
        Ok(Some((client, pid)))
    })
    .map_err(|e| e.at(location))?;
    match taken {
        Some((client, pid)) => {
            fence::lock(fences).hold(run_id, key, pid);
            Ok(RunLease::holding(
                run_id,
                Held {
                    client: Some(client),
                    key,
                    handle: handle.clone(),
                    fences: fences.clone(),
                    run_id: run_id.to_string(),
                },
            ))
        }
        None => Err(LedgerError::RunLeased(run_id.to_string())),
    }
}

/// The connection holding one lease.
struct Held {
    client: Option<Client>,
    key: i64,
    handle: Handle,
    fences: SharedFences,
    run_id: String,
}

impl Hold for Held {
    /// Held while its connection is open: the server ends the lock with the session.
    fn held(&self) -> bool {
        self.client.as_ref().is_some_and(|c| !c.is_closed())
    }
}

impl Drop for Held {
    /// Unlocks and closes the connection, and waits (a few seconds at most) for the unlock, so a
    /// lease taken again right after is free. If the store's runtime is gone, the connection is
    /// already closed and the server has released the lock.
    fn drop(&mut self) {
        fence::lock(&self.fences).release(&self.run_id);
        let Some(client) = self.client.take() else {
            return;
        };
        let key = self.key;
        let (done, unlocked) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let r = client
                .execute("SELECT pg_advisory_unlock($1)", &[&key])
                .await;
            drop(client);
            let _ = done.send(r.is_ok());
        });
        if let Err(e) = unlocked.recv_timeout(std::time::Duration::from_secs(5)) {
            tracing::debug!(error = %e, "a run lease was released without an explicit unlock");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_keys_are_the_first_eight_bytes_of_the_run_ids_sha256() {
        // SHA-256("run-1") begins 4e65d3fb e8ad6535.
        assert_eq!(lease_key("run-1"), 0x4e65_d3fb_e8ad_6535);
        // A digest whose first bit is set gives a negative key.
        assert!((0..64).any(|n| lease_key(&format!("run-{n}")) < 0));
        assert_ne!(lease_key("run-1"), lease_key("run-2"));
    }
}
