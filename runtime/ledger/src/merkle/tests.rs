//! The tree against the RFC's definitions (written out naively below) and against a second
//! implementation (`ct-merkle`), for every size 1 ..= 64: roots, every leaf's audit path, every
//! pair's consistency proof; and altered leaves, roots and proofs rejected.

use super::*;

type CtTree = ct_merkle::mem_backed_tree::MemoryBackedTree<sha2_011::Sha256, Vec<u8>>;

fn data(i: u64) -> Vec<u8> {
    format!("leaf {i}").into_bytes()
}

fn leaves(n: u64) -> Vec<Hash> {
    (0..n).map(|i| leaf_hash(&data(i))).collect()
}

/// `MTH(D[n])` exactly as RFC 9162 §2.1.1 defines it.
fn mth(d: &[Hash]) -> Hash {
    match d.len() {
        0 => empty_root(),
        1 => d[0],
        n => {
            let k = split(n as u64) as usize;
            node_hash(&mth(&d[..k]), &mth(&d[k..]))
        }
    }
}

/// `PATH(m, D[n])` of §2.1.3.1.
fn rfc_path(m: usize, d: &[Hash]) -> Vec<Hash> {
    if d.len() <= 1 {
        return Vec::new();
    }
    let k = split(d.len() as u64) as usize;
    if m < k {
        let mut p = rfc_path(m, &d[..k]);
        p.push(mth(&d[k..]));
        p
    } else {
        let mut p = rfc_path(m - k, &d[k..]);
        p.push(mth(&d[..k]));
        p
    }
}

/// `SUBPROOF(m, D[n], b)` of §2.1.4.1.
fn rfc_subproof(m: usize, d: &[Hash], b: bool) -> Vec<Hash> {
    let n = d.len();
    if m == n {
        return if b { Vec::new() } else { vec![mth(d)] };
    }
    let k = split(n as u64) as usize;
    if m <= k {
        let mut p = rfc_subproof(m, &d[..k], b);
        p.push(mth(&d[k..]));
        p
    } else {
        let mut p = rfc_subproof(m - k, &d[k..], false);
        p.push(mth(&d[..k]));
        p
    }
}

fn ct_tree(n: u64) -> CtTree {
    let mut t = CtTree::new();
    for i in 0..n {
        t.push(data(i));
    }
    t
}

fn flip(h: &Hash) -> Hash {
    let mut h = *h;
    h[7] ^= 0x20;
    h
}

#[test]
fn hashing_is_the_rfcs() {
    assert_eq!(
        hex::encode(empty_root()),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    // SHA-256(0x00) and SHA-256(0x01 ‖ 0x00^32 ‖ 0x00^32), computed independently.
    assert_eq!(
        hex::encode(leaf_hash(b"")),
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    );
    let mut pair = vec![0x01u8];
    pair.extend_from_slice(&[0u8; 64]);
    assert_eq!(
        node_hash(&[0; 32], &[0; 32]),
        <[u8; 32]>::from(Sha256::digest(&pair))
    );
    assert_eq!(MerkleTree::from_leaves(Vec::new()).root(), empty_root());
}

#[test]
fn roots_match_the_rfc_and_a_second_implementation_for_every_size_to_64() {
    for n in 1..=64u64 {
        let l = leaves(n);
        let tree = MerkleTree::from_leaves(l.clone());
        assert_eq!(tree.root(), mth(&l), "size {n}");
        let ct = ct_tree(n);
        assert_eq!(
            tree.root().as_slice(),
            ct.root().as_bytes().as_slice(),
            "size {n}"
        );
        for m in 0..=n {
            assert_eq!(
                tree.root_at(m).unwrap(),
                mth(&l[..m as usize]),
                "size {m} of {n}"
            );
        }
    }
}

#[test]
fn every_inclusion_proof_verifies_for_every_size_to_64_and_a_changed_leaf_fails() {
    for n in 1..=64u64 {
        let l = leaves(n);
        let tree = MerkleTree::from_leaves(l.clone());
        let root = tree.root();
        let ct = ct_tree(n);
        let ct_root = ct.root();
        for i in 0..n {
            let path = tree.inclusion_proof(i, n).unwrap();
            assert_eq!(path, rfc_path(i as usize, &l), "leaf {i} of {n}");
            assert_eq!(path.len(), inclusion_len(i, n));
            verify_inclusion(&l[i as usize], i, n, &path, &root).unwrap();
            // The second implementation accepts our path, and its own is ours.
            let ours = ct_merkle::InclusionProof::<sha2_011::Sha256>::from_bytes(path.concat());
            ct_root.verify_inclusion(&data(i), i, &ours).unwrap();
            assert_eq!(
                ct.prove_inclusion(i as usize).as_bytes(),
                path.concat().as_slice()
            );
            // A changed leaf, index, root or path fails.
            let changed = leaf_hash(b"changed");
            assert!(verify_inclusion(&changed, i, n, &path, &root).is_err());
            assert!(verify_inclusion(&l[i as usize], i, n, &path, &flip(&root)).is_err());
            if n > 1 {
                let other = (i + 1) % n;
                assert!(verify_inclusion(&l[i as usize], other, n, &path, &root).is_err());
                let mut bad = path.clone();
                bad[0] = flip(&bad[0]);
                assert!(verify_inclusion(&l[i as usize], i, n, &bad, &root).is_err());
                let short = &path[..path.len() - 1];
                assert!(matches!(
                    verify_inclusion(&l[i as usize], i, n, short, &root),
                    Err(ProofError::WrongLength { .. })
                ));
            }
            let mut long = path.clone();
            long.push(root);
            assert!(verify_inclusion(&l[i as usize], i, n, &long, &root).is_err());
        }
        assert!(tree.inclusion_proof(n, n).is_err());
    }
}

#[test]
fn every_consistency_proof_verifies_for_every_pair_to_64_and_a_changed_history_fails() {
    for new in 1..=64u64 {
        let l = leaves(new);
        let tree = MerkleTree::from_leaves(l.clone());
        let new_root = tree.root();
        let ct = ct_tree(new);
        for old in 0..=new {
            let proof = tree.consistency_proof(old, new).unwrap();
            let old_root = tree.root_at(old).unwrap();
            if old > 0 && old < new {
                assert_eq!(proof, rfc_subproof(old as usize, &l, true), "{old} → {new}");
                assert_eq!(proof.len(), consistency_len(old, new));
                let theirs = ct.prove_consistency((new - old) as usize);
                assert_eq!(
                    theirs.as_bytes(),
                    proof.concat().as_slice(),
                    "{old} → {new}"
                );
            } else {
                assert!(proof.is_empty());
            }
            verify_consistency(old, new, &old_root, &new_root, &proof)
                .unwrap_or_else(|e| panic!("{old} → {new}: {e}"));
            if old == 0 {
                continue;
            }
            // A rewritten history: the old tree's first leaf changed.
            let mut rewritten = l[..old as usize].to_vec();
            rewritten[0] = leaf_hash(b"rewritten");
            let forged_old = mth(&rewritten);
            assert!(verify_consistency(old, new, &forged_old, &new_root, &proof).is_err());
            assert!(verify_consistency(old, new, &old_root, &flip(&new_root), &proof).is_err());
            if let Some(first) = proof.first() {
                let mut bad = proof.clone();
                bad[0] = flip(first);
                assert!(verify_consistency(old, new, &old_root, &new_root, &bad).is_err());
                assert!(verify_consistency(old, new, &old_root, &new_root, &proof[1..]).is_err());
            }
            if old < new {
                // The new tree's leaves after `old` changed: still consistent, another root.
                let mut grown = l.clone();
                grown[new as usize - 1] = leaf_hash(b"other");
                let other = MerkleTree::from_leaves(grown);
                let p = other.consistency_proof(old, new).unwrap();
                verify_consistency(old, new, &old_root, &other.root(), &p).unwrap();
                assert!(verify_consistency(old, new, &old_root, &new_root, &p).is_err());
            }
        }
        assert!(tree.consistency_proof(new, new + 1).is_err());
    }
}

#[test]
fn proofs_at_a_large_size_verify() {
    let n = 100_003u64;
    let l = leaves(n);
    let tree = MerkleTree::from_leaves(l.clone());
    let root = tree.root();
    for i in [0, 1, 65_535, 65_536, 99_999, n - 1] {
        let path = tree.inclusion_proof(i, n).unwrap();
        verify_inclusion(&l[i as usize], i, n, &path, &root).unwrap();
    }
    for old in [1, 2, 3, 65_536, 70_001, n - 1] {
        let proof = tree.consistency_proof(old, n).unwrap();
        verify_consistency(old, n, &tree.root_at(old).unwrap(), &root, &proof).unwrap();
    }
}

#[test]
fn base64_round_trips_and_names_bad_input() {
    let h = leaf_hash(b"x");
    assert_eq!(hash_from_b64(&b64(&h)).unwrap(), h);
    assert!(hash_from_b64("not base64!")
        .unwrap_err()
        .contains("not base64"));
    assert!(hash_from_b64("AAAA").unwrap_err().contains("3 bytes"));
}
