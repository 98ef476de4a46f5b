//! Scrubbing secret values from everything recorded, logged, traced or returned.
//!
//! # What is matched
//!
//! A [`Scrubber`] replaces with [`REDACTED`] every occurrence of its secrets in the forms a tool
//! can plausibly print them in:
//!
//! - **as is**, always, whatever the secret's length;
//! - **escaped, any subset of characters**: percent- or path-encoded (`%XX`, either hex case),
//!   form-encoded (`+` for a space), byte-escaped (`\xXX`) or JSON-escaped (`\uXXXX`, `\"`,
//!   `\/`, …), each character independently (see the `escaped` module);
//! - from [`MIN_ENCODED_LEN`] bytes on, also **case-changed** (ASCII letters upper-, lower- or
//!   mixed-case, literal or escaped; other letters upper- or lower-cased, the whole secret
//!   literally, each character where escaped), **hex** (either case) and **base64 /
//!   base64url** at each of the three alignments inside a longer stream, padded or not (the
//!   stable core of each alignment, widened over the characters that mix the secret's bits
//!   with its neighbours': see the `binary` module).
//!
//! Below [`MIN_ENCODED_LEN`] a hex or base64 core is a handful of characters that ordinary
//! encoded text contains by chance, and a case-folded match would redact ordinary words; a short
//! secret is matched as itself and in the escaped forms that decode to exactly it.
//!
//! Out of reach: a secret the tool transforms otherwise (encrypts, reverses, splits across
//! lines, wraps base64 at a line length, compresses). Scrubbing guards against plausible
//! encodings, not against a tool set on exfiltrating what it was given.
//!
//! # How
//!
//! Two Aho-Corasick automata find the fixed forms, overlapping matches included: one in the
//! ASCII-lower-cased text (the folded secrets, their hex), one in the text as is (the short
//! secrets, the base64 cores). Escaped occurrences are found from the escape introducers only
//! (`%`, `\`, and `+` when a secret holds a space): the first escape of an occurrence is
//! preceded by a literal prefix of the secret, so each introducer yields a few candidate starts
//! (one for each place in the secret of the byte the escape stands for), each tried by the
//! character-by-character matcher of the `escaped` module. Every match is a byte span; overlapping
//! spans are merged and each merged span becomes one marker, so no part of any secret is left
//! beside another's.
//!
//! # Bounds
//!
//! Text kept to a bound is scrubbed first and cut after ([`Scrubber::text_within`]), so that
//! no part of a secret straddling the bound survives: the reader keeps the bound plus
//! [`Scrubber::margin`] bytes, the longest form of any secret, so that every occurrence that
//! starts before the bound is seen whole.

mod binary;
mod escaped;

use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, Input, MatchKind};
use serde_json::Value;

use escaped::{Escaped, INTRODUCERS};

/// What replaces a secret value.
pub const REDACTED: &str = "[REDACTED]";

/// Secrets shorter than this many bytes are matched only as themselves and escaped (see the
/// [module documentation](self)); from this length on, also case-changed, hex and base64.
pub const MIN_ENCODED_LEN: usize = 8;

impl escepine_sandbox::io::Scrub for Scrubber {
    fn margin(&self) -> usize {
        Scrubber::margin(self)
    }

    fn scrub_within(&self, text: &str, limit: usize) -> (String, usize) {
        let within = self.text_within(text, limit);
        (within.text, within.dropped)
    }
}

/// Replaces every occurrence of the secret values it holds, in their plausible encodings (see
/// the [module documentation](self)). Cloning is cheap.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    inner: Option<Arc<Matchers>>,
}

/// The matchers of a non-empty scrubber.
#[derive(Debug)]
struct Matchers {
    /// Searched in the ASCII-lower-cased text: folded secrets and their hex forms, lower-cased.
    folded: Option<AhoCorasick>,
    /// Exact: short secrets and base64 cores.
    exact: Option<AhoCorasick>,
    /// Per pattern of `exact`: how far a match is widened (`(lead, trail)`).
    widen: Vec<(bool, bool)>,
    /// The escaped-form matcher of each secret.
    escaped: Vec<Escaped>,
    /// Whether a secret holds a space (so that `+`, its form encoding, introduces an escape).
    spaces: bool,
    /// [`Scrubber::margin`].
    margin: usize,
}

/// Scrubbed text cut to a bound ([`Scrubber::text_within`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Within {
    /// The scrubbed text, at most the bound long.
    pub text: String,
    /// Bytes of the input not represented in `text` (0: nothing was cut).
    pub dropped: usize,
}

impl Scrubber {
    /// A scrubber for these secret values (empty values are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let mut secrets: Vec<&str> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        secrets.sort_unstable();
        secrets.dedup();
        if secrets.is_empty() {
            return Self::default();
        }
        let mut folded = Vec::new();
        let mut exact = Vec::new();
        let mut widen = Vec::new();
        let mut escaped = Vec::new();
        let mut margin = 0;
        for s in &secrets {
            let long = s.len() >= MIN_ENCODED_LEN;
            let e = Escaped::new(s, long);
            margin = margin.max(e.max_len());
            escaped.push(e);
            if long {
                folded.push(s.to_ascii_lowercase());
                // ASCII case is folded by the automaton; other letters, upper- or lower-cased
                // as a whole, are patterns of their own.
                for cased in [s.to_uppercase(), s.to_lowercase()] {
                    if !cased.eq_ignore_ascii_case(s) {
                        margin = margin.max(cased.len());
                        folded.push(cased.to_ascii_lowercase());
                    }
                }
                folded.push(binary::hex(s.as_bytes()));
                margin = margin.max(2 * s.len());
                for core in binary::base64_cores(s.as_bytes()) {
                    exact.push(core.text);
                    widen.push((core.lead, core.trail));
                }
                margin = margin.max(4 * s.len().div_ceil(3) + 4);
            } else {
                exact.push(s.to_string());
                widen.push((false, false));
            }
        }
        let build = |patterns: &[String]| {
            (!patterns.is_empty())
                .then(|| {
                    AhoCorasickBuilder::new()
                        .match_kind(MatchKind::LeftmostLongest)
                        .kind(Some(AhoCorasickKind::ContiguousNFA))
                        .build(patterns)
                        .ok()
                })
                .flatten()
        };
        let spaces = secrets.iter().any(|s| s.contains(' '));
        let matchers = Matchers {
            folded: build(&folded),
            exact: build(&exact),
            widen,
            escaped,
            spaces,
            margin,
        };
        Self {
            inner: Some(Arc::new(matchers)),
        }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// The longest form of any secret, in bytes: a reader that keeps text to a bound keeps this
    /// much more, so that an occurrence starting before the bound is seen whole.
    pub fn margin(&self) -> usize {
        self.inner.as_ref().map_or(0, |m| m.margin)
    }

    /// `text` with every secret replaced.
    pub fn text(&self, text: &str) -> String {
        let spans = self.spans(text);
        if spans.is_empty() {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut pos = 0;
        for (start, end) in spans {
            out.push_str(&text[pos..start]);
            out.push_str(REDACTED);
            pos = end;
        }
        out.push_str(&text[pos..]);
        out
    }

    /// Whether `text` holds a secret.
    pub fn finds(&self, text: &str) -> bool {
        !self.spans(text).is_empty()
    }

    /// `text` scrubbed, then cut to at most `limit` bytes: nothing from `limit` on in the input
    /// is kept, an occurrence that starts before `limit` is replaced whole (or dropped whole
    /// when its marker does not fit), and the cut falls on a character boundary, never inside a
    /// marker. `text` should hold [`margin`](Self::margin) bytes beyond `limit` when it has
    /// more, so that an occurrence straddling `limit` is seen whole.
    pub fn text_within(&self, text: &str, limit: usize) -> Within {
        let mut out = String::with_capacity(limit.min(text.len()));
        let mut pos = 0;
        let mut cut = None;
        let spans = self.spans(text);
        for &(start, end) in spans
            .iter()
            .chain(std::iter::once(&(text.len(), text.len())))
        {
            let segment = &text[pos..start];
            let room = limit
                .saturating_sub(out.len())
                .min(limit.saturating_sub(pos));
            if segment.len() > room {
                let keep = floor_char_boundary(segment, room);
                out.push_str(&segment[..keep]);
                cut = Some(pos + keep);
                break;
            }
            out.push_str(segment);
            if start == text.len() {
                break;
            }
            if out.len() + REDACTED.len() > limit {
                cut = Some(start);
                break;
            }
            out.push_str(REDACTED);
            pos = end;
        }
        Within {
            text: out,
            dropped: cut.map_or(0, |c| text.len() - c),
        }
    }

    /// Scrub every string (and object key) of a JSON value in place.
    pub fn value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        match v {
            Value::String(s) if self.finds(s) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                let dirty: Vec<String> = map.keys().filter(|k| self.finds(k)).cloned().collect();
                for k in dirty {
                    if let Some(val) = map.remove(&k) {
                        map.insert(self.text(&k), val);
                    }
                }
                map.values_mut().for_each(|i| self.value(i));
            }
            _ => {}
        }
    }

    /// The spans of `text` holding a secret, sorted, merged where they overlap, on character
    /// boundaries.
    fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        let Some(m) = &self.inner else {
            return Vec::new();
        };
        let bytes = text.as_bytes();
        let mut spans = Vec::new();
        if let Some(ac) = &m.folded {
            // Lower-cased text against lower-cased patterns: the same spans as an ASCII
            // case-insensitive search, at the speed of an exact one (its prefilter applies).
            let lower = bytes.to_ascii_lowercase();
            for_each_match(ac, &lower, |h| spans.push((h.start(), h.end())));
        }
        if let Some(ac) = &m.exact {
            for_each_match(ac, bytes, |h| {
                let (lead, trail) = m.widen[h.pattern().as_usize()];
                let start = match h.start() {
                    s if lead && s > 0 && binary::in_alphabet(bytes[s - 1]) => s - 1,
                    s => s,
                };
                let mut end = match h.end() {
                    e if trail && bytes.get(e).copied().is_some_and(binary::in_alphabet) => e + 1,
                    e => e,
                };
                // Padding right after is the stream's end: it goes with the secret.
                while trail && end < h.end() + 3 && bytes.get(end) == Some(&b'=') {
                    end += 1;
                }
                spans.push((start, end));
            });
        }
        let introducers: Box<dyn Iterator<Item = usize>> = match m.spaces {
            true => Box::new(memchr::memchr3_iter(
                INTRODUCERS[0],
                INTRODUCERS[1],
                INTRODUCERS[2],
                bytes,
            )),
            false => Box::new(memchr::memchr2_iter(INTRODUCERS[0], INTRODUCERS[1], bytes)),
        };
        let mut starts = Vec::new();
        for at in introducers {
            let Some(lead) = escaped::lead_byte(bytes, at) else {
                continue;
            };
            for e in &m.escaped {
                starts.clear();
                e.candidates(bytes, at, lead, &mut starts);
                for &start in &starts {
                    if let Some(end) = e.match_at(bytes, start) {
                        spans.push((start, end));
                    }
                }
            }
        }
        merge(text, spans)
    }
}

/// Every match of `ac` in `bytes`, overlapping ones included: each search resumes one byte
/// after the last match's start (a leftmost-longest match hides only matches inside it).
fn for_each_match(ac: &AhoCorasick, bytes: &[u8], mut found: impl FnMut(aho_corasick::Match)) {
    let mut at = 0;
    while at < bytes.len() {
        match ac.find(Input::new(bytes).span(at..bytes.len())) {
            Some(h) => {
                at = h.start() + 1;
                found(h);
            }
            None => break,
        }
    }
}

/// Sort and merge overlapping spans, widened to character boundaries.
fn merge(text: &str, mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        let start = floor_char_boundary(text, start);
        let end = ceil_char_boundary(text, end);
        match merged.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// The largest character boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary of `s` at or above `at`.
fn ceil_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The longest prefix of already scrubbed `text` of at most `limit` bytes that ends on a
/// character boundary and outside every [`REDACTED`] marker (for display bounds).
pub fn prefix(text: &str, limit: usize) -> &str {
    let mut cut = floor_char_boundary(text, limit);
    if let Some(open) = text[..cut].rfind(REDACTED.as_bytes()[0] as char) {
        let marker = text[open..].starts_with(REDACTED);
        if marker && open + REDACTED.len() > cut {
            cut = open;
        }
    }
    &text[..cut]
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use base64::Engine;
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const SECRET: &str = "sup3r-S3cret/V4lue+x=y";

    #[test]
    fn scrubs_text_values_keys_and_encodings() {
        let s = Scrubber::new(["s3cr3t/\"x", ""]);
        assert_eq!(s.text("a s3cr3t/\"x b"), "a [REDACTED] b");
        assert_eq!(s.text("json: s3cr3t/\\\"x"), "json: [REDACTED]");
        assert_eq!(s.text("q=s3cr3t%2F%22x"), "q=[REDACTED]");
        let mut v = json!({"k": ["s3cr3t/\"x"], "s3cr3t/\"x": 1});
        s.value(&mut v);
        assert_eq!(v, json!({"k": ["[REDACTED]"], "[REDACTED]": 1}));
        assert!(!v.to_string().contains("s3cr3t"));
    }

    #[test]
    fn every_plausible_form_is_scrubbed() {
        let s = Scrubber::new([SECRET]);
        let path: String = SECRET
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                b => format!("%{b:02X}"),
            })
            .collect();
        let forms = [
            SECRET.to_string(),
            SECRET.to_uppercase(),
            SECRET.to_lowercase(),
            path.clone(),
            path.to_lowercase(),
            url::form_urlencoded::byte_serialize(SECRET.as_bytes()).collect(),
            SECRET.bytes().map(|b| format!("%{b:02x}")).collect(),
            SECRET.bytes().map(|b| format!("\\x{b:02x}")).collect(),
            SECRET
                .chars()
                .map(|c| format!("\\u{:04X}", c as u32))
                .collect(),
            hex::encode(SECRET),
            hex::encode_upper(SECRET),
            STANDARD.encode(SECRET),
            STANDARD_NO_PAD.encode(SECRET),
            URL_SAFE.encode(SECRET),
            URL_SAFE_NO_PAD.encode(SECRET),
            STANDARD.encode(format!("x{SECRET}")),
            STANDARD.encode(format!("xy{SECRET}z")),
            URL_SAFE_NO_PAD.encode(format!("xyz{SECRET}zz")),
        ];
        for (i, form) in forms.iter().enumerate() {
            let out = s.text(&format!("before {form} after"));
            if i < forms.len() - 3 {
                assert_eq!(out, "before [REDACTED] after", "{form}");
            } else {
                // Embedded in a longer stream: the characters of the bytes around it stay
                // (the property test below checks that they hold none of the secret's bits).
                let left = out.replace(REDACTED, "").len() - "before  after".len();
                assert!(out.contains(REDACTED) && left <= 8, "{form}: {out}");
            }
        }
    }

    #[test]
    fn other_letters_change_case_as_a_whole_or_where_escaped() {
        let s = Scrubber::new(["Grüße aus Köln"]);
        assert_eq!(s.text("<GRÜSSE AUS KÖLN>"), "<[REDACTED]>");
        assert_eq!(s.text("<grüße aus köln>"), "<[REDACTED]>");
        assert_eq!(s.text("<GR%C3%9C%C3%9Fe+aus+k%C3%B6ln>"), "<[REDACTED]>");
    }

    #[test]
    fn short_secrets_are_matched_as_themselves_and_escaped_only() {
        let s = Scrubber::new(["k3y"]);
        assert_eq!(s.text("a k3y, k%33y"), "a [REDACTED], [REDACTED]");
        // Case-changed, hex and base64 forms of three bytes would be ordinary text.
        assert_eq!(s.text("K3Y 6b3379 azN5"), "K3Y 6b3379 azN5");
        let s = Scrubber::new(["x"]);
        assert_eq!(s.text("xox"), "[REDACTED]o[REDACTED]");
    }

    #[test]
    fn overlapping_secrets_leave_no_part_of_either() {
        let s = Scrubber::new(["abcdefgh", "efghijkl"]);
        assert_eq!(s.text("-abcdefghijkl-"), "-[REDACTED]-");
        assert_eq!(s.text("-abcd%65fghijkl-"), "-[REDACTED]-");
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let s = Scrubber::new([SECRET, "hunter2"]);
        let text = "GET /a%20b?q=x+y HTTP/1.1\n{\"k\": \"v\\n\\u0041\"} c:\\path\\x41 aGVsbG8=";
        assert_eq!(s.text(text), text);
    }

    #[test]
    fn a_cut_never_keeps_part_of_a_secret_nor_splits_a_marker_or_a_character() {
        let s = Scrubber::new([SECRET]);
        for straddle in 1..SECRET.len() {
            let text = format!("{}{SECRET}tail", "x".repeat(64 - straddle));
            let w = s.text_within(&text, 64);
            assert!(w.text.len() <= 64);
            assert!(w.dropped > 0);
            assert!(
                !w.text.contains(&SECRET[..straddle]),
                "{straddle}: {}",
                w.text
            );
            assert!(w.text == "x".repeat(64 - straddle) || w.text.ends_with(REDACTED));
        }
        // A marker that does not fit is dropped whole.
        let text = format!("{}{SECRET}", "x".repeat(60));
        assert_eq!(s.text_within(&text, 64).text, "x".repeat(60));
        // A multi-byte character at the bound is not split.
        let w = Scrubber::default().text_within("aé", 2);
        assert_eq!((w.text.as_str(), w.dropped), ("a", 2));
        // Nothing from the bound on is kept, even where scrubbing shortened the text.
        let text = format!("{SECRET}{SECRET}{}", "y".repeat(40));
        let w = s.text_within(&text, 50);
        assert_eq!(w.text, format!("{REDACTED}{REDACTED}{}", "y".repeat(6)));
        assert_eq!(
            s.text_within("short", 64),
            Within {
                text: "short".into(),
                dropped: 0
            }
        );
    }

    #[test]
    fn a_display_prefix_ends_outside_markers() {
        assert_eq!(prefix("ab [REDACTED] cd", 8), "ab ");
        assert_eq!(prefix("ab [REDACTED] cd", 13), "ab [REDACTED]");
        assert_eq!(prefix("aé", 2), "a");
    }

    /// Secrets of printable ASCII and a few multi-byte characters, never `|` (the filler).
    fn secret() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                8 => proptest::char::range(' ', '{'),
                1 => Just('é'),
                1 => Just('€'),
                1 => Just('😀'),
            ],
            MIN_ENCODED_LEN..40,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    proptest! {
        #[test]
        fn any_subset_escaped_in_any_case_is_scrubbed(
            secret in secret(),
            picks in proptest::collection::vec(0u8..6, 160),
        ) {
            let s = Scrubber::new([secret.as_str()]);
            let mut encoded = String::new();
            let mut i = 0;
            for c in secret.chars() {
                let mut buf = [0u8; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    let pick = picks[i % picks.len()];
                    i += 1;
                    match pick {
                        _ if !b.is_ascii() && pick < 3 => encoded.push_str(&format!("%{b:02X}")),
                        _ if !b.is_ascii() => encoded.push_str(&format!("%{b:02x}")),
                        0 => encoded.push_str(&format!("%{b:02X}")),
                        1 => encoded.push_str(&format!("%{b:02x}")),
                        2 => encoded.push(b.to_ascii_uppercase() as char),
                        3 => encoded.push(b.to_ascii_lowercase() as char),
                        4 if b == b' ' => encoded.push('+'),
                        4 => encoded.push_str(&format!("\\u{:04x}", b)),
                        _ => encoded.push(b as char),
                    }
                }
            }
            let text = format!("||{encoded}||");
            prop_assert_eq!(s.text(&text), "||[REDACTED]||", "{:?}", encoded);
        }

        #[test]
        fn base64_and_hex_at_any_offset_keep_no_bit_of_the_secret(
            secret in secret(),
            pre in proptest::collection::vec(any::<u8>(), 0..6),
            post in proptest::collection::vec(any::<u8>(), 0..6),
            variant in 0usize..6,
        ) {
            let s = Scrubber::new([secret.as_str()]);
            let mut stream = pre.clone();
            stream.extend_from_slice(secret.as_bytes());
            stream.extend_from_slice(&post);
            let (encoded, bits) = match variant {
                0 => (STANDARD.encode(&stream), 6),
                1 => (STANDARD_NO_PAD.encode(&stream), 6),
                2 => (URL_SAFE.encode(&stream), 6),
                3 => (URL_SAFE_NO_PAD.encode(&stream), 6),
                4 => (hex::encode(&stream), 4),
                _ => (hex::encode_upper(&stream), 4),
            };
            let out = s.text(&format!("|{encoded}|"));
            let out = out.trim_matches('|');
            let at = out.find(REDACTED);
            prop_assert!(at.is_some(), "{} not scrubbed", encoded);
            let at = at.unwrap_or_default();
            // What is left before the marker holds only bits of `pre`, what is left after it
            // only bits of `post`.
            let before = &out[..at];
            let after = out[at + REDACTED.len()..].trim_end_matches('=');
            let data = encoded.trim_end_matches('=').len();
            prop_assert!(encoded.starts_with(before));
            prop_assert!(before.len() * bits <= 8 * pre.len(), "{} -> {}", encoded, out);
            prop_assert!(
                (data - after.len()) * bits >= 8 * (pre.len() + secret.len()),
                "{} -> {}", encoded, out
            );
        }
    }
}
