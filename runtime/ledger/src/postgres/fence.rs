//! Fences: a driver that lost its run's lease records nothing more for the run.
//!
//! A lease is a session advisory lock ([`super::lease`]); the session can end while the process
//! that took it lives on (the connection is cut, or an administrator terminates it), and then
//! another runtime may take the lease and resume the run. The engine checks its lease before
//! each event ([`RunLease::check`](crate::lease::RunLease::check)), but a check and an
//! append are two moments. So the store fences the appends themselves: every record of a run
//! this process holds the lease of — its transitions, the intents of its steps (`run_id`), and
//! the outcomes of those intents' calls — carries a [`Fence`], the lease's key and the backend
//! pid of the session holding it. The writer checks each fence in `pg_locks` inside the append
//! transaction, under the append lock, and refuses the records whose lease that session no
//! longer holds ([`LedgerError::LeaseLost`](crate::error::LedgerError::LeaseLost)).
//!
//! A new holder closes the remaining window: right after taking a lease it waits for the append
//! lock once ([`super::lease`]), so an append that passed its fence before the lease moved has
//! committed before the new holder reads the run's journal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::record::Record;

/// Which of the fences `($1[i], $2[i])` (backend pid, lease key) still hold their lease: session
/// `pid` holds the one-key advisory lock `key` in this database. `pg_locks` shows a bigint key as
/// its high 32 bits in `classid` and its low 32 bits in `objid`, with `objsubid = 1`.
pub const HELD: &str = "SELECT f.pid, f.key FROM unnest($1::int4[], $2::int8[]) AS f(pid, key)
    WHERE EXISTS (SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND pid = f.pid
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND classid = ((f.key >> 32) & 4294967295)::oid
          AND objid = (f.key & 4294967295)::oid)";

/// The lease a record's append depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The run.
    pub run_id: String,
    /// The lease's advisory lock key.
    pub key: i64,
    /// The backend pid of the session that holds it.
    pub pid: i32,
}

/// The leases this process holds, and the calls of their runs whose outcome is still to come.
#[derive(Debug, Default)]
pub struct Fences {
    runs: HashMap<String, (i64, i32)>,
    calls: HashMap<String, String>,
}

/// The fences of one store, shared by its leases and its appends.
pub type SharedFences = Arc<Mutex<Fences>>;

impl Fences {
    /// Run `run_id`'s lease is held by session `pid` under `key`.
    pub fn hold(&mut self, run_id: &str, key: i64, pid: i32) {
        self.runs.insert(run_id.to_string(), (key, pid));
    }

    /// Run `run_id`'s lease was released here: its records are no longer fenced by it.
    pub fn release(&mut self, run_id: &str) {
        self.runs.remove(run_id);
        self.calls.retain(|_, run| run != run_id);
    }

    /// The fence of `record`: the lease of its run, if this process holds one. An intent of a
    /// fenced run makes its call's outcome fenced too.
    pub fn of(&mut self, record: &Record) -> Option<Fence> {
        let run_id = match record {
            Record::Transition(t) => t.run_id.clone(),
            Record::Intent(i) => {
                let run_id = i.run_id.clone()?;
                if self.runs.contains_key(&run_id) {
                    self.calls.insert(i.call_id.clone(), run_id.clone());
                }
                run_id
            }
            Record::Outcome(o) => self.calls.remove(&o.call_id)?,
            // An approval is fenced only when this process drives the call's run.
            Record::Approval(a) => self.calls.get(&a.call_id)?.clone(),
            Record::Declassification(_) => return None,
        };
        let (key, pid) = *self.runs.get(&run_id)?;
        Some(Fence { run_id, key, pid })
    }
}

/// Lock `fences`, whatever a panicking holder left.
pub fn lock(fences: &SharedFences) -> std::sync::MutexGuard<'_, Fences> {
    fences
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(v: serde_json::Value) -> Record {
        serde_json::from_value(v).unwrap()
    }

    fn intent(call: &str, run: Option<&str>) -> Record {
        let mut v = json!({"kind": "intent", "call_id": call, "idempotency_key": "k",
            "tool_id": "t", "tool_version": "1.0.0", "class": "read-only",
            "principal": "Agent::\"a\"", "payload": {}, "payload_hash": "00",
            "decision": "allow", "policy_ids": []});
        if let Some(r) = run {
            v["run_id"] = json!(r);
        }
        record(v)
    }

    fn outcome(call: &str) -> Record {
        record(json!({"kind": "outcome", "call_id": call, "result": "ok", "attempts": []}))
    }

    fn transition(run: &str) -> Record {
        record(json!({"kind": "transition", "run_id": run, "event": "step_started"}))
    }

    #[test]
    fn the_records_of_a_held_run_are_fenced_by_its_lease() {
        let mut f = Fences::default();
        assert_eq!(f.of(&transition("r")), None, "no lease held here");
        f.hold("r", 7, 42);
        let fence = Some(Fence {
            run_id: "r".into(),
            key: 7,
            pid: 42,
        });
        assert_eq!(f.of(&transition("r")), fence);
        assert_eq!(f.of(&transition("other")), None);
        assert_eq!(f.of(&intent("c1", Some("r"))), fence);
        assert_eq!(f.of(&intent("c2", None)), None, "a call outside any run");
        assert_eq!(f.of(&outcome("c2")), None);
        assert_eq!(f.of(&outcome("c1")), fence, "the step's outcome");
        assert_eq!(f.of(&outcome("c1")), None, "an outcome is fenced once");
        f.of(&intent("c3", Some("r")));
        f.release("r");
        assert_eq!(f.of(&transition("r")), None);
        assert_eq!(f.of(&outcome("c3")), None, "released with the lease");
    }
}
