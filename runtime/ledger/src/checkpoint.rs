//! Signed checkpoints of the ledger's Merkle tree: a C2SP `tlog-checkpoint` body (origin, tree
//! size, root) in a C2SP `signed-note`, signed with Ed25519.
//!
//! Keys are the notes' text forms: a verifier key `<name>+<key id>+<base64(0x01 ‖ public key)>`
//! and a signer key `PRIVATE+KEY+<name>+<key id>+<base64(0x01 ‖ seed)>`, where the key id is the
//! first four bytes of `SHA-256(<name> ‖ 0x0A ‖ 0x01 ‖ public key)` in eight lower-case hex
//! digits. A note is its text (ending in a newline), an empty line, and one signature line per
//! signer: `— <name> <base64(key id ‖ Ed25519 signature of the text)>`.
//!
//! The checkpoint's origin is the signing key's name, and [`open`] requires it to be the
//! verifier key's name.

use base64::Engine as _;
use ring::signature::{self, KeyPair as _};
use sha2::{Digest, Sha256};

use crate::merkle::{b64, hash_from_b64, Hash};

/// The algorithm byte of Ed25519 keys in signed notes.
const ED25519: u8 = 0x01;
/// What starts a signature line: an em dash and a space.
const SIGNATURE_PREFIX: &str = "\u{2014} ";
/// What starts a signer key.
const PRIVATE_PREFIX: &str = "PRIVATE+KEY+";

fn base64() -> &'static base64::engine::GeneralPurpose {
    &base64::engine::general_purpose::STANDARD
}

/// Why a key, a note or a checkpoint is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// A key's text is not of the form its kind requires.
    #[error("{what}: {why}")]
    BadKey {
        /// Which key (`signer key`, `verifier key`).
        what: &'static str,
        /// The rule broken.
        why: String,
    },
    /// A key name breaks the rules of signed notes.
    #[error("key name `{name}`: {why}")]
    BadName {
        /// The name.
        name: String,
        /// The rule broken.
        why: &'static str,
    },
    /// The note is not a signed note.
    #[error("not a signed note: {0}")]
    BadNote(String),
    /// The note's text is not a checkpoint body.
    #[error("not a checkpoint: {0}")]
    BadCheckpoint(String),
    /// No signature line of the note is by the verifier key.
    #[error("the note has no signature by {0}")]
    Unsigned(String),
    /// The verifier key's signature line does not verify: the note was altered or forged.
    #[error("the signature by {0} does not verify: the checkpoint was altered or not signed by that key")]
    BadSignature(String),
    /// The checkpoint names another log than the verifier key.
    #[error("the checkpoint's origin is `{origin}`, not the key's name `{name}`")]
    WrongOrigin {
        /// The origin line.
        origin: String,
        /// The key's name.
        name: String,
    },
    /// No randomness for a new key.
    #[error("cannot generate a key: {0}")]
    Random(String),
}

/// Check a key name: non-empty, no white space, no `+` (`/` and other characters are allowed).
///
/// # Errors
/// [`CheckpointError::BadName`] naming the rule.
pub fn check_name(name: &str) -> Result<(), CheckpointError> {
    let bad = |why| {
        Err(CheckpointError::BadName {
            name: name.to_string(),
            why,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.chars().any(char::is_whitespace) {
        return bad("it contains white space");
    }
    if name.contains('+') {
        return bad("it contains `+`");
    }
    if name.chars().any(char::is_control) {
        return bad("it contains a control character");
    }
    Ok(())
}

/// The key id of the Ed25519 key `public` named `name`.
fn key_id(name: &str, public: &[u8; 32]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', ED25519]);
    h.update(public);
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

/// The public half of a checkpoint key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    id: [u8; 4],
    public: [u8; 32],
}

impl VerifierKey {
    /// Read `<name>+<key id>+<base64(0x01 ‖ public key)>` (surrounding white space ignored).
    ///
    /// # Errors
    /// [`CheckpointError::BadKey`] or [`CheckpointError::BadName`] naming the rule.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let (name, id, key) = split_key("verifier key", text.trim())?;
        let public = key_bytes("verifier key", &key)?;
        let key = Self { name, id, public };
        if key_id(&key.name, &key.public) != key.id {
            return Err(CheckpointError::BadKey {
                what: "verifier key",
                why: format!(
                    "its key id {} is not the id of its name and key ({})",
                    hex::encode(key.id),
                    hex::encode(key_id(&key.name, &key.public))
                ),
            });
        }
        Ok(key)
    }

    /// The key's name (the origin of the checkpoints it verifies).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id, eight hex digits.
    pub fn id_hex(&self) -> String {
        hex::encode(self.id)
    }

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        signature::UnparsedPublicKey::new(&signature::ED25519, &self.public)
            .verify(message, signature)
            .is_ok()
    }
}

impl std::fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut key = vec![ED25519];
        key.extend_from_slice(&self.public);
        write!(
            f,
            "{}+{}+{}",
            self.name,
            hex::encode(self.id),
            base64().encode(key)
        )
    }
}

/// The private half of a checkpoint key.
pub struct SignerKey {
    verifier: VerifierKey,
    seed: [u8; 32],
    pair: signature::Ed25519KeyPair,
}

impl std::fmt::Debug for SignerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignerKey")
            .field("verifier", &self.verifier)
            .finish_non_exhaustive()
    }
}

impl SignerKey {
    /// A new key named `name`, from the system's randomness.
    ///
    /// # Errors
    /// [`CheckpointError::BadName`] for a name signed notes refuse; [`CheckpointError::Random`].
    pub fn generate(name: &str) -> Result<Self, CheckpointError> {
        check_name(name)?;
        let mut seed = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut seed)
            .map_err(|_| CheckpointError::Random("the system's randomness failed".into()))?;
        Self::from_seed(name, seed)
    }

    /// The key named `name` whose Ed25519 seed (private key) is `seed`.
    ///
    /// # Errors
    /// [`CheckpointError::BadName`] for a name signed notes refuse.
    pub fn from_seed(name: &str, seed: [u8; 32]) -> Result<Self, CheckpointError> {
        check_name(name)?;
        let pair = signature::Ed25519KeyPair::from_seed_unchecked(&seed).map_err(|e| {
            CheckpointError::BadKey {
                what: "signer key",
                why: format!("not an Ed25519 seed: {e}"),
            }
        })?;
        let public: [u8; 32] =
            pair.public_key()
                .as_ref()
                .try_into()
                .map_err(|_| CheckpointError::BadKey {
                    what: "signer key",
                    why: "its public key is not 32 bytes".into(),
                })?;
        let verifier = VerifierKey {
            name: name.to_string(),
            id: key_id(name, &public),
            public,
        };
        Ok(Self {
            verifier,
            seed,
            pair,
        })
    }

    /// Read `PRIVATE+KEY+<name>+<key id>+<base64(0x01 ‖ seed)>` (surrounding white space
    /// ignored).
    ///
    /// # Errors
    /// [`CheckpointError::BadKey`] or [`CheckpointError::BadName`] naming the rule.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let what = "signer key";
        let rest =
            text.trim()
                .strip_prefix(PRIVATE_PREFIX)
                .ok_or_else(|| CheckpointError::BadKey {
                    what,
                    why: format!("it does not start with `{PRIVATE_PREFIX}`"),
                })?;
        let (name, id, key) = split_key(what, rest)?;
        let key = Self::from_seed(&name, key_bytes(what, &key)?)?;
        if key.verifier.id != id {
            return Err(CheckpointError::BadKey {
                what,
                why: format!(
                    "its key id {} is not the id of its name and key ({})",
                    hex::encode(id),
                    key.verifier.id_hex()
                ),
            });
        }
        Ok(key)
    }

    /// The matching verifier key.
    pub fn verifier(&self) -> &VerifierKey {
        &self.verifier
    }

    /// The key's text form, `PRIVATE+KEY+…`.
    pub fn to_text(&self) -> String {
        let mut key = vec![ED25519];
        key.extend_from_slice(&self.seed);
        format!(
            "{PRIVATE_PREFIX}{}+{}+{}",
            self.verifier.name,
            self.verifier.id_hex(),
            base64().encode(key)
        )
    }

    /// `text` signed: the note `text ‖ "\n" ‖ "— " name " " base64(key id ‖ signature) "\n"`.
    ///
    /// # Errors
    /// [`CheckpointError::BadNote`] when `text` is empty, does not end in a newline or holds an
    /// empty line.
    pub fn sign_note(&self, text: &str) -> Result<String, CheckpointError> {
        check_text(text)?;
        let sig = self.pair.sign(text.as_bytes());
        let mut blob = self.verifier.id.to_vec();
        blob.extend_from_slice(sig.as_ref());
        Ok(format!(
            "{text}\n{SIGNATURE_PREFIX}{} {}\n",
            self.verifier.name,
            base64().encode(blob)
        ))
    }
}

/// `<name>+<8 hex>+<base64>` split, the name checked.
fn split_key(
    what: &'static str,
    text: &str,
) -> Result<(String, [u8; 4], Vec<u8>), CheckpointError> {
    let bad = |why: String| CheckpointError::BadKey { what, why };
    // Names hold no `+`; base64 may.
    let mut parts = text.splitn(3, '+');
    let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("it is not `<name>+<key id>+<key>`".into()));
    };
    check_name(name)?;
    let id: [u8; 4] = (id.len() == 8)
        .then(|| hex::decode(id).ok())
        .flatten()
        .and_then(|b| b.try_into().ok())
        .filter(|_| id.bytes().all(|b| !b.is_ascii_uppercase()))
        .ok_or_else(|| bad(format!("its key id `{id}` is not 8 lower-case hex digits")))?;
    let key = base64()
        .decode(key)
        .map_err(|e| bad(format!("its key is not base64: {e}")))?;
    Ok((name.to_string(), id, key))
}

/// The 32 key bytes after the Ed25519 algorithm byte.
fn key_bytes(what: &'static str, key: &[u8]) -> Result<[u8; 32], CheckpointError> {
    let bad = |why: String| CheckpointError::BadKey { what, why };
    match key.split_first() {
        Some((&ED25519, rest)) => rest
            .try_into()
            .map_err(|_| bad(format!("its Ed25519 key is {} bytes, not 32", rest.len()))),
        Some((alg, _)) => Err(bad(format!(
            "its algorithm byte is {alg:#04x}, not {ED25519:#04x} (Ed25519)"
        ))),
        None => Err(bad("its key is empty".into())),
    }
}

fn check_text(text: &str) -> Result<(), CheckpointError> {
    if text.is_empty() || !text.ends_with('\n') {
        return Err(CheckpointError::BadNote(
            "the text must end with a newline".into(),
        ));
    }
    if text.starts_with('\n') || text.contains("\n\n") {
        return Err(CheckpointError::BadNote(
            "the text must not hold an empty line".into(),
        ));
    }
    Ok(())
}

/// A tree head: the log's name, how many leaves, and the root over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The origin line: the signing key's name.
    pub origin: String,
    /// How many entries the tree holds.
    pub size: u64,
    /// The RFC 9162 root over them.
    pub root: Hash,
}

impl Checkpoint {
    /// The checkpoint body: `<origin>\n<size>\n<base64 root>\n`.
    pub fn body(&self) -> String {
        format!("{}\n{}\n{}\n", self.origin, self.size, b64(&self.root))
    }

    /// Read a checkpoint body (extension lines after the root are allowed and ignored).
    ///
    /// # Errors
    /// [`CheckpointError::BadCheckpoint`] naming the line and the rule.
    pub fn parse_body(text: &str) -> Result<Self, CheckpointError> {
        let bad = |why: String| CheckpointError::BadCheckpoint(why);
        let mut lines = text.split_terminator('\n');
        let origin = lines
            .next()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| bad("line 1 (origin) is empty".into()))?;
        let size_line = lines
            .next()
            .ok_or_else(|| bad("line 2 (tree size) is missing".into()))?;
        let size = (!size_line.is_empty()
            && size_line.bytes().all(|b| b.is_ascii_digit())
            && (size_line == "0" || !size_line.starts_with('0')))
        .then(|| size_line.parse::<u64>().ok())
        .flatten()
        .ok_or_else(|| {
            bad(format!(
                "line 2 (tree size) `{size_line}` is not a decimal number without leading zeros"
            ))
        })?;
        let root_line = lines
            .next()
            .ok_or_else(|| bad("line 3 (root hash) is missing".into()))?;
        let root = hash_from_b64(root_line).map_err(|e| bad(format!("line 3 (root hash): {e}")))?;
        Ok(Self {
            origin: origin.to_string(),
            size,
            root,
        })
    }

    /// The signed note of this checkpoint.
    ///
    /// # Errors
    /// [`CheckpointError::WrongOrigin`] when the origin is not the key's name.
    pub fn sign(&self, key: &SignerKey) -> Result<String, CheckpointError> {
        if self.origin != key.verifier.name {
            return Err(CheckpointError::WrongOrigin {
                origin: self.origin.clone(),
                name: key.verifier.name.clone(),
            });
        }
        key.sign_note(&self.body())
    }
}

/// Open a signed checkpoint: its signature by `key` verified, its origin `key`'s name.
///
/// # Errors
/// Why the note is refused.
pub fn open(note: &str, key: &VerifierKey) -> Result<Checkpoint, CheckpointError> {
    let checkpoint = Checkpoint::parse_body(open_note(note, key)?)?;
    if checkpoint.origin != key.name {
        return Err(CheckpointError::WrongOrigin {
            origin: checkpoint.origin,
            name: key.name.clone(),
        });
    }
    Ok(checkpoint)
}

/// Open a signed note: its text, once a signature by `key` verifies.
///
/// Signature lines by other keys are ignored; one by `key` (same name and key id) that does not
/// verify rejects the note.
///
/// # Errors
/// Why the note is refused.
pub fn open_note<'a>(note: &'a str, key: &VerifierKey) -> Result<&'a str, CheckpointError> {
    let split = note
        .rfind("\n\n")
        .ok_or_else(|| CheckpointError::BadNote("no empty line before the signatures".into()))?;
    let (text, sigs) = (&note[..=split], &note[split + 2..]);
    check_text(text)?;
    if sigs.is_empty() || !sigs.ends_with('\n') {
        return Err(CheckpointError::BadNote(
            "the signature lines must end with a newline".into(),
        ));
    }
    let mut signed = false;
    for (n, line) in sigs.split_terminator('\n').enumerate() {
        let bad = |why: &str| CheckpointError::BadNote(format!("signature line {}: {why}", n + 1));
        let rest = line
            .strip_prefix(SIGNATURE_PREFIX)
            .ok_or_else(|| bad("it does not start with `— `"))?;
        let (name, blob) = rest
            .split_once(' ')
            .ok_or_else(|| bad("it is not `— <name> <signature>`"))?;
        let blob = base64()
            .decode(blob)
            .map_err(|_| bad("its signature is not base64"))?;
        if blob.len() < 5 {
            return Err(bad("its signature is too short"));
        }
        if name != key.name || blob[..4] != key.id {
            continue;
        }
        if !key.verifies(text.as_bytes(), &blob[4..]) {
            return Err(CheckpointError::BadSignature(format!(
                "{}+{}",
                key.name,
                key.id_hex()
            )));
        }
        signed = true;
    }
    if !signed {
        return Err(CheckpointError::Unsigned(format!(
            "{}+{}",
            key.name,
            key.id_hex()
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests;
