//! The ids the runtime makes itself: call ids, idempotency keys and SOP run ids, all of one kind.

/// A fresh id: 128 random bits as 32 lower-case hex digits.
pub(crate) fn random_id() -> String {
    let bytes: [u8; 16] = rand::random();
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::random_id;

    #[test]
    fn ids_are_32_hex_digits_and_differ() {
        let (a, b) = (random_id(), random_id());
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
        assert_ne!(a, b);
    }
}
