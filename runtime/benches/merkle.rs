//! Checkpoint and proof costs at 10⁵ entries: the SQLite ledger read, its chain verified and its
//! Merkle tree built and signed (`ledger checkpoint`), and in memory the tree alone, an
//! inclusion proof of one call (`ledger prove`), a consistency proof, and their verification.
//!
//! `cargo bench -p escepine-runtime --bench merkle`

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use escepine_ledger::checkpoint::SignerKey;
use escepine_ledger::merkle::{verify_consistency, verify_inclusion, MerkleTree};
use escepine_ledger::proof::LedgerTree;
use escepine_ledger::sqlite::{read_rows, SqliteLedger};
use escepine_ledger::store::{Durability, Ledger};
use escepine_testkit::ledger as ledger_support;

/// Entries in the ledger: 5·10⁴ calls, intent and outcome each.
const ENTRIES: u64 = 100_000;

/// A SQLite ledger of [`ENTRIES`] entries, appended through the ledger's group commit.
fn ledger(path: &std::path::Path) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let ledger = SqliteLedger::open(path, Durability::Normal).expect("open");
        for chunk in 0..ENTRIES / 2 / 1000 {
            let appends = (0..1000).flat_map(|i| {
                let n = (chunk * 1000 + i + 1) as usize;
                [
                    ledger.append(ledger_support::intent(n, Some("run-1"))),
                    ledger.append(ledger_support::outcome(n)),
                ]
            });
            for r in futures::future::join_all(appends).await {
                r.expect("append");
            }
        }
    });
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    ledger(&path);
    let key = SignerKey::generate("example.com/escepine/bench").expect("key");
    let rows = read_rows(&path).expect("rows");
    assert_eq!(rows.len() as u64, ENTRIES);
    let tree = LedgerTree::of_rows(rows.clone()).expect("an intact chain");
    let leaves: Vec<_> = (0..ENTRIES)
        .map(|i| *tree.tree().leaf(i).expect("leaf"))
        .collect();
    let root = tree.tree().root();

    let mut group = c.benchmark_group("merkle_1e5");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));

    group.bench_function("checkpoint_sqlite", |b| {
        b.iter(|| {
            let tree = LedgerTree::of_path(&path).expect("tree");
            tree.checkpoint("example.com/escepine/bench")
                .sign(&key)
                .expect("sign")
        })
    });
    group.bench_function("chain_and_tree_from_rows", |b| {
        b.iter(|| LedgerTree::of_rows(rows.clone()).expect("tree"))
    });
    group.bench_function("tree_from_leaf_hashes", |b| {
        b.iter(|| MerkleTree::from_leaves(leaves.clone()).root())
    });
    group.bench_function("sign_checkpoint", |b| {
        b.iter(|| {
            tree.checkpoint("example.com/escepine/bench")
                .sign(&key)
                .expect("sign")
        })
    });
    group.bench_function("prove_call", |b| {
        b.iter(|| tree.prove_call("call-37500", None).expect("proof"))
    });
    group.bench_function("inclusion_proof", |b| {
        b.iter(|| tree.tree().inclusion_proof(74_999, ENTRIES).expect("proof"))
    });
    let path_74999 = tree.tree().inclusion_proof(74_999, ENTRIES).expect("proof");
    group.bench_function("verify_inclusion", |b| {
        b.iter(|| {
            verify_inclusion(&leaves[74_999], 74_999, ENTRIES, &path_74999, &root).expect("ok")
        })
    });
    let old = 60_001;
    let old_root = tree.tree().root_at(old).expect("root");
    group.bench_function("consistency_proof", |b| {
        b.iter(|| tree.tree().consistency_proof(old, ENTRIES).expect("proof"))
    });
    let proof = tree.tree().consistency_proof(old, ENTRIES).expect("proof");
    group.bench_function("verify_consistency", |b| {
        b.iter(|| verify_consistency(old, ENTRIES, &old_root, &root, &proof).expect("ok"))
    });
    group.finish();
    eprintln!(
        "ledger file {} bytes; inclusion path {} hashes; consistency proof {old} → {ENTRIES}: {} hashes",
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
        path_74999.len(),
        proof.len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
