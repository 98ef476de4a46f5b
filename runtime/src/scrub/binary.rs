//! The fixed binary-to-text forms of a secret: hex, and the stable cores of base64 and
//! base64url at each alignment.
//!
//! A secret embedded in a longer base64 stream starts at a byte offset of 0, 1 or 2 modulo 3.
//! At each offset, the base64 characters whose six bits all come from the secret are the same
//! whatever surrounds it: that run is the secret's **core** at that alignment. At most one
//! character before and one after the core mix the secret's bits with its neighbours'; a match
//! of the core is widened over them, so that none of the secret's bits are left. Padding (`=`)
//! carries none of them, so forms with and without padding match alike.

use base64::alphabet::{Alphabet, STANDARD, URL_SAFE};
use base64::engine::general_purpose::{GeneralPurpose, NO_PAD};
use base64::Engine;

/// A base64 core and how far a match of it is widened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Core {
    /// The core's characters.
    pub(super) text: String,
    /// Whether a character before the core holds some of the secret's bits.
    pub(super) lead: bool,
    /// Whether a character after the core holds some of the secret's bits.
    pub(super) trail: bool,
}

/// The lower-case hex form of `secret` (matched in either case).
pub(super) fn hex(secret: &[u8]) -> String {
    hex::encode(secret)
}

/// The cores of `secret` at the three alignments, in both alphabets (duplicates removed).
pub(super) fn base64_cores(secret: &[u8]) -> Vec<Core> {
    let mut cores: Vec<Core> = Vec::new();
    for alphabet in [&STANDARD, &URL_SAFE] {
        for offset in 0..3usize {
            let core = core(secret, offset, alphabet);
            if !core.text.is_empty() && !cores.iter().any(|c| c.text == core.text) {
                cores.push(core);
            }
        }
    }
    cores
}

fn core(secret: &[u8], offset: usize, alphabet: &Alphabet) -> Core {
    let mut bytes = vec![0u8; offset];
    bytes.extend_from_slice(secret);
    let encoded = GeneralPurpose::new(alphabet, NO_PAD).encode(&bytes);
    // Bits [8·offset, 8·(offset + n)) are the secret's; character k holds bits [6k, 6k + 6).
    let first_bit = 8 * offset;
    let end_bit = 8 * (offset + secret.len());
    let first = first_bit.div_ceil(6);
    let end = end_bit / 6;
    Core {
        text: encoded.get(first..end).unwrap_or_default().to_string(),
        lead: !first_bit.is_multiple_of(6),
        trail: !end_bit.is_multiple_of(6),
    }
}

/// Whether `b` belongs to the standard or the base64url alphabet.
pub(super) fn in_alphabet(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE_NO_PAD};

    use super::*;

    #[test]
    fn each_alignment_has_a_core_found_in_any_stream() {
        let secret = b"correct horse battery staple";
        let cores = base64_cores(secret);
        for pre in 0..6usize {
            for post in 0..4usize {
                let mut stream = vec![b'#'; pre];
                stream.extend_from_slice(secret);
                stream.extend(std::iter::repeat_n(b'!', post));
                for encoded in [B64.encode(&stream), URL_SAFE_NO_PAD.encode(&stream)] {
                    assert!(
                        cores.iter().any(|c| encoded.contains(&c.text)),
                        "{pre} {post}: {encoded}"
                    );
                }
            }
        }
    }

    #[test]
    fn cores_cover_all_but_the_mixed_characters() {
        let c = core(b"abcdef", 0, &STANDARD);
        assert_eq!(
            (c.text.as_str(), c.lead, c.trail),
            ("YWJjZGVm", false, false)
        );
        // 56 bits: nine whole characters, the tenth mixed.
        let c = core(b"abcdefg", 0, &STANDARD);
        assert_eq!(
            (c.text.as_str(), c.lead, c.trail),
            ("YWJjZGVmZ", false, true)
        );
        // Bits 8..56 of "\0abcdef": characters 2..9 are whole, 1 and 9 are mixed.
        let c = core(b"abcdef", 1, &STANDARD);
        assert!(c.lead && c.trail);
        assert_eq!(c.text.len(), 7);
    }
}
