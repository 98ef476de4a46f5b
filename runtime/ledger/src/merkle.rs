//! The ledger as a Merkle tree, hashed as RFC 9162 §2.1 fixes it: inclusion and consistency
//! proofs, and their verification.
//!
//! A leaf is `SHA-256(0x00 ‖ data)`, a node `SHA-256(0x01 ‖ left ‖ right)`, the empty tree
//! `SHA-256("")`. A tree of `n > 1` leaves splits at `k`, the largest power of two smaller than
//! `n`: its left subtree holds the first `k` leaves, its right subtree the rest. The proofs are
//! the RFC's `PATH(m, D[n])` (§2.1.3.1) and `PROOF(m, D[n])` (§2.1.4.1); they are verified by the
//! algorithms of §2.1.3.2 and §2.1.4.2.
//!
//! [`MerkleTree`] keeps every perfect subtree's hash (about `2n` hashes), so the root of any
//! prefix and any proof cost `O(log² n)` hashes once the tree is built in `O(n)`.

use sha2::{Digest, Sha256};

/// A SHA-256 hash: a leaf, a node, or a root.
pub type Hash = [u8; 32];

/// The root of the empty tree: `SHA-256("")`.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The hash of a leaf whose data is `data`: `SHA-256(0x00 ‖ data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// The hash of a node over two subtrees: `SHA-256(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Why a proof could not be made or does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The leaf index is not below the tree size.
    #[error("leaf index {index} is outside a tree of {size} leaves")]
    IndexOutOfRange {
        /// The leaf index (0-based).
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// The sizes asked for are impossible (`old > new`, or larger than the tree).
    #[error("no proof between tree sizes {old} and {new} (the tree holds {size} leaves)")]
    SizeOutOfRange {
        /// The older size.
        old: u64,
        /// The newer size.
        new: u64,
        /// How many leaves the tree holds.
        size: u64,
    },
    /// The proof has the wrong number of hashes for its sizes.
    #[error("the proof holds {got} hashes where {expected} are expected")]
    WrongLength {
        /// How many it holds.
        got: usize,
        /// How many the sizes call for.
        expected: usize,
    },
    /// The proof leads to another root than the one given.
    #[error("the proof leads to root {computed}, not to {expected}")]
    RootMismatch {
        /// The root the proof computes (base64).
        computed: String,
        /// The root it was checked against (base64).
        expected: String,
    },
    /// A consistency proof leads to another old root than the one given.
    #[error("the proof leads to old root {computed}, not to {expected}")]
    OldRootMismatch {
        /// The old root the proof computes (base64).
        computed: String,
        /// The old root it was checked against (base64).
        expected: String,
    },
    /// A consistency proof between a size and itself must be empty, with equal roots.
    #[error("equal tree sizes must have equal roots and an empty proof")]
    SameSize,
}

/// A Merkle tree over leaf hashes, with every perfect subtree's hash kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MerkleTree {
    /// `levels[h][i]`: the hash of the perfect subtree of `2^h` leaves starting at `i · 2^h`.
    levels: Vec<Vec<Hash>>,
}

impl MerkleTree {
    /// The tree whose leaves (already hashed with [`leaf_hash`]) are `leaves`, in order.
    pub fn from_leaves(leaves: Vec<Hash>) -> Self {
        let mut levels = vec![leaves];
        while let Some(below) = levels.last().filter(|l| l.len() > 1) {
            let above: Vec<Hash> = below
                .chunks_exact(2)
                .map(|pair| node_hash(&pair[0], &pair[1]))
                .collect();
            levels.push(above);
        }
        Self { levels }
    }

    /// How many leaves it holds.
    pub fn size(&self) -> u64 {
        self.levels[0].len() as u64
    }

    /// The leaf hash at `index`.
    pub fn leaf(&self, index: u64) -> Option<&Hash> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.levels[0].get(i))
    }

    /// The root of the whole tree.
    pub fn root(&self) -> Hash {
        self.root_at(self.size()).unwrap_or_else(|_| empty_root())
    }

    /// The root of the tree of its first `size` leaves.
    ///
    /// # Errors
    /// [`ProofError::SizeOutOfRange`] when `size` exceeds the tree.
    pub fn root_at(&self, size: u64) -> Result<Hash, ProofError> {
        self.check_sizes(size, size)?;
        Ok(if size == 0 {
            empty_root()
        } else {
            self.subtree(0, size)
        })
    }

    /// The audit path of leaf `index` in the tree of the first `size` leaves: `PATH(index,
    /// D[size])`, from the leaf's sibling up to the root's child.
    ///
    /// # Errors
    /// [`ProofError::IndexOutOfRange`] or [`ProofError::SizeOutOfRange`].
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, ProofError> {
        self.check_sizes(size, size)?;
        if index >= size {
            return Err(ProofError::IndexOutOfRange { index, size });
        }
        let mut path = Vec::new();
        self.path(index, 0, size, &mut path);
        Ok(path)
    }

    /// The consistency proof of the tree of the first `old` leaves with that of the first `new`:
    /// `PROOF(old, D[new])`.
    ///
    /// # Errors
    /// [`ProofError::SizeOutOfRange`] unless `old ≤ new ≤ size`.
    pub fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>, ProofError> {
        self.check_sizes(old, new)?;
        let mut proof = Vec::new();
        if old > 0 && old < new {
            self.subproof(old, 0, new, true, &mut proof);
        }
        Ok(proof)
    }

    fn check_sizes(&self, old: u64, new: u64) -> Result<(), ProofError> {
        if old > new || new > self.size() {
            return Err(ProofError::SizeOutOfRange {
                old,
                new,
                size: self.size(),
            });
        }
        Ok(())
    }

    /// `MTH(D[start : start + n])`, `n ≥ 1`. Every range the recursion of the RFC visits starts
    /// at a multiple of the smallest power of two not below its length, so a range whose length
    /// is a power of two is one of the kept perfect subtrees.
    fn subtree(&self, start: u64, n: u64) -> Hash {
        if n.is_power_of_two() {
            let h = n.trailing_zeros() as usize;
            return self.levels[h][(start >> h) as usize];
        }
        let k = split(n);
        node_hash(&self.subtree(start, k), &self.subtree(start + k, n - k))
    }

    /// `PATH(m, D[start : start + n])`, appended bottom-up.
    fn path(&self, m: u64, start: u64, n: u64, out: &mut Vec<Hash>) {
        if n <= 1 {
            return;
        }
        let k = split(n);
        if m < k {
            self.path(m, start, k, out);
            out.push(self.subtree(start + k, n - k));
        } else {
            self.path(m - k, start + k, n - k, out);
            out.push(self.subtree(start, k));
        }
    }

    /// `SUBPROOF(m, D[start : start + n], b)`, appended bottom-up.
    fn subproof(&self, m: u64, start: u64, n: u64, whole: bool, out: &mut Vec<Hash>) {
        if m == n {
            if !whole {
                out.push(self.subtree(start, n));
            }
            return;
        }
        let k = split(n);
        if m <= k {
            self.subproof(m, start, k, whole, out);
            out.push(self.subtree(start + k, n - k));
        } else {
            self.subproof(m - k, start + k, n - k, false, out);
            out.push(self.subtree(start, k));
        }
    }
}

/// The largest power of two smaller than `n` (`n ≥ 2`).
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// Verify that `leaf` is leaf `index` of a tree of `size` leaves whose root is `root`, given its
/// audit path (RFC 9162 §2.1.3.2).
///
/// # Errors
/// Why it does not verify.
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    path: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    let mut f_n = index;
    let mut s_n = size - 1;
    let mut r = *leaf;
    for p in path {
        if s_n == 0 {
            return Err(ProofError::WrongLength {
                got: path.len(),
                expected: inclusion_len(index, size),
            });
        }
        if f_n & 1 == 1 || f_n == s_n {
            r = node_hash(p, &r);
            while f_n & 1 == 0 && f_n != 0 {
                f_n >>= 1;
                s_n >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    if s_n != 0 {
        return Err(ProofError::WrongLength {
            got: path.len(),
            expected: inclusion_len(index, size),
        });
    }
    same_root(&r, root, false)
}

/// How many hashes the audit path of leaf `index` in a tree of `size` leaves holds.
fn inclusion_len(index: u64, size: u64) -> usize {
    let (mut f, mut s, mut n) = (index, size - 1, 0);
    while s != 0 {
        if f & 1 == 1 || f == s {
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        }
        f >>= 1;
        s >>= 1;
        n += 1;
    }
    n
}

/// Verify that the tree of `old` leaves with root `old_root` is a prefix of the tree of `new`
/// leaves with root `new_root`, given the consistency proof (RFC 9162 §2.1.4.2).
///
/// # Errors
/// Why it does not verify.
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if old > new {
        return Err(ProofError::SizeOutOfRange {
            old,
            new,
            size: new,
        });
    }
    if old == new {
        return if proof.is_empty() && old_root == new_root {
            Ok(())
        } else {
            Err(ProofError::SameSize)
        };
    }
    if old == 0 {
        // The empty tree is a prefix of every tree; its proof is empty.
        return if proof.is_empty() {
            Ok(())
        } else {
            Err(ProofError::WrongLength {
                got: proof.len(),
                expected: 0,
            })
        };
    }
    let wrong_length = || ProofError::WrongLength {
        got: proof.len(),
        expected: consistency_len(old, new),
    };
    // When `old` is a power of two, the old root itself starts the walk.
    let owned;
    let path: &[Hash] = if old.is_power_of_two() {
        owned = std::iter::once(*old_root)
            .chain(proof.iter().copied())
            .collect::<Vec<_>>();
        &owned
    } else {
        proof
    };
    let (first, rest) = path.split_first().ok_or_else(wrong_length)?;
    let mut f_n = old - 1;
    let mut s_n = new - 1;
    while f_n & 1 == 1 {
        f_n >>= 1;
        s_n >>= 1;
    }
    let mut f_r = *first;
    let mut s_r = *first;
    for c in rest {
        if s_n == 0 {
            return Err(wrong_length());
        }
        if f_n & 1 == 1 || f_n == s_n {
            f_r = node_hash(c, &f_r);
            s_r = node_hash(c, &s_r);
            while f_n & 1 == 0 && f_n != 0 {
                f_n >>= 1;
                s_n >>= 1;
            }
        } else {
            s_r = node_hash(&s_r, c);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    if s_n != 0 {
        return Err(wrong_length());
    }
    same_root(&f_r, old_root, true)?;
    same_root(&s_r, new_root, false)
}

/// How many hashes the consistency proof between sizes `old < new` holds (`old ≥ 1`): the walk
/// of [`verify_consistency`], counted.
fn consistency_len(old: u64, new: u64) -> usize {
    let (mut f, mut s) = (old - 1, new - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let mut n = usize::from(!old.is_power_of_two());
    while s != 0 {
        if f & 1 == 1 || f == s {
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        }
        f >>= 1;
        s >>= 1;
        n += 1;
    }
    n
}

fn same_root(computed: &Hash, expected: &Hash, old: bool) -> Result<(), ProofError> {
    if computed == expected {
        return Ok(());
    }
    let (computed, expected) = (b64(computed), b64(expected));
    Err(if old {
        ProofError::OldRootMismatch { computed, expected }
    } else {
        ProofError::RootMismatch { computed, expected }
    })
}

/// A hash in standard base64 (with padding), as checkpoints and proofs write it.
pub fn b64(hash: &Hash) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(hash)
}

/// A hash read from standard base64.
///
/// # Errors
/// A description of why `text` is not the base64 of 32 bytes.
pub fn hash_from_b64(text: &str) -> Result<Hash, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("`{text}` is not base64: {e}"))?;
    Hash::try_from(bytes.as_slice())
        .map_err(|_| format!("`{text}` is {} bytes, not a 32-byte hash", bytes.len()))
}

#[cfg(test)]
mod tests;
