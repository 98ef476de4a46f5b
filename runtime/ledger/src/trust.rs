//! Entries a runtime acts on, checked before it acts.
//!
//! Approving a call runs the payload its intent recorded; resuming an SOP run re-runs an
//! unfinished step with its recorded payload and compensates with payloads built from recorded
//! inputs and outputs; a task's result is the recorded output. Each of those reads an entry
//! back from a store that someone with write access to it could have edited. So before acting,
//! the runtime checks the entry ([`check_links`] and the functions built on it):
//!
//! - its hash, recomputed from its content, is the hash it was committed with;
//! - it is linked into the chain: its `prev` is the hash of the entry before it (or the
//!   genesis value for the first), and the entry after it, if any, names its hash as `prev` —
//!   so an entry edited and re-hashed breaks the link to its successor;
//! - an intent's payload hashes to its `payload_hash`, an outcome's output to its
//!   `output_hash`;
//! - with trusted checkpoints configured ([`Trust::checkpoints`]), the whole chain verifies
//!   and its first entries hash to each checkpoint's root, so not even a rewrite of every entry
//!   from the edited one to the head goes unseen for an entry a checkpoint covers.
//!
//! A check that fails refuses the action; nothing is executed or recorded.

use crate::checkpoint::Checkpoint;
use crate::entry::{canonical_json, sha256_hex, Entry, GENESIS_PREV};
use crate::error::LedgerError;
use crate::proof::{CheckpointTamper, LedgerTree};
use crate::record::Record;
use crate::store::Ledger;
use crate::verify::{Tamper, TamperKind, VerifyError};

/// What a runtime trusts besides the chain itself: the signed checkpoints it was given (already
/// opened with their verifier key).
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Checkpoints the chain must match (empty: the chain's own links only).
    pub checkpoints: Vec<Checkpoint>,
}

/// Why an entry cannot be acted on.
#[derive(Debug, thiserror::Error)]
pub enum UntrustedEntry {
    /// The entry, or its place in the chain, is not what was committed.
    #[error("the ledger does not hold what was committed: {0}")]
    Tampered(#[from] Tamper),
    /// The chain does not match a trusted checkpoint.
    #[error("the ledger does not match its checkpoint: {0}")]
    Checkpoint(#[from] CheckpointTamper),
    /// The store could not be read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl From<VerifyError> for UntrustedEntry {
    fn from(e: VerifyError) -> Self {
        match e {
            VerifyError::Tampered(t) => Self::Tampered(t),
            VerifyError::Unreadable(e) => Self::Ledger(e),
        }
    }
}

fn changed(seq: u64, detail: String) -> Tamper {
    Tamper {
        seq,
        kind: TamperKind::Changed,
        detail,
    }
}

/// Check `entry` alone: its hash and the hashes of the payload or output it records.
///
/// # Errors
/// The [`Tamper`] found.
pub fn check_content(entry: &Entry) -> Result<(), Tamper> {
    let computed = entry
        .computed_hash()
        .map_err(|e| changed(entry.seq, format!("its record cannot be encoded: {e}")))?;
    if computed != entry.hash {
        return Err(changed(
            entry.seq,
            format!(
                "its content hashes to {computed}, not to its committed hash {}",
                entry.hash
            ),
        ));
    }
    match &entry.record {
        Record::Intent(i) => {
            let actual = sha256_hex(canonical_json(&i.payload).as_bytes());
            if actual != i.payload_hash {
                return Err(changed(
                    entry.seq,
                    format!(
                        "the payload of call `{}` hashes to {actual}, not to its payload_hash {}",
                        i.call_id, i.payload_hash
                    ),
                ));
            }
        }
        Record::Outcome(o) => {
            if let (Some(output), Some(expected)) = (&o.output, &o.output_hash) {
                let actual = sha256_hex(canonical_json(output).as_bytes());
                if &actual != expected {
                    return Err(changed(
                        entry.seq,
                        format!(
                            "the output of call `{}` hashes to {actual}, not to its output_hash \
                             {expected}",
                            o.call_id
                        ),
                    ));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Check `entry` with its neighbours in the chain (`before` is entry `seq - 1`, `after` entry
/// `seq + 1`, each `None` when there is none): [`check_content`], then the links.
///
/// # Errors
/// The [`Tamper`] found.
pub fn check_links(
    entry: &Entry,
    before: Option<&Entry>,
    after: Option<&Entry>,
) -> Result<(), Tamper> {
    check_content(entry)?;
    let seq = entry.seq;
    let expected_prev = match (seq, before) {
        (1, _) => GENESIS_PREV,
        (_, Some(b)) if b.seq + 1 == seq => b.hash.as_str(),
        _ => {
            return Err(Tamper {
                seq: seq.saturating_sub(1),
                kind: TamperKind::Removed,
                detail: format!("entry {seq} has no entry {} before it", seq - 1),
            })
        }
    };
    if entry.prev != expected_prev {
        return Err(changed(
            seq,
            format!(
                "its prev {} is not the hash {expected_prev} of the entry before it",
                entry.prev
            ),
        ));
    }
    if let Some(a) = after {
        if a.seq != seq + 1 || a.prev != entry.hash {
            return Err(changed(
                seq,
                format!(
                    "the entry after it (seq {}) names {} as its prev, not this entry's hash {}: \
                     this entry was replaced",
                    a.seq, a.prev, entry.hash
                ),
            ));
        }
    }
    Ok(())
}

/// Check `entries[index]` of a whole chain (`entries` as [`Ledger::entries`] gives them) by
/// `trust`.
///
/// # Errors
/// [`UntrustedEntry`].
pub fn check_in_chain(
    entries: &[Entry],
    index: usize,
    trust: &Trust,
) -> Result<(), UntrustedEntry> {
    let Some(entry) = entries.get(index) else {
        return Ok(());
    };
    let before = index.checked_sub(1).and_then(|i| entries.get(i));
    check_links(entry, before, entries.get(index + 1))?;
    check_checkpoints(entries, trust)
}

/// Check `entry` (read from `ledger`, alone or among a run's entries) by `trust`: its
/// neighbours are read from the store by their sequence numbers.
///
/// # Errors
/// [`UntrustedEntry`].
pub fn check_in_ledger(
    ledger: &dyn Ledger,
    entry: &Entry,
    trust: &Trust,
) -> Result<(), UntrustedEntry> {
    let before = match entry.seq {
        0 | 1 => None,
        seq => ledger.entry(seq - 1)?,
    };
    let after = ledger.entry(entry.seq + 1)?;
    check_links(entry, before.as_ref(), after.as_ref())?;
    if trust.checkpoints.is_empty() {
        return Ok(());
    }
    check_checkpoints(&ledger.entries()?, trust)
}

/// Check each of `entries` (a run's, read from `ledger`, in chain order) by `trust`: each with
/// its neighbours (taken from `entries` where they are there, else read from the store), the
/// whole chain against the checkpoints once.
///
/// # Errors
/// [`UntrustedEntry`] for the first entry that does not hold.
pub fn check_all_in_ledger(
    ledger: &dyn Ledger,
    entries: &[Entry],
    trust: &Trust,
) -> Result<(), UntrustedEntry> {
    let read = |seq: u64, near: Option<&Entry>| -> Result<Option<Entry>, LedgerError> {
        match near {
            Some(e) if e.seq == seq => Ok(Some(e.clone())),
            _ if seq == 0 => Ok(None),
            _ => ledger.entry(seq),
        }
    };
    for (i, entry) in entries.iter().enumerate() {
        let before = match entry.seq {
            0 | 1 => None,
            seq => read(seq - 1, i.checked_sub(1).and_then(|j| entries.get(j)))?,
        };
        let after = read(entry.seq + 1, entries.get(i + 1))?;
        check_links(entry, before.as_ref(), after.as_ref())?;
    }
    if trust.checkpoints.is_empty() {
        return Ok(());
    }
    check_checkpoints(&ledger.entries()?, trust)
}

/// The whole chain against the trusted checkpoints (nothing to do without any).
fn check_checkpoints(entries: &[Entry], trust: &Trust) -> Result<(), UntrustedEntry> {
    if trust.checkpoints.is_empty() {
        return Ok(());
    }
    LedgerTree::of_entries(entries)?.check(&trust.checkpoints)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::memory::MemoryLedger;
    use crate::record::Transition;
    use crate::record::{Decision, Intent};
    use escepine_contract::SideEffectClass;

    fn intent(call_id: &str, payload: serde_json::Value) -> Record {
        let hash = sha256_hex(canonical_json(&payload).as_bytes());
        Record::Intent(Intent {
            call_id: call_id.into(),
            idempotency_key: "key".into(),
            run_id: None,
            step: None,
            compensates: None,
            tool_id: "send".into(),
            tool_version: "1.0.0".into(),
            class: SideEffectClass::Supersede,
            principal: r#"Agent::"alice""#.into(),
            payload,
            payload_hash: hash,
            decision: Decision::AwaitingApproval,
            policy_ids: vec![],
            reasons: vec![],
            overlay: vec![],
            egress_origins: vec![],
            deadline_ms: None,
            credential_exemptions: vec![],
            files: Vec::new(),
            attestation: None,
            shadow: None,
            approval: None,
            flow: None,
            flow_state: None,
        })
    }

    fn transition() -> Record {
        Record::Transition(Transition {
            run_id: "r".into(),
            event: "transition".into(),
            state: None,
            data: serde_json::Value::Null,
        })
    }

    async fn chain() -> Vec<Entry> {
        let ledger = MemoryLedger::new();
        for record in [
            transition(),
            intent("c1", json!({"to": "alice"})),
            transition(),
        ] {
            ledger.append(record).await.expect("append");
        }
        ledger.entries().expect("entries")
    }

    #[tokio::test]
    async fn an_intact_entry_passes() {
        let entries = chain().await;
        check_in_chain(&entries, 1, &Trust::default()).expect("intact");
    }

    #[tokio::test]
    async fn an_edited_payload_is_found_by_the_entry_hash() {
        let mut entries = chain().await;
        if let Record::Intent(i) = &mut entries[1].record {
            i.payload = json!({"to": "mallory"});
        }
        let err = check_in_chain(&entries, 1, &Trust::default()).expect_err("edited");
        assert!(err.to_string().contains("entry 2 changed"), "{err}");
    }

    #[tokio::test]
    async fn a_payload_edited_and_rehashed_is_found_by_its_payload_hash_or_the_next_link() {
        let mut entries = chain().await;
        if let Record::Intent(i) = &mut entries[1].record {
            i.payload = json!({"to": "mallory"});
        }
        entries[1].hash = entries[1].computed_hash().expect("hash");
        let err = check_in_chain(&entries, 1, &Trust::default()).expect_err("edited");
        assert!(err.to_string().contains("payload_hash"), "{err}");
        // The payload hash recomputed as well: the successor's link names the old hash.
        if let Record::Intent(i) = &mut entries[1].record {
            i.payload_hash = sha256_hex(canonical_json(&i.payload).as_bytes());
        }
        entries[1].hash = entries[1].computed_hash().expect("hash");
        let err = check_in_chain(&entries, 1, &Trust::default()).expect_err("re-chained");
        assert!(err.to_string().contains("was replaced"), "{err}");
    }
}
