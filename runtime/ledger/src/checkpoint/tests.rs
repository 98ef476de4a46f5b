//! Keys and notes against published vectors (Go's `golang.org/x/mod/sumdb/note` tests, and an
//! independent implementation's example), and checkpoints signed, opened and refused.

use super::*;

const GO_SIGNER: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const GO_VERIFIER: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const GO_TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                       then you don't know what your problem is.\n";
const GO_NOTE: &str = "If you think cryptography is the answer to your problem,\n\
                       then you don't know what your problem is.\n\
                       \n\
                       \u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

#[test]
fn keys_and_signatures_match_the_published_vectors() {
    let signer = SignerKey::parse(GO_SIGNER).unwrap();
    assert_eq!(signer.to_text(), GO_SIGNER);
    assert_eq!(signer.verifier().to_string(), GO_VERIFIER);
    assert_eq!(VerifierKey::parse(GO_VERIFIER).unwrap(), *signer.verifier());
    // Ed25519 is deterministic: the same note, byte for byte.
    assert_eq!(signer.sign_note(GO_TEXT).unwrap(), GO_NOTE);
    assert_eq!(open_note(GO_NOTE, signer.verifier()).unwrap(), GO_TEXT);

    let other =
        VerifierKey::parse("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k")
            .unwrap();
    let note = "This is an example message.\n\n\u{2014} example.com/foo \
                Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
    assert_eq!(
        open_note(note, &other).unwrap(),
        "This is an example message.\n"
    );
    // Each key ignores the other's signature line.
    assert!(matches!(
        open_note(note, signer.verifier()),
        Err(CheckpointError::Unsigned(_))
    ));
}

#[test]
fn a_checkpoint_round_trips_with_a_name_holding_slashes() {
    let key = SignerKey::generate("example.com/escepine/ledger").unwrap();
    let again = SignerKey::parse(&format!("{}\n", key.to_text())).unwrap();
    assert_eq!(again.verifier(), key.verifier());
    let cp = Checkpoint {
        origin: "example.com/escepine/ledger".into(),
        size: 10,
        root: crate::merkle::leaf_hash(b"x"),
    };
    let note = cp.sign(&key).unwrap();
    assert!(note.starts_with(&format!(
        "example.com/escepine/ledger\n10\n{}\n\n\u{2014} example.com/escepine/ledger ",
        b64(&cp.root)
    )));
    let verifier = VerifierKey::parse(&key.verifier().to_string()).unwrap();
    assert_eq!(open(&note, &verifier).unwrap(), cp);
}

#[test]
fn altered_forged_or_malformed_checkpoints_are_refused() {
    let key = SignerKey::generate("log/a").unwrap();
    let cp = Checkpoint {
        origin: "log/a".into(),
        size: 3,
        root: [7; 32],
    };
    let note = cp.sign(&key).unwrap();
    let v = key.verifier();
    // The size changed after signing.
    let altered = note.replacen("\n3\n", "\n4\n", 1);
    assert!(matches!(
        open(&altered, v),
        Err(CheckpointError::BadSignature(_))
    ));
    // Signed by another key of the same name.
    let forger = SignerKey::generate("log/a").unwrap();
    assert!(matches!(
        open(&cp.sign(&forger).unwrap(), v),
        Err(CheckpointError::Unsigned(_))
    ));
    // Another key's origin.
    let other = SignerKey::generate("log/b").unwrap();
    assert!(matches!(
        cp.sign(&other),
        Err(CheckpointError::WrongOrigin { .. })
    ));
    let foreign = other.sign_note(&cp.body()).unwrap();
    assert!(matches!(
        open(&foreign, other.verifier()),
        Err(CheckpointError::WrongOrigin { .. })
    ));
    // Not a note, not a checkpoint.
    assert!(matches!(
        open("log/a\n3\n", v),
        Err(CheckpointError::BadNote(_))
    ));
    let e = open(&key.sign_note("log/a\n03\nAAAA\n").unwrap(), v).unwrap_err();
    assert!(e.to_string().contains("line 2 (tree size)"), "{e}");
    let e = open(&key.sign_note("log/a\n3\nAAAA\n").unwrap(), v).unwrap_err();
    assert!(e.to_string().contains("line 3 (root hash)"), "{e}");
}

#[test]
fn bad_keys_name_the_rule() {
    for (text, expect) in [
        ("", "not `<name>+<key id>+<key>`"),
        ("a b+c74f20a3+ARpc", "white space"),
        (
            "PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "8 lower-case hex",
        ),
        (
            "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "is not the id",
        ),
        (
            "PeterNeumann+c74f20a3+Ahpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "algorithm byte",
        ),
        ("PeterNeumann+c74f20a3+ARpc2QcU", "not 32"),
        ("PeterNeumann+c74f20a3+!!", "not base64"),
    ] {
        let e = VerifierKey::parse(text).unwrap_err().to_string();
        assert!(e.contains(expect), "{text}: {e}");
    }
    let e = SignerKey::parse(GO_VERIFIER).unwrap_err().to_string();
    assert!(e.contains("PRIVATE+KEY+"), "{e}");
    assert!(SignerKey::generate("a+b").is_err());
    assert!(SignerKey::generate("").is_err());
}
