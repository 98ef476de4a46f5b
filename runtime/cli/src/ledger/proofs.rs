//! `escepine ledger keygen`, `checkpoint`, `prove`, and the checkpoints of `ledger verify`.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use escepine_ledger::checkpoint::{self, Checkpoint, CheckpointError, SignerKey, VerifierKey};
use escepine_ledger::location::LedgerLocation;
use escepine_ledger::proof::{CheckpointReport, LedgerTree};
use escepine_ledger::verify::{VerifyError, VerifyReport};

use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

use crate::exit::LEDGER_UNREADABLE as UNREADABLE;

/// The files `keygen` writes into its directory.
const SIGNER_FILE: &str = "signer.key";
const VERIFIER_FILE: &str = "verifier.pub";

fn read(path: &Path, what: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| {
        CliError::new(
            UNREADABLE,
            format!("{}: cannot read the {what}: {e}", path.display()),
        )
    })
}

fn bad_file(path: &Path, e: impl std::fmt::Display) -> CliError {
    CliError::new(UNREADABLE, format!("{}: {e}", path.display()))
}

/// The ledger's tree, once its chain verifies; a broken chain is `tampered: …` on stdout.
fn tree(path: &LedgerLocation, io: &mut Io<'_>) -> Result<LedgerTree, CliError> {
    LedgerTree::of_location(path).map_err(|e| match e {
        VerifyError::Tampered(t) => {
            let _ = writeln!(io.out, "tampered: {t}");
            CliError::code(exit::INVALID)
        }
        VerifyError::Unreadable(e) => CliError::new(UNREADABLE, e),
    })
}

/// `escepine ledger keygen --name NAME --out DIR`: a new Ed25519 key; DIR holds exactly
/// `signer.key` (mode 0600) and `verifier.pub`. Prints the verifier key.
pub(super) fn keygen(name: &str, out: &Path, io: &mut Io<'_>) -> CliResult {
    let key = SignerKey::generate(name).map_err(|e| CliError::new(exit::INVALID, e))?;
    if let Ok(mut entries) = std::fs::read_dir(out) {
        if entries.next().is_some() {
            return Err(CliError::new(
                exit::INVALID,
                format!("{}: the directory is not empty: keygen writes only into a new or empty directory", out.display()),
            ));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| {
        CliError::new(
            exit::INVALID,
            format!("{}: cannot create: {e}", out.display()),
        )
    })?;
    let verifier = key.verifier().to_string();
    write_new(&out.join(SIGNER_FILE), &key.to_text(), 0o600)?;
    write_new(&out.join(VERIFIER_FILE), &verifier, 0o644)?;
    let _ = writeln!(io.out, "{verifier}");
    Ok(())
}

fn write_new(path: &Path, text: &str, mode: u32) -> CliResult {
    let failed = |e: std::io::Error| {
        CliError::new(
            exit::INVALID,
            format!("{}: cannot write: {e}", path.display()),
        )
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(failed)?;
    file.write_all(format!("{text}\n").as_bytes())
        .map_err(failed)?;
    file.sync_all().map_err(failed)
}

/// `escepine ledger checkpoint LEDGER --key FILE`: the signed checkpoint of the verified chain,
/// on stdout only.
pub(super) fn checkpoint(path: &LedgerLocation, key_file: &Path, io: &mut Io<'_>) -> CliResult {
    let key =
        SignerKey::parse(&read(key_file, "signer key")?).map_err(|e| bad_file(key_file, e))?;
    let tree = LedgerTree::of_location(path).map_err(|e| match e {
        VerifyError::Tampered(t) => CliError::new(
            exit::INVALID,
            format!("{path}: tampered: {t}: no checkpoint is signed for a broken chain"),
        ),
        VerifyError::Unreadable(e) => CliError::new(UNREADABLE, e),
    })?;
    let note = tree
        .checkpoint(key.verifier().name())
        .sign(&key)
        .map_err(|e| CliError::new(exit::INVALID, e))?;
    let _ = io.out.write_all(note.as_bytes());
    Ok(())
}

/// `escepine ledger prove LEDGER CALL_ID [--size N]`: the inclusion proofs of the call's
/// entries, as JSON.
pub(super) fn prove(
    path: &LedgerLocation,
    call_id: &str,
    size: Option<u64>,
    io: &mut Io<'_>,
) -> CliResult {
    let tree = tree(path, io)?;
    let proof = tree
        .prove_call(call_id, size)
        .map_err(|e| CliError::new(exit::INVALID, format!("{path}: {e}")))?;
    print_json(&proof, io)
}

/// `escepine ledger prove LEDGER --consistency OLD [--size N]`: the consistency proof of the
/// tree of the first OLD entries with the tree of N (default: all), as JSON.
pub(super) fn prove_consistency(
    path: &LedgerLocation,
    old: u64,
    size: Option<u64>,
    io: &mut Io<'_>,
) -> CliResult {
    let tree = tree(path, io)?;
    let proof = tree
        .prove_consistency(old, size)
        .map_err(|e| CliError::new(exit::INVALID, format!("{path}: {e}")))?;
    print_json(&proof, io)
}

/// Print a proof as pretty JSON on stdout.
fn print_json(proof: &impl serde::Serialize, io: &mut Io<'_>) -> CliResult {
    let json = serde_json::to_string_pretty(proof)
        .map_err(|e| CliError::new(exit::INVALID, format!("cannot encode the proof: {e}")))?;
    let _ = writeln!(io.out, "{json}");
    Ok(())
}

/// The checkpoints of `ledger verify`, opened with the public key.
pub(super) struct Checkpoints {
    key: VerifierKey,
    opened: Vec<(PathBuf, Checkpoint)>,
}

impl Checkpoints {
    /// Read the key and open each checkpoint (at most two) with it.
    ///
    /// # Errors
    /// Exit 2 for an unreadable or malformed file; exit 1 (`tampered: …` on stdout) for a
    /// checkpoint whose signature does not verify.
    pub(super) fn open(
        files: &[PathBuf],
        key_file: &Path,
        io: &mut Io<'_>,
    ) -> Result<Self, CliError> {
        if files.len() > 2 {
            return Err(CliError::new(
                exit::USAGE,
                "--checkpoint is given once (the chain against it) or twice (OLD and NEW, proven consistent)",
            ));
        }
        let key = VerifierKey::parse(&read(key_file, "public key")?)
            .map_err(|e| bad_file(key_file, e))?;
        let mut opened = Vec::new();
        for file in files {
            match checkpoint::open(&read(file, "checkpoint")?, &key) {
                Ok(c) => opened.push((file.clone(), c)),
                Err(
                    e @ (CheckpointError::BadSignature(_)
                    | CheckpointError::Unsigned(_)
                    | CheckpointError::WrongOrigin { .. }),
                ) => {
                    let _ = writeln!(io.out, "tampered: checkpoint {}: {e}", file.display());
                    return Err(CliError::code(exit::INVALID));
                }
                Err(e) => return Err(bad_file(file, e)),
            }
        }
        Ok(Self { key, opened })
    }

    /// Check the chain at `path` against the checkpoints; the lines to print after `intact: …`.
    ///
    /// # Errors
    /// Exit 1 with `tampered: …` on stdout when the chain or the checkpoints do not hold.
    pub(super) fn check(
        &self,
        path: &LedgerLocation,
        chain: &VerifyReport,
        io: &mut Io<'_>,
    ) -> Result<Vec<String>, CliError> {
        let tree = tree(path, io)?;
        let checkpoints: Vec<Checkpoint> = self.opened.iter().map(|(_, c)| c.clone()).collect();
        let report = tree.check(&checkpoints).map_err(|t| {
            let _ = writeln!(io.out, "tampered: {t}");
            CliError::code(exit::INVALID)
        })?;
        Ok(self.lines(chain, &report))
    }

    fn lines(&self, chain: &VerifyReport, report: &CheckpointReport) -> Vec<String> {
        let signer = format!("{}+{}", self.key.name(), self.key.id_hex());
        let mut lines: Vec<String> = self
            .opened
            .iter()
            .map(|(file, c)| {
                format!(
                    "checkpoint {}: {} of {} entries, root {}, signed by {signer}",
                    file.display(),
                    c.size,
                    chain.entries,
                    escepine_ledger::merkle::b64(&c.root)
                )
            })
            .collect();
        if let Some((old, new, len)) = report.consistent {
            lines.push(format!(
                "consistent: the checkpoint of {new} entries extends the checkpoint of {old} (consistency proof of {len} hashes)"
            ));
        }
        lines
    }
}
