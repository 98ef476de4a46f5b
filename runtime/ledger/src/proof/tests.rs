//! A memory ledger's tree: checkpoints matched, every call's proofs verified, and each kind of
//! tampering (cut, rewritten and re-chained, rewritten between two checkpoints) found.

use serde_json::json;

use super::*;
use crate::entry::{entry_hash, GENESIS_PREV};
use crate::memory::MemoryLedger;
use crate::merkle::{hash_from_b64, verify_inclusion};
use crate::store::Ledger;

fn record(v: serde_json::Value) -> Record {
    serde_json::from_value(v).unwrap()
}

fn intent(n: u64) -> Record {
    record(json!({
        "kind": "intent", "call_id": format!("call-{n}"), "idempotency_key": format!("k-{n}"),
        "tool_id": "kb_fetch", "tool_version": "1.0.0", "class": "read-only",
        "principal": "Agent::\"alice\"", "payload": {"n": n}, "payload_hash": "00",
        "decision": "allow", "policy_ids": ["p"]
    }))
}

fn outcome(n: u64) -> Record {
    record(
        json!({"kind": "outcome", "call_id": format!("call-{n}"), "result": "ok", "attempts": []}),
    )
}

fn transition(n: u64) -> Record {
    record(json!({"kind": "transition", "run_id": "run-1", "event": format!("e{n}")}))
}

/// A chain of `calls` calls (intent, outcome) with a transition after every second call.
fn rows(calls: u64) -> Vec<StoredRow> {
    let ledger = MemoryLedger::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        for n in 1..=calls {
            ledger.append(intent(n)).await.unwrap();
            ledger.append(outcome(n)).await.unwrap();
            if n % 2 == 0 {
                ledger.append(transition(n)).await.unwrap();
            }
        }
    });
    ledger
        .entries()
        .unwrap()
        .iter()
        .map(|e| e.stored_row())
        .collect()
}

/// `rows` with entry `seq`'s body changed and every later hash recomputed: a chain that verifies.
fn rechained(mut rows: Vec<StoredRow>, seq: usize) -> Vec<StoredRow> {
    let body = rows[seq - 1]
        .body
        .take()
        .unwrap()
        .replace("\"allow\"", "\"deny\"");
    rows[seq - 1].body = Some(body);
    let mut prev = if seq == 1 {
        GENESIS_PREV.to_string()
    } else {
        rows[seq - 2].hash.clone().unwrap()
    };
    for r in &mut rows[seq - 1..] {
        r.prev = Some(prev.clone());
        let h = entry_hash(
            r.seq as u64,
            &prev,
            r.at_ms.unwrap() as u64,
            r.body.as_deref().unwrap(),
        );
        r.hash = Some(h.clone());
        prev = h;
    }
    rows
}

#[test]
fn the_leaf_is_the_hash_input_of_ledger_md() {
    let body = r#"{"event":"run_started","kind":"transition","run_id":"run-1","state":"read"}"#;
    let input = hash_input(1, GENESIS_PREV, 1_700_000_000_000, body);
    assert_eq!(
        entry_leaf(1, GENESIS_PREV, 1_700_000_000_000, body),
        leaf_hash(input.as_bytes())
    );
}

#[test]
fn every_calls_proofs_verify_against_the_checkpoint() {
    let rows = rows(9);
    let tree = LedgerTree::of_rows(rows.clone()).unwrap();
    let cp = tree.checkpoint("log/test");
    assert_eq!(cp.size, rows.len() as u64);
    assert_eq!(tree.report().entries, cp.size);
    for n in 1..=9u64 {
        let proof = tree.prove_call(&format!("call-{n}"), None).unwrap();
        assert_eq!(proof.root, b64(&cp.root));
        assert_eq!(proof.entries.len(), 2, "intent and outcome of call-{n}");
        for e in &proof.entries {
            let leaf = hash_from_b64(&e.leaf_hash).unwrap();
            assert_eq!(leaf, leaf_hash(e.leaf_input.as_bytes()));
            let path: Vec<Hash> = e
                .audit_path
                .iter()
                .map(|h| hash_from_b64(h).unwrap())
                .collect();
            verify_inclusion(&leaf, e.leaf_index, proof.tree_size, &path, &cp.root).unwrap();
            assert_eq!(e.seq, e.leaf_index + 1);
        }
    }
    // Against an earlier tree: only the entries it holds.
    let early = tree.prove_call("call-2", Some(5)).unwrap();
    assert_eq!(
        early.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [3, 4]
    );
    assert_eq!(early.root, b64(&tree.tree().root_at(5).unwrap()));
    assert!(matches!(
        tree.prove_call("call-3", Some(5)),
        Err(ProveError::UnknownCall { .. })
    ));
    assert!(matches!(
        tree.prove_call("nope", None),
        Err(ProveError::UnknownCall { .. })
    ));
    assert!(matches!(
        tree.prove_call("call-1", Some(1000)),
        Err(ProveError::Proof(_))
    ));
}

#[test]
fn a_chain_checks_against_its_checkpoints_and_a_cut_or_rewrite_is_found() {
    let all = rows(8);
    let full = LedgerTree::of_rows(all.clone()).unwrap();
    let new = full.checkpoint("log");
    let old = LedgerTree::of_rows(all[..5].to_vec())
        .unwrap()
        .checkpoint("log");
    let report = full.check(&[old.clone(), new.clone()]).unwrap();
    assert_eq!(report.matched, [5, all.len() as u64]);
    assert!(matches!(report.consistent, Some((5, n, len)) if n == all.len() as u64 && len > 0));
    full.check(std::slice::from_ref(&new)).unwrap();

    // The tail cut: the chain verifies, the checkpoint finds it.
    let cut = LedgerTree::of_rows(all[..all.len() - 2].to_vec()).unwrap();
    let e = cut.check(std::slice::from_ref(&new)).unwrap_err();
    assert!(matches!(e, CheckpointTamper::Truncated { .. }), "{e}");
    assert!(e.to_string().contains("removed from its end"), "{e}");

    // Entry 3 changed and the chain re-sealed after it: intact as a chain, not as a tree.
    let forged = LedgerTree::of_rows(rechained(all.clone(), 3)).unwrap();
    let e = forged.check(&[old.clone(), new.clone()]).unwrap_err();
    assert!(
        matches!(e, CheckpointTamper::Rewritten { size, .. } if size == new.size),
        "{e}"
    );
    let e = forged.check(std::slice::from_ref(&old)).unwrap_err();
    assert!(
        matches!(e, CheckpointTamper::Rewritten { size: 5, .. }),
        "{e}"
    );
    // A change after the old checkpoint leaves it matched.
    let later = LedgerTree::of_rows(rechained(all.clone(), 7)).unwrap();
    later.check(std::slice::from_ref(&old)).unwrap();

    // The operator rewrites entry 3 and signs a new checkpoint: it matches the ledger, but is
    // not consistent with the old one.
    let resigned = forged.checkpoint("log");
    let e = forged.check(&[old.clone(), resigned]).unwrap_err();
    assert!(
        matches!(e, CheckpointTamper::Inconsistent { old: 5, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("rewritten between them"), "{e}");
}

#[test]
fn a_memory_ledgers_tree_is_the_tree_of_its_rows() {
    let ledger = MemoryLedger::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        for n in 1..=4 {
            ledger.append(intent(n)).await.unwrap();
            ledger.append(outcome(n)).await.unwrap();
        }
    });
    let entries = ledger.entries().unwrap();
    let tree = LedgerTree::of_entries(&entries).unwrap();
    let rows: Vec<StoredRow> = entries.iter().map(|e| e.stored_row()).collect();
    assert_eq!(tree.tree().size(), 8);
    assert_eq!(
        tree.tree().root(),
        LedgerTree::of_rows(rows).unwrap().tree().root()
    );
    tree.check(&[tree.checkpoint("mem")]).unwrap();
    assert_eq!(tree.prove_call("call-4", None).unwrap().entries.len(), 2);
    // A record changed in memory breaks the chain before any tree is built.
    let mut altered = entries.clone();
    altered[2].at_ms += 1;
    assert!(matches!(
        LedgerTree::of_entries(&altered),
        Err(VerifyError::Tampered(Tamper { seq: 3, .. }))
    ));
}

#[test]
fn a_broken_chain_is_named_before_any_tree() {
    let mut all = rows(3);
    all[1].at_ms = all[1].at_ms.map(|t| t + 1);
    let e = LedgerTree::of_rows(all).unwrap_err();
    assert_eq!(e.seq, 2);
}

/// The worked example of `runtime/LEDGER.md` ("Proofs and checkpoints"), value for value.
#[test]
fn the_worked_example_of_ledger_md() {
    use crate::checkpoint::SignerKey;
    let bodies = [
        r#"{"event":"run_started","kind":"transition","run_id":"run-1","state":"read"}"#,
        r#"{"event":"step_started","kind":"transition","run_id":"run-1","state":"read"}"#,
        r#"{"event":"run_ended","kind":"transition","run_id":"run-1"}"#,
    ];
    let mut prev = GENESIS_PREV.to_string();
    let mut rows = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        let seq = i as u64 + 1;
        let at_ms = 1_700_000_000_000 + i as u64;
        let hash = entry_hash(seq, &prev, at_ms, body);
        rows.push(StoredRow {
            seq: seq as i64,
            prev: Some(prev.clone()),
            hash: Some(hash.clone()),
            at_ms: Some(at_ms as i64),
            body: Some(body.to_string()),
            call_id: Default::default(),
        });
        prev = hash;
    }
    let tree = LedgerTree::of_rows(rows).unwrap();
    let leaves: Vec<String> = (0..3)
        .map(|i| hex::encode(tree.tree().leaf(i).unwrap()))
        .collect();
    let key = SignerKey::from_seed("example.com/escepine/demo", [0x2a; 32]).unwrap();
    let note = tree
        .checkpoint("example.com/escepine/demo")
        .sign(&key)
        .unwrap();
    let path: Vec<String> = tree
        .tree()
        .inclusion_proof(1, 3)
        .unwrap()
        .iter()
        .map(b64)
        .collect();
    let consistency: Vec<String> = tree
        .tree()
        .consistency_proof(2, 3)
        .unwrap()
        .iter()
        .map(b64)
        .collect();
    let printed = format!(
        "leaves {leaves:?}\nroot2 {}\nroot3 {}\nsigner {}\nverifier {}\nnote\n{note}path {path:?}\nconsistency {consistency:?}\n",
        b64(&tree.tree().root_at(2).unwrap()),
        b64(&tree.tree().root()),
        key.to_text(),
        key.verifier()
    );
    assert_eq!(printed, EXAMPLE);
}

const EXAMPLE: &str = r#"leaves ["874e14714eb65f1d82ff2fd58a2ff01e4a19117ab8d2d02649ceed28dd73794a", "798f60c34bb33a8df4fc5cf5f721ccc029d0a25f5f15eb9eba4cc4e40de8be23", "b73e6627b69ea55186215acd272b373152bdae73755ff54d843c4f34f5bf79aa"]
root2 LI759LTyNDragRN4+VTwJoi7Hgp7ld0Y5d0GAcya5Pc=
root3 jDbZYpcvhOge5v2ZVY1BXV+x+dujKATORdlP9xs5SB0=
signer PRIVATE+KEY+example.com/escepine/demo+8d261a7a+ASoqKioqKioqKioqKioqKioqKioqKioqKioqKioqKioq
verifier example.com/escepine/demo+8d261a7a+ARl/ayPhbIUyxqvIOPrNXqeJvgx2spIDNAOb+os9No1h
note
example.com/escepine/demo
3
jDbZYpcvhOge5v2ZVY1BXV+x+dujKATORdlP9xs5SB0=

— example.com/escepine/demo jSYaet+BZ1bgWsKsNOTYFJQ27QUbGzBR8YY2CDg2eLfGs7G0DScAwkybRKor4DM4n80BKvFKvTze3uSrc/Ey13GGPwE=
path ["h04UcU62Xx2C/y/Vii/wHkoZEXq40tAmSc7tKN1zeUo=", "tz5mJ7aepVGGIVrNJys3MVK9rnN1X/VNhDxPNPW/eao="]
consistency ["tz5mJ7aepVGGIVrNJys3MVK9rnN1X/VNhDxPNPW/eao="]
"#;
