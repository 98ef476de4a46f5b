//! Whether the ledger can be trusted, as every page says: the whole chain recomputed and the
//! latest signed checkpoint matched against it, by the console's server, on a schedule
//! ([`Integrity::check`]); and a call's inclusion proof verified against that checkpoint
//! ([`prove`]).
//!
//! The checkpoint files are read again at every check, so a checkpoint signed later into the
//! same file is picked up; each is opened with the verifier key, and the one of the largest
//! tree is "the latest".

use std::path::PathBuf;
use std::sync::Arc;

use escepine_ledger::checkpoint::{self, Checkpoint, VerifierKey};
use escepine_ledger::entry::now_ms;
use escepine_ledger::location::LedgerLocation;
use escepine_ledger::merkle::{self, b64, hash_from_b64};
use escepine_ledger::proof::{CallProof, LedgerTree};
use escepine_ledger::verify::VerifyError;

/// How the chain stood at the last check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chain {
    /// Not checked yet.
    Unchecked,
    /// Every entry recomputes and links.
    Intact {
        /// How many entries.
        entries: u64,
        /// The last entry's hash.
        head: String,
    },
    /// An entry was changed, removed, inserted or reordered: the finding.
    Tampered(String),
    /// The ledger could not be read.
    Unreadable(String),
}

/// The latest checkpoint, and whether the chain holds what it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointView {
    /// Its origin (the key's name).
    pub origin: String,
    /// The verifier key's name and id.
    pub key: String,
    /// Its tree size.
    pub size: u64,
    /// Its root, base64.
    pub root: String,
    /// `None` when the chain holds the entries it covers, unchanged; else the finding.
    pub tamper: Option<String>,
    /// The checkpoint itself.
    pub checkpoint: Checkpoint,
}

/// The result of one check.
#[derive(Debug, Clone)]
pub struct Status {
    /// When it was made, Unix milliseconds (0: never).
    pub checked_at_ms: u64,
    /// The chain.
    pub chain: Chain,
    /// The latest checkpoint, when checkpoints are configured and one opened.
    pub checkpoint: Option<CheckpointView>,
    /// Checkpoint files that could not be read or opened, each `file: why`.
    pub checkpoint_problems: Vec<String>,
    /// The verified chain's Merkle tree (proofs are made from it).
    pub tree: Option<Arc<LedgerTree>>,
}

impl Status {
    /// Nothing checked yet.
    pub fn unchecked() -> Self {
        Self {
            checked_at_ms: 0,
            chain: Chain::Unchecked,
            checkpoint: None,
            checkpoint_problems: Vec::new(),
            tree: None,
        }
    }

    /// Whether anything was found wrong (a tampered chain, or a checkpoint it does not hold).
    pub fn tampered(&self) -> bool {
        matches!(self.chain, Chain::Tampered(_))
            || self.checkpoint.as_ref().is_some_and(|c| c.tamper.is_some())
    }
}

/// What is checked: the ledger, and the checkpoints with their key.
#[derive(Debug, Clone)]
pub struct Integrity {
    location: LedgerLocation,
    checkpoints: Vec<PathBuf>,
    key: Option<VerifierKey>,
}

impl Integrity {
    /// Checks of the ledger at `location` against the checkpoint files `checkpoints`, signed
    /// with `key` (none: the chain alone).
    pub fn new(
        location: LedgerLocation,
        checkpoints: Vec<PathBuf>,
        key: Option<VerifierKey>,
    ) -> Self {
        Self {
            location,
            checkpoints,
            key,
        }
    }

    /// Recompute the chain and match the latest checkpoint (blocking: it reads every entry).
    pub fn check(&self) -> Status {
        let mut status = Status::unchecked();
        status.checked_at_ms = now_ms();
        let tree = match LedgerTree::of_location(&self.location) {
            Ok(tree) => tree,
            Err(VerifyError::Tampered(t)) => {
                status.chain = Chain::Tampered(t.to_string());
                return status;
            }
            Err(VerifyError::Unreadable(e)) => {
                status.chain = Chain::Unreadable(e.to_string());
                return status;
            }
        };
        status.chain = Chain::Intact {
            entries: tree.report().entries,
            head: tree.report().head.clone(),
        };
        if let Some(key) = &self.key {
            let (latest, problems) = self.latest(key);
            status.checkpoint_problems = problems;
            status.checkpoint = latest.map(|checkpoint| CheckpointView {
                origin: checkpoint.origin.clone(),
                key: format!("{} ({})", key.name(), key.id_hex()),
                size: checkpoint.size,
                root: b64(&checkpoint.root),
                tamper: tree
                    .check(std::slice::from_ref(&checkpoint))
                    .err()
                    .map(|t| t.to_string()),
                checkpoint,
            });
        }
        status.tree = Some(Arc::new(tree));
        status
    }

    /// The checkpoint of the largest tree among the files, and the files that did not open.
    fn latest(&self, key: &VerifierKey) -> (Option<Checkpoint>, Vec<String>) {
        let mut problems = Vec::new();
        let mut latest: Option<Checkpoint> = None;
        for file in &self.checkpoints {
            let opened = std::fs::read_to_string(file)
                .map_err(|e| e.to_string())
                .and_then(|text| checkpoint::open(&text, key).map_err(|e| e.to_string()));
            match opened {
                Ok(c) if latest.as_ref().is_none_or(|l| c.size > l.size) => latest = Some(c),
                Ok(_) => {}
                Err(e) => problems.push(format!("{}: {e}", file.display())),
            }
        }
        (latest, problems)
    }
}

/// A call's inclusion proof, as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProofView {
    /// No verified tree (the chain is tampered or unreadable, or not checked yet).
    NoTree,
    /// No checkpoint is configured or opened: the proof is against the verified chain's own
    /// root, which nobody signed.
    Unsigned(CallProof),
    /// The checkpoint does not cover the call yet (it is newer than the checkpoint).
    NotCovered {
        /// The checkpoint's size.
        size: u64,
    },
    /// Every entry of the call the checkpoint covers verified against its signed root.
    Verified {
        /// The proof.
        proof: CallProof,
        /// The checkpoint's key, named.
        key: String,
        /// The call's entries recorded after the checkpoint (not covered yet).
        pending: Vec<u64>,
    },
    /// A proof that does not verify against the checkpoint: why.
    Failed(String),
}

/// Prove call `call_id` (whose entries are at `seqs`) from `status`'s tree against its latest
/// checkpoint, and verify the proof as an outside verifier would (the leaf hashed from its
/// input, the audit path folded up to the checkpoint's signed root).
pub fn prove(status: &Status, call_id: &str, seqs: &[u64]) -> ProofView {
    let Some(tree) = &status.tree else {
        return ProofView::NoTree;
    };
    let Some(cp) = &status.checkpoint else {
        return match tree.prove_call(call_id, None) {
            Ok(proof) => ProofView::Unsigned(proof),
            Err(e) => ProofView::Failed(e.to_string()),
        };
    };
    let proof = match tree.prove_call(call_id, Some(cp.size)) {
        Ok(proof) => proof,
        Err(escepine_ledger::proof::ProveError::UnknownCall { size, .. }) => {
            return ProofView::NotCovered { size }
        }
        Err(e) => return ProofView::Failed(e.to_string()),
    };
    match verify(&proof, &cp.checkpoint) {
        Ok(()) => ProofView::Verified {
            proof,
            key: cp.key.clone(),
            pending: seqs.iter().copied().filter(|&s| s > cp.size).collect(),
        },
        Err(why) => ProofView::Failed(why),
    }
}

/// Verify each entry's proof in `proof` against `checkpoint`'s size and root.
fn verify(proof: &CallProof, checkpoint: &Checkpoint) -> Result<(), String> {
    if proof.tree_size != checkpoint.size {
        return Err(format!(
            "the proof is for a tree of {} entries, the checkpoint's has {}",
            proof.tree_size, checkpoint.size
        ));
    }
    for e in &proof.entries {
        let leaf = merkle::leaf_hash(e.leaf_input.as_bytes());
        if b64(&leaf) != e.leaf_hash {
            return Err(format!(
                "entry #{}: its leaf hash is not its input's",
                e.seq
            ));
        }
        let path = e
            .audit_path
            .iter()
            .map(|h| hash_from_b64(h))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| format!("entry #{}: {why}", e.seq))?;
        merkle::verify_inclusion(
            &leaf,
            e.leaf_index,
            checkpoint.size,
            &path,
            &checkpoint.root,
        )
        .map_err(|why| format!("entry #{}: {why}", e.seq))?;
    }
    Ok(())
}
