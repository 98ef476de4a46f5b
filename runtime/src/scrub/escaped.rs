//! Matching one secret however a tool escaped it, character by character.
//!
//! Each character of the secret may appear in the text as itself or escaped, independently of
//! the others, so that any subset of the secret's characters can be encoded without the
//! matcher enumerating subsets:
//!
//! - each UTF-8 byte as itself, as `%XX` (percent- or path-encoding, either hex case) or as
//!   `\xXX` (a byte-string escape);
//! - a space as `+` (form encoding);
//! - the character as a JSON escape: `\uXXXX` (either hex case, a surrogate pair beyond the
//!   BMP), or `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`;
//! - when the secret is long enough to fold ([`super::MIN_ENCODED_LEN`]), letters in either
//!   case, literal or decoded (ASCII letters, and non-ASCII letters whose other case is one
//!   character).
//!
//! The matcher is run from candidate starts only (see [`Escaped::candidates`]): a place where
//! an occurrence holding at least one escape can begin. Occurrences without any escape are
//! found by the scrubber's Aho-Corasick automata.

use std::collections::HashSet;

/// The bytes that begin an escape (`+` only stands for a space).
pub(super) const INTRODUCERS: [u8; 3] = [b'%', b'\\', b'+'];

/// One secret, ready to be matched in its escaped forms.
#[derive(Debug, Clone)]
pub(super) struct Escaped {
    /// The secret's characters, each with its other cases when folding (a non-ASCII letter
    /// whose upper or lower case is one character).
    chars: Vec<Vec<char>>,
    /// The secret's bytes (for the literal prefix of a candidate).
    bytes: Vec<u8>,
    /// For each byte (lower-cased when folding), its offsets in the secret.
    offsets: Vec<Vec<u32>>,
    /// Whether ASCII letters match in either case.
    fold: bool,
    /// Whether a character of the secret is itself an introducer, so that its literal and
    /// escaped readings can both apply at one place (the match then explores both).
    ambiguous: bool,
}

impl Escaped {
    /// The matcher for `secret` (non-empty), folding ASCII case if `fold`.
    pub(super) fn new(secret: &str, fold: bool) -> Self {
        let cases = |c: char| {
            let mut all = vec![c];
            if fold && !c.is_ascii() {
                let single = |s: String| {
                    let mut chars = s.chars();
                    chars.next().filter(|_| chars.next().is_none())
                };
                let others = [c.to_uppercase().collect(), c.to_lowercase().collect()];
                for other in others.into_iter().filter_map(single) {
                    if !all.contains(&other) {
                        all.push(other);
                    }
                }
            }
            all
        };
        let mut offsets = vec![Vec::new(); 256];
        for (k, &b) in secret.as_bytes().iter().enumerate() {
            let key = if fold { b.to_ascii_lowercase() } else { b };
            offsets[usize::from(key)].push(k as u32);
        }
        Self {
            chars: secret.chars().map(cases).collect(),
            bytes: secret.as_bytes().to_vec(),
            offsets,
            fold,
            ambiguous: secret
                .bytes()
                .any(|b| INTRODUCERS.contains(&b) || b == b' '),
        }
    }

    /// The longest text any escaped form of the secret takes, in bytes.
    pub(super) fn max_len(&self) -> usize {
        self.chars
            .iter()
            .map(|cases| {
                cases
                    .iter()
                    .map(|c| {
                        let bytes = 4 * c.len_utf8();
                        let json = if c.len_utf16() == 2 { 12 } else { 6 };
                        bytes.max(json)
                    })
                    .max()
                    .unwrap_or(0)
            })
            .sum()
    }

    /// Starts of an occurrence whose first escape is the introducer at `at`, which stands for
    /// a character beginning with the byte `lead` ([`lead_byte`]), pushed to `out`: the places
    /// `p = at - k` for each offset `k` of that byte in the secret where the text from `p` to
    /// `at` is the secret's first `k` bytes, literally.
    pub(super) fn candidates(&self, text: &[u8], at: usize, lead: u8, out: &mut Vec<usize>) {
        let key = if self.fold {
            lead.to_ascii_lowercase()
        } else {
            lead
        };
        for &k in &self.offsets[usize::from(key)] {
            let k = k as usize;
            if let Some(p) = at.checked_sub(k) {
                if eq(&text[p..at], &self.bytes[..k], self.fold) {
                    out.push(p);
                }
            }
        }
    }

    /// The end of the longest occurrence of the secret starting at `start`, if any.
    pub(super) fn match_at(&self, text: &[u8], start: usize) -> Option<usize> {
        if !self.ambiguous {
            // No character of the secret is an introducer: at each place at most one form of
            // a character applies (they begin with different bytes), so there is one path.
            let mut q = start;
            for cases in &self.chars {
                let mut ends = Ends::default();
                for &c in cases {
                    self.char_ends(c, text, q, &mut ends);
                }
                q = ends.as_slice().iter().copied().max()?;
            }
            return Some(q);
        }
        let mut best = None;
        let mut stack = vec![(0usize, start)];
        let mut seen = HashSet::new();
        while let Some((i, q)) = stack.pop() {
            if i == self.chars.len() {
                best = best.max(Some(q));
                continue;
            }
            if self.ambiguous && !seen.insert((i, q)) {
                continue;
            }
            let mut ends = Ends::default();
            for &c in &self.chars[i] {
                self.char_ends(c, text, q, &mut ends);
            }
            for &end in ends.as_slice() {
                stack.push((i + 1, end));
            }
        }
        best
    }

    /// Where `c`, written at `q` in any of its forms, ends.
    fn char_ends(&self, c: char, text: &[u8], q: usize, ends: &mut Ends) {
        let mut buf = [0u8; 4];
        let bytes = c.encode_utf8(&mut buf).as_bytes();
        if let [b] = bytes {
            // One byte: literal and escaped readings may both apply (`%` read as `%` or as
            // the start of `%25`).
            for end in self.byte_ends(*b, text, q).into_iter().flatten() {
                ends.push(end);
            }
        } else {
            // Every byte of a multi-byte character is a non-ASCII byte, read one way only.
            let mut p = q;
            let whole = bytes.iter().all(|&b| {
                match self.byte_ends(b, text, p).into_iter().flatten().next() {
                    Some(end) => {
                        p = end;
                        true
                    }
                    None => false,
                }
            });
            if whole {
                ends.push(p);
            }
        }
        if c == ' ' && text.get(q) == Some(&b'+') {
            ends.push(q + 1);
        }
        if text.get(q) == Some(&b'\\') {
            if let Some(end) = self.json_end(c, text, q) {
                ends.push(end);
            }
        }
    }

    /// Where the byte `b` ends at `q`: literal, `%XX`, `\xXX`.
    fn byte_ends(&self, b: u8, text: &[u8], q: usize) -> [Option<usize>; 2] {
        let literal = text
            .get(q)
            .is_some_and(|&t| eq_byte(t, b, self.fold))
            .then_some(q + 1);
        let escaped = match text.get(q..) {
            Some([b'%', h, l, ..]) => hex_byte(*h, *l)
                .is_some_and(|d| eq_byte(d, b, self.fold))
                .then_some(q + 3),
            Some([b'\\', b'x', h, l, ..]) => hex_byte(*h, *l)
                .is_some_and(|d| eq_byte(d, b, self.fold))
                .then_some(q + 4),
            _ => None,
        };
        [literal, escaped]
    }

    /// Where a JSON escape of `c` at `q` ends.
    fn json_end(&self, c: char, text: &[u8], q: usize) -> Option<usize> {
        let short = match c {
            '"' => Some(b'"'),
            '\\' => Some(b'\\'),
            '/' => Some(b'/'),
            '\u{8}' => Some(b'b'),
            '\u{c}' => Some(b'f'),
            '\n' => Some(b'n'),
            '\r' => Some(b'r'),
            '\t' => Some(b't'),
            _ => None,
        };
        if short.is_some() && text.get(q + 1).copied() == short {
            return Some(q + 2);
        }
        let mut units = [0u16; 2];
        let mut p = q;
        for &unit in c.encode_utf16(&mut units).iter() {
            let digits = match text.get(p..p + 6) {
                Some([b'\\', b'u', d @ ..]) => d,
                _ => return None,
            };
            let value = hex_value(digits)?;
            let matches = value == u32::from(unit)
                || (self.fold
                    && char::from_u32(value)
                        .is_some_and(|v| v.is_ascii() && v.eq_ignore_ascii_case(&c)));
            if !matches {
                return None;
            }
            p += 6;
        }
        Some(p)
    }
}

/// The first byte of what the escape at `at` stands for (`%XX`, `\\xXX`: that byte; `\\uXXXX`
/// and the short JSON escapes: the character's first UTF-8 byte; `+`: a space), if `at` holds
/// one.
pub(super) fn lead_byte(text: &[u8], at: usize) -> Option<u8> {
    match text.get(at..)? {
        [b'%', h, l, ..] | [b'\\', b'x', h, l, ..] => hex_byte(*h, *l),
        [b'+', ..] => Some(b' '),
        [b'\\', b'u', d @ ..] => {
            let unit = hex_value(d.get(..4)?)?;
            let c = match unit {
                0xd800..=0xdbff => {
                    // A high surrogate: the character is the pair's.
                    let low = match d.get(4..10)? {
                        [b'\\', b'u', l @ ..] => hex_value(l)?,
                        _ => return None,
                    };
                    char::decode_utf16([unit as u16, low as u16]).next()?.ok()?
                }
                u => char::from_u32(u)?,
            };
            let mut buf = [0u8; 4];
            c.encode_utf8(&mut buf);
            Some(buf[0])
        }
        [b'\\', e, ..] => match e {
            b'"' | b'\\' | b'/' => Some(*e),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            _ => None,
        },
        _ => None,
    }
}

/// The distinct ends of one character's forms (literal, `%XX` or `\xXX`, `+`, a JSON escape,
/// in each of its cases).
#[derive(Debug, Default)]
struct Ends {
    ends: [usize; 8],
    len: usize,
}

impl Ends {
    fn push(&mut self, end: usize) {
        if self.len < self.ends.len() && !self.as_slice().contains(&end) {
            self.ends[self.len] = end;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[usize] {
        &self.ends[..self.len]
    }
}

fn eq_byte(a: u8, b: u8, fold: bool) -> bool {
    a == b || (fold && a.eq_ignore_ascii_case(&b))
}

fn eq(a: &[u8], b: &[u8], fold: bool) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| eq_byte(x, y, fold))
}

fn hex_digit(d: u8) -> Option<u8> {
    (d as char).to_digit(16).map(|v| v as u8)
}

/// The value of a run of hex digits (at most eight).
fn hex_value(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| {
        hex_digit(d).map(|v| acc * 16 + u32::from(v))
    })
}

fn hex_byte(h: u8, l: u8) -> Option<u8> {
    Some(hex_digit(h)? * 16 + hex_digit(l)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(secret: &str, fold: bool, text: &str) -> Option<usize> {
        let m = Escaped::new(secret, fold);
        let t = text.as_bytes();
        (0..t.len())
            .filter(|&i| INTRODUCERS.contains(&t[i]))
            .flat_map(|i| {
                let mut starts = Vec::new();
                if let Some(lead) = lead_byte(t, i) {
                    m.candidates(t, i, lead, &mut starts);
                }
                starts
            })
            .find_map(|p| m.match_at(t, p).map(|e| e - p))
    }

    #[test]
    fn any_subset_of_bytes_may_be_escaped() {
        let s = "a+b/c=d e";
        assert_eq!(found(s, false, "x a%2Bb/c%3dd+e y"), Some(13));
        assert_eq!(found(s, false, "a%2bb%2Fc%3Dd%20e"), Some(17));
        assert_eq!(found(s, false, "a\\x2bb/c=d e"), Some(12));
        assert_eq!(found(s, false, "a\\u002bb\\/c=d e"), Some(15));
        assert_eq!(found(s, false, "a%2Bb/c=d e"), Some(11));
        assert_eq!(found(s, false, "a%2Cb/c=d e"), None);
    }

    #[test]
    fn a_literal_introducer_and_its_escape_are_both_read() {
        let s = "ab%41c";
        // The secret's own `%` literal, its next character escaped.
        assert_eq!(found(s, false, "ab%%341c"), Some(8));
        assert_eq!(found(s, false, "ab%41%63"), Some(8));
        assert_eq!(found(s, false, "ab%2541c"), Some(8));
    }

    #[test]
    fn case_folds_only_when_asked() {
        assert_eq!(found("secretvalue", true, "SECRET%56ALUE"), Some(13));
        assert_eq!(found("secretvalue", true, "secret%76alue"), Some(13));
        assert_eq!(found("short", false, "SHOR%54"), None);
        assert_eq!(found("short", false, "shor%74"), Some(7));
    }

    #[test]
    fn multi_byte_characters_escape_per_byte_or_as_json() {
        let s = "k€y";
        assert_eq!(found(s, false, "k%E2%82%ACy"), Some(11));
        assert_eq!(found(s, false, "k%e2%82%acy"), Some(11));
        assert_eq!(found(s, false, "k\\u20ACy"), Some(8));
        let s = "x😀y";
        assert_eq!(found(s, false, "x\\ud83d\\ude00y"), Some(14));
    }
}
